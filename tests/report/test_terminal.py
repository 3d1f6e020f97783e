"""Tests of clusterbench.report.terminal: terminal tables."""

from __future__ import annotations

import io

import pytest
import torch
from bench_tables import _coll, _index, _row, _run
from coll_rankfns import TARGET
from paths import DATA

from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.families import FAMILIES, renderer_for
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import Header, Measurement, Meta, Note, Rows, Run
from clusterbench.report.terminal import TablePrinter, render_run
from clusterbench.runner import RunBuilder, run_job


def _stream() -> list[Measurement]:
    base = {"kernel": "Copy", "array_size": 1024, "dtype": "double", "device": "cpu"}
    return [Measurement("stream", "bandwidth", 5.0, "GB/s", dict(base)),
            *(Measurement("stream", "time_us", 3.0, "us", {**base, "stat": s}) for s in ("min", "max", "avg"))]


HEADER = Header(ranks=2, hosts=["h", "h"], devices=["cpu", "cpu"], device_type="cpu", backend="gloo",
                launcher="local")


def _odd_params() -> list[dict]:
    return [{}, {"bytes": "x", "count": None, "array_size": None, "device": None, "kernel": None,
                 "m": None, "stat": None, "step": "s", "batch": None, "src": None, "dst": None,
                 "test": None, "transfer": "t", "devices": "two", "optimal_algbw": "?", "nodes": None,
                 "placement": None, "dtype": None, "direction": None, "method": None}]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_every_op_on_gpus(db):
    n = torch.cuda.device_count()
    config = build_config("all", minbytes="8", maxbytes="1M", stepfactor=16, iters=5, warmup_iters=1,
                          datatype="float,half,bfloat16,int8", redop="sum,prod,max,min,avg")
    out = io.StringIO()
    job = Job(TARGET, config, RankOptions(device="cuda", timeout=120), np=n)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    assert result.exit_code == 0, out.getvalue()
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    assert result.run.meta["device_type"] == "cuda"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_cudagraph_on_gpus(db):
    n = torch.cuda.device_count()
    config = build_config("all_reduce,all_gather,sendrecv", minbytes="8", maxbytes="64M", stepfactor=64,
                          iters=10, warmup_iters=2, graph=3, datatype="float,bfloat16", redop="sum,avg")
    out = io.StringIO()
    job = Job(TARGET, config, RankOptions(device="cuda", timeout=300), np=n)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    assert result.exit_code == 0, out.getvalue()
    assert result.run.meta["coll_sweep.all_reduce"]["graph"] == 3
    assert "graph: 3" in out.getvalue()
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    assert [m for m in result.measurements if m.metric == "busbw" and m.params["redop"] == "avg"]


def test_live_printer_and_stored_run_print_the_same_table():
    run = _run()
    out = io.StringIO()
    printer = TablePrinter(out=out)
    printer.on_event(Header(ranks=2, hosts=["nodeA", "nodeA"], devices=run.devices, device_type="cpu",
                            backend="gloo", launcher="local"))
    printer.on_event(Meta({k: v for k, v in run.meta.items() if k != "rank_hosts"}))
    batches = [_row("all_gather", 1024, 64, "out", 12.5, 0.08, 0.06, 0) + _row("all_gather", 1024, 64, "in", 13, 1, 1, 0),
               _row("all_reduce", 8, 2, "in", 20.0, 0.0, 0.0, 0)]
    for b in batches:
        printer.on_event(Rows(tuple(b)))
    everything = [m for b in batches for m in b]
    printer.finish(run, everything)
    assert out.getvalue().splitlines() == render_run(run, everything)
    # the first table is closed before the second starts
    lines = out.getvalue().splitlines()
    assert lines.index("# Collective test concluded: all_gather") < lines.index("# Collective test: all_reduce")


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


def test_results_show_prints_a_collectives_notes_after_its_table():
    """nccl-tests' parsers read every line after the column header as a row (SuperBench's takes
    the last line naming out-of-place as the header): a note follows the op's footer."""
    run = Run("coll", hosts=["h"], ranks=2, devices=["cpu", "cpu"])
    run.meta["notes"] = [Note("all_reduce: a caveat", "all_reduce").to_stored(),
                         Note("broadcast: a caveat", "broadcast").to_stored(),
                         "an old note without a benchmark"]
    ms = _coll("all_reduce", 8) + _coll("all_reduce", 16) + _coll("broadcast", 8)
    lines = render_run(run, ms)
    ar_note, bc_note = _index(lines, "all_reduce: a caveat"), _index(lines, "broadcast: a caveat")
    ar_end, bc_start = _index(lines, "concluded: all_reduce"), _index(lines, "# Collective test: broadcast")
    ar_rows = [i for i, line in enumerate(lines[:bc_start]) if line.strip().startswith(("8 ", "16 "))]
    assert len(ar_rows) == 2 and ar_rows[-1] < ar_end < ar_note < bc_start < bc_note  # each after its own table's footer
    assert lines[ar_note - 1] == "# Collective test concluded: all_reduce"
    assert not any("old note" in line for line in lines)


