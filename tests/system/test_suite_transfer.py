"""System tests (suite transfer): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os

import torch.distributed as dist
from rankfns import SUITE_META, step_ok, step_skips

from clusterbench.bench import suite
from clusterbench.bench.suite import SuiteEntry
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Meta, Note


def step_fails(ctx, config):
    ctx.fail("wrong result in the second step")


def step_dies(ctx, config):
    dist.barrier()
    if ctx.rank == 1:
        os._exit(9)
    dist.barrier()


def _suite(entries):
    events = []
    outcome = execute(Job(suite.main, entries, RankOptions(device="cpu", timeout=60), np=2), events.append)
    metas = [e.data[SUITE_META] for e in events if isinstance(e, Meta) and SUITE_META in e.data]
    notes = [e for e in events if isinstance(e, Note) and e.benchmark == SUITE_META]
    return outcome, metas, notes


def test_suite_says_each_steps_outcome_failed_skipped_and_not_run():
    outcome, metas, notes = _suite([SuiteEntry("first", step_ok, cpu=None),
                                    SuiteEntry("second", step_fails, cpu=None),
                                    SuiteEntry("third", step_skips, cpu=None)])
    assert outcome.status == "complete"   # (the run builder turns the Failure into failed)
    last = {s["step"]: s for s in metas[-1]}
    assert [last[n]["status"] for n in ("first", "second", "third")] == ["done", "failed", "done"]
    assert last["second"]["failures"] == ["wrong result in the second step"]
    assert last["third"]["skipped"] == ["skipped tf32 on cpu: tf32 is a GPU tensor-core mode"]
    # the summary at the end names every step with why
    assert len(notes) == 1
    text = notes[0].text
    assert "first: done" in text and "second: failed (wrong result in the second step)" in text
    assert "third: done" in text and "tf32 is a GPU tensor-core mode" in text


def test_a_dead_rank_leaves_the_step_it_stopped_in_and_the_steps_never_run():
    outcome, metas, notes = _suite([SuiteEntry("first", step_ok, cpu=None),
                                    SuiteEntry("second", step_dies, cpu=None),
                                    SuiteEntry("third", step_ok, cpu=None)])
    assert outcome.status == "incomplete"
    last = {s["step"]: s["status"] for s in metas[-1]}
    assert last == {"first": "done", "second": "started", "third": "not run"}
    assert notes == []   # no summary claims the suite finished
