"""A sweep's plan as text (``sweep --print``, and the line a sweep starts with): its stages, the
rounds, launches and waves of a pass and the time projected for them, then every round.

Apart from ``sweep.report`` (a finished sweep's records and table): printing a plan needs the
plan alone, and ``sweep --print`` loads nothing else (no store, no analysis, no launcher).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterbench.sweep.plan import Plan, Stage

# how --print names each way of making a stage's rounds
_KINDS = {"single": "every node alone", "all": "all pairs, circle method", "ring": "ring",
          "random": "random disjoint pairs", "batch": "disjoint groups", "listed": "listed"}


def duration(seconds: float) -> str:
    """A projected time as a person reads it: 45 s, 12 min, 8.5 h, 182 days."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _stage_text(st: Stage) -> str:
    kind = _KINDS.get(st.kind, st.kind)
    if st.kind == "random":
        kind += f", {st.partners} partners a node, seed {st.seed}"
    elif st.kind == "batch":
        kind += f" of {st.batch}"
    sizes = ", ".join(f"{count:,} round{'s' if count != 1 else ''} of {size:,}" for size, count in st.round_sizes())
    return f"{st.stage} ({kind}): {sizes}"


def plan_summary(plan: Plan, test_seconds: float, passes: int = 1) -> str:
    """One line: the rounds, launches and waves of a pass, and the time projected for them."""
    per = "a whole round at once" if plan.parallel is None else f"at most {plan.parallel:,} launches at once"
    seconds = plan.projected_seconds({"single": test_seconds, "pair": test_seconds}) * passes
    again = f" x {passes} passes" if passes > 1 else ""
    return (f"plan: {plan.round_count():,} rounds, {plan.launches():,} launches, {plan.waves():,} waves "
            f"({per}){again}; projected {duration(seconds)} at {test_seconds:g} s a test")


def plan_lines(plan: Plan, test_seconds: float, passes: int = 1) -> Iterator[str]:
    """--print: the plan's stages and summary, then every round of the first pass, one a line
    (a pair as A+B), made as it is printed: 1,023 rounds of 512 pairs are never all held."""
    hosts = len({h for st in plan.stages for h in st.hosts})
    yield f"# sweep of {hosts:,} nodes"
    for st in plan.stages:
        yield f"# {_stage_text(st)}"
    yield f"# {plan_summary(plan, test_seconds, passes)}"
    for rnd in plan.rounds():
        yield f"round {rnd.number} {rnd.stage}: {' '.join(map('+'.join, rnd.subsets))}"
