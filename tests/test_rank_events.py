"""Rank events are typed: a benchmark reports through its context's methods, and every consumer
handles every event type (an unknown one is an error, never silently dropped)."""

from __future__ import annotations

import io

import pytest

from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.driver import JobOutcome
from clusterbench.ranks.env import RankEnv
from clusterbench.records import (
    COMPLETE,
    FAILED,
    Failure,
    Header,
    Measurement,
    Meta,
    Note,
    Rows,
    Telemetry,
    TelemetrySample,
)
from clusterbench.report.jsonl import JsonPrinter
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import RunBuilder


def _ctx(rank: int, sink: list) -> RankContext:
    env = RankEnv(rank, 2, rank, 2, "127.0.0.1", 1, "local", "h")
    return RankContext(env=env, device=None, backend="gloo", options=RankOptions(), emit_fn=sink.append)


def test_context_methods_send_typed_events_from_rank0_only():
    sink: list = []
    ctx = _ctx(0, sink)
    m = Measurement("stream", "bandwidth", 1.0, "GB/s", {"kernel": "Copy"})
    ctx.record([m])
    ctx.note("skipped x")
    ctx.fail("check failed")
    ctx.meta({"threads": 2})
    ctx.telemetry([TelemetrySample(0.0, "cpu_utilization", 5.0, "%", "h")])
    assert [type(e) for e in sink] == [Rows, Note, Failure, Meta, Telemetry]
    assert sink[0].measurements == (m,) and sink[2].reason == "check failed"
    other: list = []
    worker = _ctx(1, other)
    worker.record([m])
    worker.note("x")
    assert other == []


def _header() -> Header:
    return Header(ranks=2, hosts=["a", "b"], devices=["cpu", "cpu"], device_type="cpu", backend="gloo",
                  launcher="local", versions={"torch": "x"}, env={"NCCL_DEBUG": "INFO"})


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


@pytest.mark.parametrize("consumer", [lambda: RunBuilder("x", []), lambda: TablePrinter(out=io.StringIO())])
def test_an_unknown_event_is_an_error(consumer):
    with pytest.raises(TypeError, match="unknown rank event"):
        consumer().on_event(("measurements", []))


def test_printers_accept_every_event():
    for printer in (TablePrinter(out=io.StringIO()), JsonPrinter(out=io.StringIO())):
        for e in (_header(), Rows(()), Note("n"), Meta({}), Failure("f"), Telemetry(())):
            printer.on_event(e)
