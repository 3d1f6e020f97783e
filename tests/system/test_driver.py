"""System tests (driver): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import rankfns
from rankfns import _run

from clusterbench.records import Header, Rows


def test_events_from_rank0():
    outcome, events = _run(rankfns.sum_ranks, {"steps": 3}, 4)
    assert outcome.status == "complete"
    assert isinstance(events[0], Header) and events[0].ranks == 4
    values = [e.measurements[0].value for e in events if isinstance(e, Rows)]
    assert values == [10.0, 10.0, 10.0]


def test_dead_rank_is_named_and_rows_kept():
    outcome, events = _run(rankfns.die_after, {"rank": 1, "step": 4}, 3)
    assert outcome.status == "incomplete" and outcome.exit_code == 1
    assert outcome.errors and outcome.errors[0].startswith("rank 1 on ")
    # Rank 1 reaching step 4 proves rank 0 finished and sent steps 0-2; step 3 may be lost when
    # the dying rank resets its sockets before rank 0 has read the last message of that step.
    steps = [e.measurements[0].params["step"] for e in events if isinstance(e, Rows)]
    assert steps[:3] == [0, 1, 2] and len(steps) <= 4


def test_hung_rank_is_named_within_timeout():
    outcome, _ = _run(rankfns.die_after, {"rank": 2, "step": 1, "how": "hang"}, 3, timeout=4.0)
    assert outcome.status == "incomplete"
    # ended by --timeout's watchdog (its words), not by the rank: a hang would never return
    assert "rank 2" in outcome.errors[0] and "made no progress for 4 s (--timeout)" in outcome.errors[0]


def test_raising_rank_is_named():
    outcome, _ = _run(rankfns.raise_on, {"rank": 1}, 2)
    assert outcome.errors == [outcome.errors[0]] and "rank 1" in outcome.errors[0]
    assert "boom from a rank" in outcome.errors[0]
