"""Noise inside one run (judge/noise.py): rows whose iterations spread far, or whose first
iteration is slow, get one ``# warning:`` line per benchmark and kind, live, stored with the run,
and in ``results show``; spread records stay out of comparisons."""

from __future__ import annotations

import io
import json
import random

import node_doubles
from json_schema import check_lines

from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.families.base import iteration_stats
from clusterbench.judge import noise
from clusterbench.judge.compare import compare
from clusterbench.judge.select import Row
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import Measurement, Run
from clusterbench.report.terminal import TablePrinter, render_run
from clusterbench.runner import run_job
from clusterbench.store import Store


def _stream_rows(kernel: str, times_us: list[float]) -> list[Measurement]:
    base = {"kernel": kernel, "array_size": 1 << 20, "dtype": "double", "device": "cuda:0"}
    out = [Measurement("stream", "bandwidth", 100.0, "GB/s", dict(base))]
    out += [Measurement("stream", "time_us", v, "us", {**base, "stat": s})
            for s, v in iteration_stats(times_us).items()]
    return out


def test_quiet_rows_get_no_warning():
    rng = random.Random(1)
    ms = [m for k in ("Copy", "Triad") for m in _stream_rows(k, [100 + rng.gauss(0, 1) for _ in range(50)])]
    assert noise.check(ms) == []


def test_a_wide_spread_is_one_line_naming_the_worst_row():
    quiet = [100.0 + i % 3 for i in range(50)]
    spiky = list(quiet)
    spiky[30] = 9400.0  # one iteration 94x the fastest
    ms = _stream_rows("Copy", quiet) + _stream_rows("Triad", spiky) + _stream_rows("Dot", quiet[:-1] + [250.0])
    (w,) = noise.check(ms)
    assert w.kind == noise.SPREAD and w.rows == 2 and w.checked == 3
    assert w.worst.startswith("Triad 1048576 double cuda:0: slowest iteration 94.0x the fastest")
    assert w.line().startswith("# warning: stream: 2 of 3 rows vary a lot between iterations")
    assert "--repeat" in w.text and "other load" in w.text


def test_a_slow_first_iteration_says_warm_up():
    times = [400.0] + [100.0 + (i % 5) * 0.5 for i in range(40)]  # 4x, hyperfine's z >> 14.8
    ms = _stream_rows("Copy", times)
    kinds = {w.kind: w for w in noise.check(ms)}
    assert "warm up longer" in kinds[noise.FIRST].text and "4.0x the median" in kinds[noise.FIRST].worst
    assert noise.SPREAD in kinds  # 4x the fastest as well


def test_high_cv_without_a_wide_range():
    times = [100.0, 130.0] * 20  # max/min 1.3, CV 13%
    (w,) = noise.check(_stream_rows("Copy", times))
    assert w.kind == noise.SPREAD and "CV 13%" in w.worst


def test_hyperfine_outlier_rule_below_the_range_limit():
    times = [100.0] * 20 + [100.5] * 19 + [150.0]  # one outlier at 1.5x, MAD 0.25
    (w,) = noise.check(_stream_rows("Copy", times))
    assert "outlier, 1.50x the median" in w.worst


def test_imported_per_iteration_columns_and_old_stats_feed_it():
    # nccl-tests -I columns: iter_time_us min/max/p99 and iter_cv_pct (collectives can feed the
    # check the same way once their timing loop records per-iteration stat rows)
    p = {"bytes": 1 << 20, "count": 1 << 18, "dtype": "float", "redop": "sum", "root": -1,
         "placement": "out", "ranks": 8}
    ms = [Measurement("all_reduce", "iter_time_us", 10.0, "us", {**p, "stat": "min"}),
          Measurement("all_reduce", "iter_time_us", 12.0, "us", {**p, "stat": "max"}),
          Measurement("all_reduce", "iter_cv_pct", 25.0, "%", dict(p))]
    (w,) = noise.check(ms)
    assert w.benchmark == "all_reduce" and "CV 25%" in w.worst
    # a native collective row can feed it the same way with time_us stat rows; the row's own
    # time (no stat) is not a statistic
    native = [Measurement("all_reduce", "time_us", 11.0, "us", dict(p))]
    native += [Measurement("all_reduce", "time_us", v, "us", {**p, "stat": s})
               for s, v in iteration_stats([40.0] + [10.0 + i % 3 * 0.1 for i in range(19)]).items()]
    assert {w.kind for w in noise.check(native)} == {noise.FIRST, noise.SPREAD}
    assert noise.check(native[:1]) == []
    # BabelStream logs carry min/max/avg only
    base = {"kernel": "Copy", "array_size": 1 << 25, "dtype": "double", "device": 0}
    old = [Measurement("stream", "time_us", v, "us", {**base, "stat": s})
           for s, v in (("min", 10.0), ("max", 35.0), ("avg", 12.0))]
    assert "3.5x the fastest" in noise.check(old)[0].worst
    # gemm: best/median samples plus the recorded max
    g = {"m": 512, "n": 512, "k": 512, "batch": 1, "dtype": "fp32", "transA": "N", "transB": "N", "device": "cpu"}
    gemm = [Measurement("gemm", "time_us", v, "us", {**g, "stat": s})
            for s, v in (("best", 100.0), ("median", 110.0), ("max", 900.0))]
    assert noise.check(gemm)[0].worst.startswith("fp32 512 512 512 1 N N cpu: slowest iteration 9.0x")


def test_spread_records_stay_out_of_comparisons():
    def rows(scale: float) -> list[Row]:
        out = []
        for i in range(3):
            run = Run("stream", id=i)
            out += [Row(run, m) for m in _stream_rows("Copy", [scale * (100 + j) for j in range(10)])]
        return out

    stats = {str(c.params.get("stat")) for c in compare(rows(1.0), rows(1.2)) if c.metric == "time_us"}
    assert stats == {"min", "max", "avg", "median"}

    # a collective's per-iteration statistics (native gloo rows, nccl-tests' i_* columns) are for
    # the noise check only: none of them is compared, the row's own time is
    def coll(scale: float) -> list[Row]:
        params = {"bytes": 8, "count": 2, "dtype": "float", "redop": "sum", "root": -1, "placement": "out",
                  "ranks": 2}
        out = []
        for i in range(3):
            run = Run("coll", id=i)
            out.append(Row(run, Measurement("all_reduce", "time_us", scale * 100 + i, "us", params)))
            out += [Row(run, Measurement("all_reduce", "iter_time_us", scale * v + i, "us", {**params, "stat": s}))
                    for s, v in iteration_stats([100.0 + j for j in range(10)]).items()]
        return out

    assert {(c.metric, c.params.get("stat")) for c in compare(coll(1.0), coll(1.2))} == {("time_us", None)}


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


def test_one_noisy_row_is_one_row_that_varies():
    spiky = [100.0 + i % 3 for i in range(50)]
    spiky[30] = 9400.0
    (w,) = noise.check(_stream_rows("Triad", spiky))
    assert w.line().startswith("# warning: stream: the row varies a lot between iterations")   # was "vary"