def test_live_collective_notes_wait_for_their_tables_footer():
    out = io.StringIO()
    printer = TablePrinter(out=out)
    events = [HEADER, Note("all_reduce: sent before its rows", "all_reduce"), Rows(tuple(_coll("all_reduce", 8))),
              Note("all_reduce: sent among its rows", "all_reduce"), Rows(tuple(_coll("all_reduce", 16))),
              Note("stream: a stream note", "stream"), Rows(tuple(_stream()))]
    for e in events:
        printer.on_event(e)
    printer.finish(Run("suite"), [])
    lines = out.getvalue().splitlines()
    end = _index(lines, "concluded: all_reduce")
    assert lines[end + 1:end + 3] == ["# all_reduce: sent before its rows", "# all_reduce: sent among its rows"]
    # other families keep their notes under their header
    assert _index(lines, "array_size") < _index(lines, "a stream note") < _index(lines, "Copy")


@pytest.mark.parametrize("consumer", [lambda: RunBuilder("x", []), lambda: TablePrinter(out=io.StringIO())])
def test_an_unknown_event_is_an_error(consumer):
    with pytest.raises(TypeError, match="unknown rank event"):
        consumer().on_event(("measurements", []))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_tables_take_rows_without_their_params(family):
    benchmarks = family.benchmarks or tuple(f"{p}bw" for p in family.prefixes)
    run = Run(benchmark=benchmarks[0], ranks=1, hosts=["h"], devices=["dev"],
              meta={"train": {"params": None}, "device_names": {"G0": "x"}})
    for bench in benchmarks:
        for params in _odd_params():
            ms = [m(bench, 1.5, dict(params)) for m in family.metrics]
            lines = render_run(run, ms)
            assert lines
            r = renderer_for(bench)  # and live: header, rows, footer as they arrive
            assert isinstance(r.header(run) + r.rows(ms) + r.footer(run, ms), list)


BUSY = DATA / "golden" / "busy-2core-run-suite.jsonl"


def _busy_run():
    from clusterbench.ingest import parse_text

    (imported,) = parse_text(BUSY.read_text(), name=BUSY.name)
    return imported.run, imported.measurements


def _by_table(ms: list[Measurement]) -> list[list[Measurement]]:
    out: dict[str, list[Measurement]] = {}
    for m in ms:
        out.setdefault(m.benchmark, []).append(m)
    return list(out.values())


def test_a_busy_node_s_run_prints_one_warning_block():
    # the rows of a `clusterbench run` on a busy 2-core node, as its ranks sent them, table after
    # table: before, 13 `# warning:` lines, one or two after each table with the same advice
    run, ms = _busy_run()
    live = io.StringIO()
    printer = TablePrinter(out=live)
    printer.on_event(HEADER)
    for table in _by_table(ms):
        printer.on_event(Rows(table))
    printer.finish(run, ms)
    lines = live.getvalue().splitlines()
    warned = [i for i, line in enumerate(lines) if line.startswith("# warning:")]
    assert len(warned) == 1
    block = lines[warned[0]:]
    block = block[:next((k for k, line in enumerate(block[1:], 1) if not line.startswith("#  ")), len(block))]
    assert sum("what to do:" in line for line in block) == 1
    # after every table: the last table (gemm) ends before it
    assert warned[0] > _index(lines, "bf16")
    # results show prints the same block from the warnings stored with the run (as a run made
    # now stores them: this one was stored before they had a severity and row names)
    from clusterbench.judge import noise

    noise.annotate(run, ms)
    shown = render_run(run, ms)
    start = next(i for i, line in enumerate(shown) if line.startswith("# warning:"))
    assert shown[start:start + len(block)] == block


def test_a_repeat_prints_no_block_per_run_and_then_the_runs_summary():
    from clusterbench.report.terminal import repeat_lines

    run, ms = _busy_run()
    live = io.StringIO()
    printer = TablePrinter(out=live, noise_block=False)
    printer.on_event(HEADER)
    printer.on_event(Rows(ms))
    printer.finish(run, ms)
    assert "# warning:" not in live.getvalue()
    # five runs of the same rows, their busbw scaled: mean ± σ and min..max per headline row
    runs = []
    for i, factor in enumerate((1.0, 1.1, 0.9, 1.2, 0.8), 1):
        again = Run(benchmark="suite", hosts=["vm"], tags={"repeat_group": "g1", "repeat": str(i)})
        again.id, again.started_at = i, f"2026-12-01T00:0{i}:00.000Z"
        runs.append((again, [Measurement(m.benchmark, m.metric, m.value * factor, m.unit, m.params)
                             for m in ms]))
    lines = repeat_lines(runs)
    assert lines[0] == "# 5 runs (1, 2, 3, 4, 5; repeat_group=g1): each headline row across them"
    assert lines[1].split() == ["#", "row", "mean", "±", "σ", "min..max", "CV", "runs"]
    row = next(line for line in lines if "all_reduce" in line and "busbw" in line)
    busbw = [m for m in ms if m.benchmark == "all_reduce" and m.metric == "busbw" and "bytes" in m.params]
    first = next(m.value for m in busbw if m.params["bytes"] == max(x.params["bytes"] for x in busbw))
    assert f"{first * 0.8:.4g}..{first * 1.2:.4g}" in row and row.rstrip().endswith(" 5")
    assert " ± " in row and "15.8%" in row   # sd of 1, 1.1, 0.9, 1.2, 0.8 is 0.158
    # every headline row is there: each op, stream's kernels, gemm's dtypes
    assert {line.split()[0] for line in lines[2:]} >= {"all_reduce", "alltoall", "stream", "gemm"}
    assert repeat_lines(runs[:1]) == []
