"""Checks the tools make themselves, applied to stored runs whatever profile ``validate`` uses.

Old nccl-tests (v2.0 .. v2.11) print each row's largest error instead of a count of wrong
elements and count a row as out of bounds when the error exceeds DeltaMaxValue(type) x
(ranks - 1) (``families.collectives.spec.error_tolerance``). A stored run holding such rows
fails this check, as it failed in nccl-tests; a run whose rank count is unknown is skipped,
saying why.
"""

from __future__ import annotations

from clusterbench.families.collectives.spec import MAX_ERROR, error_tolerance
from clusterbench.judge.profiles import Criterion
from clusterbench.judge.validate import FAIL, PASS, SKIPPED, Outcome
from clusterbench.records import Measurement, Run
from clusterbench.units import whole_number_or_none

SOURCE = "nccl-tests: DeltaMaxValue(type) x (ranks - 1)"


def _rank_count(value: object) -> int:
    """A rank count as params hold it (8, 8.0, "8" from JSON lines), or 0 where it is none: a
    word, a fraction, NaN, ``true`` (which int() takes for one rank: a tolerance of 0), ``٣``, or
    a count past any cluster (10**400 ranks made the tolerance an OverflowError)."""
    return whole_number_or_none(value, minimum=1) or 0


def tool_outcomes(loaded: list[tuple[Run, list[Measurement]]]) -> list[Outcome]:
    """One outcome per run with nccl-tests ``max_error`` records."""
    out = []
    for run, ms in loaded:
        errors = [m for m in ms if m.metric == MAX_ERROR.name]
        if not errors:
            continue
        criterion = Criterion(name=f"{errors[0].benchmark} max error within nccl-tests' tolerance",
                              benchmark=errors[0].benchmark, metric=MAX_ERROR.name, source=SOURCE, op="<=")
        worst = max(errors, key=lambda m: m.value)
        ranks = _rank_count(worst.params.get("ranks")) or _rank_count(run.ranks)
        tol = error_tolerance(str(worst.params.get("dtype", "")), ranks)
        runs = [run.id] if run.id is not None else []
        if tol is None:
            out.append(Outcome(criterion, SKIPPED, worst.value, matched=len(errors), runs=runs,
                               detail="the rank count is unknown, and the tolerance depends on it"))
            continue
        over = [m for m in errors
                if m.value > (error_tolerance(str(m.params.get("dtype", "")),
                                              _rank_count(m.params.get("ranks")) or ranks) or 0.0)]
        detail = (f"{len(over)} of {len(errors)} rows above it; worst at {worst.params.get('bytes')} B "
                  f"{worst.params.get('placement', '')}-place" if over else f"{len(errors)} rows")
        out.append(Outcome(criterion, FAIL if over else PASS, worst.value, f"<= {tol:g}", tol - worst.value,
                           None, "", len(errors), detail.strip(), runs))
    return out
