"""A note prints inside the table of the benchmark it belongs to, after that table's header:
live (as rows arrive) and in ``results show``; notes stored without a benchmark (older runs)
print as they always did (not at all, see test_golden_show.py)."""

from __future__ import annotations

import io
import subprocess
import sys

from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.env import RankEnv
from clusterbench.records import Header, Measurement, Note, Rows, Run
from clusterbench.report.terminal import TablePrinter, render_run
from clusterbench.runner import RunBuilder


def _coll(op: str, size: int) -> list[Measurement]:
    p = {"bytes": size, "count": size // 4, "dtype": "float", "redop": "none", "root": -1,
         "placement": "out", "ranks": 2}
    return [Measurement(op, "time_us", 10.0, "us", p), Measurement(op, "algbw", 1.0, "GB/s", p),
            Measurement(op, "busbw", 1.0, "GB/s", p)]


def _stream() -> list[Measurement]:
    base = {"kernel": "Copy", "array_size": 1024, "dtype": "double", "device": "cpu"}
    return [Measurement("stream", "bandwidth", 5.0, "GB/s", dict(base)),
            *(Measurement("stream", "time_us", 3.0, "us", {**base, "stat": s}) for s in ("min", "max", "avg"))]


def _index(lines: list[str], text: str) -> int:
    return next(i for i, line in enumerate(lines) if text in line)


HEADER = Header(ranks=2, hosts=["h", "h"], devices=["cpu", "cpu"], device_type="cpu", backend="gloo",
                launcher="local")


def test_live_note_for_a_later_table_waits_for_its_header():
    out = io.StringIO()
    printer = TablePrinter(out=out)
    events = [HEADER, Rows(tuple(_coll("sendrecv", 8))),
              Note("CPU: 2 thread(s), double, 10 iterations", "stream"),  # sent before stream's rows
              Note("sendrecv: a caveat", "sendrecv"),
              Rows(tuple(_stream()))]
    for e in events:
        printer.on_event(e)
    printer.finish(Run("suite"), [])
    lines = out.getvalue().splitlines()
    stream_header = _index(lines, "array_size")
    note = _index(lines, "CPU: 2 thread(s)")
    copy_row = _index(lines, "Copy")
    assert stream_header < note < copy_row  # inside the stream table, not the sendrecv one
    assert _index(lines, "sendrecv: a caveat") < stream_header


def test_notes_of_a_table_that_never_starts_print_at_the_end():
    out = io.StringIO()
    printer = TablePrinter(out=out)
    for e in (HEADER, Rows(tuple(_coll("all_reduce", 8))), Note("gemm: every dtype skipped", "gemm")):
        printer.on_event(e)
    printer.finish(Run("suite"), [])
    assert out.getvalue().rstrip().endswith("# gemm: every dtype skipped")


def test_results_show_prints_notes_after_their_tables_header():
    run = Run("coll", hosts=["h"], ranks=2, devices=["cpu", "cpu"])
    run.meta["notes"] = [Note("all_reduce: in-place only", "all_reduce").to_stored(),
                         Note("broadcast: in-place only", "broadcast").to_stored(),
                         "an old note without a benchmark"]
    ms = _coll("all_reduce", 8) + _coll("all_reduce", 16) + _coll("broadcast", 8)
    lines = render_run(run, ms)
    first_ar, first_bc = _index(lines, "all_reduce: in-place"), _index(lines, "broadcast: in-place")
    ar_rows = [i for i, line in enumerate(lines) if line.strip().startswith(("8 ", "16 "))]
    assert first_ar < ar_rows[0] < first_bc  # all_reduce's note before its rows, not broadcast's
    assert not any("old note" in line for line in lines)


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


def test_coll_notes_sit_in_their_ops_table_live_and_in_results_show(tmp_path):
    db = str(tmp_path / "r.db")
    cmd = [sys.executable, "-m", "clusterbench"]
    live = subprocess.run([*cmd, "coll", "all_reduce,broadcast", "--np", "2", "--device", "cpu", "-b", "8",
                           "-e", "64", "-n", "2", "-w", "1", "--telemetry-interval", "0", "--db", db],
                          capture_output=True, text=True, timeout=300)
    assert live.returncode == 0, live.stderr
    shown = subprocess.run([*cmd, "results", "show", "last", "--db", db], capture_output=True, text=True,
                           timeout=120)
    if shown.returncode != 0:  # selectors other than ids may not be there yet
        shown = subprocess.run([*cmd, "results", "show", "1", "--db", db], capture_output=True, text=True,
                               timeout=120)
    assert shown.returncode == 0, shown.stderr
    for text in (live.stdout, shown.stdout):
        lines = text.splitlines()
        ar = (_index(lines, "# Collective test: all_reduce"), _index(lines, "concluded: all_reduce"))
        bc = (_index(lines, "# Collective test: broadcast"), _index(lines, "concluded: broadcast"))
        ar_note = _index(lines, "only an in-place all_reduce")
        bc_note = _index(lines, "only an in-place broadcast")
        assert ar[0] < ar_note < ar[1] < bc[0] < bc_note < bc[1], text
        assert "(B)" in lines[ar_note - 1]   # under the header, before the first row
    # live and stored tables alike, notes included: every note is known before the op's first row
    def tables(text: str) -> list[str]:
        lines = text.splitlines()
        return lines[_index(lines, "# Collective test: all_reduce"):_index(lines, "concluded: broadcast") + 1]
    assert tables(live.stdout) == tables(shown.stdout)
