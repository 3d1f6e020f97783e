"""System tests (noise): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import io
import json

import node_doubles
from json_schema import check_lines

from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.judge import noise
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.report.terminal import TablePrinter, render_run
from clusterbench.runner import run_job
from clusterbench.store import Store


def test_warnings_print_live_are_stored_and_shown_again(tmp_path):
    db = str(tmp_path / "r.db")
    cfg = StreamConfig(sizes=(4096,), numtimes=12, kernels=("Copy",), backend=node_doubles.SlowStart)
    live = io.StringIO()
    result = run_job(Job(stream_main.main, cfg, RankOptions(device="cpu", telemetry_interval=0), np=1),
                     "stream", ["clusterbench", "stream"], TablePrinter(out=live), db=db,
                     announce=lambda _: None, judge=noise.annotate)
    assert result.exit_code == 0
    live_lines = [line for line in live.getvalue().splitlines() if line.startswith("# warning:")]
    assert any("first iteration of the row is much slower" in line for line in live_lines)
    with Store.open(db) as store:
        run = store.get_run(result.run.id)
        shown = render_run(run, store.measurements(run.id))
    assert [w["kind"] for w in run.meta["noise"]] == [noise.FIRST, noise.SPREAD]
    assert [line for line in shown if line.startswith("# warning:")] == live_lines
    # after the table: the last row of the table comes before the first warning
    first_warning = shown.index(live_lines[0])
    assert "Copy" in shown[first_warning - 1]
    # and for scripts: the same warnings as `warning` lines after the run line, live and again
    from clusterbench.report.jsonl import JsonPrinter, run_objects

    printed = io.StringIO()
    JsonPrinter(printed).finish(run, store_ms := Store.open(db).measurements(run.id))
    lines = [json.loads(line) for line in printed.getvalue().splitlines()]
    kinds = [x["kind"] for x in lines]
    assert kinds.index("run") < kinds.index("warning")
    assert [x["text"] for x in lines if x["kind"] == "warning"] == [w[len("# warning: "):] for w in live_lines]
    assert [x for x in run_objects(run, store_ms) if x["kind"] == "warning"] == \
        [x for x in lines if x["kind"] == "warning"]
    check_lines(printed.getvalue())
