"""What a log's numbers say about its collective: the rank count from busbw/algbw, and the op of
a table that does not name it (a table copied without its command line), from the bus-bandwidth
factors of the collective spec (busbw = algbw * factor(n) for n ranks).
"""

from __future__ import annotations

from clusterbench.families.collectives.spec import SPECS


def _factor(op: str, n: int) -> float:
    return SPECS[op].busbw_factor(n)

def ranks_from_ratio(op: str, algbw: float, busbw: float) -> int | None:
    """Solve busbw/algbw = factor(n) for n from two values printed with two decimals.

    None where the factor does not depend on n, or where the rounding of the printed values
    leaves n uncertain by more than a third of a rank (large n needs large bandwidths).
    """
    ratio = busbw / algbw
    dratio = ratio * (0.005 / algbw + 0.005 / busbw)
    if op == "all_reduce" and ratio < 2:
        n, dn = 2 / (2 - ratio), 2 / (2 - ratio) ** 2 * dratio
    elif op in SPECS and _factor(op, 4) != 1.0 and ratio < 1:
        n, dn = 1 / (1 - ratio), 1 / (1 - ratio) ** 2 * dratio
    else:
        return None
    if not n < 1 << 31:   # a ratio a hair from the limit (or nan): damaged values, no rank count
        return None
    rounded = round(n)
    return rounded if rounded >= 2 and dn < 0.3 and abs(n - rounded) < 0.3 else None


def infer_op(has_redop: bool, root: int, ratio: float | None, ranks: int | None) -> str | None:
    """Which collective a table shows, from its redop and root columns and busbw/algbw.

    Ambiguous cases (all_gather vs alltoall, gather vs scatter) return None: a wrong name would
    put the run in the wrong family.
    """
    if ratio is None:
        return None

    def closest(candidates: list[str]) -> str:
        if ranks:
            return min(candidates, key=lambda op: abs(_factor(op, ranks) - ratio))
        return candidates[0] if ratio >= 0.99 else candidates[1]

    if has_redop and root < 0:
        return closest(["all_reduce", "reduce_scatter"])
    if has_redop:
        return "reduce"
    if root >= 0:
        return "broadcast" if abs(ratio - 1.0) < 0.02 else None
    return "sendrecv" if abs(ratio - 1.0) < 0.02 and (ranks or 2) > 1 else None
