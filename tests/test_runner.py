"""Tests of clusterbench.runner: from a job to a stored run."""

from __future__ import annotations

from bench_tables import _coll, _header

from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.driver import JobOutcome
from clusterbench.ranks.env import RankEnv
from clusterbench.records import (
    COMPLETE,
    FAILED,
    Failure,
    Measurement,
    Meta,
    Note,
    Rows,
    Telemetry,
    TelemetrySample,
)
from clusterbench.runner import RunBuilder


def test_a_note_without_a_benchmark_belongs_to_the_rows_sent_last():
    sink: list = []
    ctx = RankContext(env=RankEnv(0, 1, 0, 1, "127.0.0.1", 1, "local", "h"), device=None, backend="gloo",
                      options=RankOptions(), emit_fn=sink.append)
    ctx.note("before any row")
    ctx.record(_coll("reduce", 8))
    ctx.note("after reduce's rows")
    ctx.note("explicit", "stream")
    notes = [e for e in sink if isinstance(e, Note)]
    assert [n.benchmark for n in notes] == [None, "reduce", "stream"]
    b = RunBuilder("coll", [])
    for n in notes:
        b.on_event(n)
    assert b.run.meta["notes"][1] == {"text": "after reduce's rows", "benchmark": "reduce"}


def test_the_run_builder_handles_every_event():
    b = RunBuilder("stream", ["clusterbench", "stream"])
    m = Measurement("stream", "bandwidth", 1.0, "GB/s", {"kernel": "Copy"})
    for e in (_header(), Rows((m,)), Note("a note"), Meta({"threads": 2}),
              Telemetry((TelemetrySample(0.0, "cpu_utilization", 5.0, "%", "a"),))):
        b.on_event(e)
    run = b.finish(JobOutcome("root"))
    assert run.status == COMPLETE and run.hosts == ["a", "b"] and run.env == {"NCCL_DEBUG": "INFO"}
    assert run.meta["notes"] == [{"text": "a note", "benchmark": None}] and run.meta["threads"] == 2 and run.meta["launcher"] == "local"
    assert b.measurements == [m] and len(b.telemetry) == 1
    b.on_event(Failure("wrong"))
    assert b.finish(JobOutcome("root")).status == FAILED
