"""Tests of clusterbench.judge.noise: noise inside one run, said at once, like hyperfine's warnings."""

from __future__ import annotations

import random

from judged_rows import _stream_rows
from paths import DATA

from clusterbench.families.base import iteration_stats
from clusterbench.judge import noise
from clusterbench.records import Measurement


def test_judged_percentages_stay_short_at_the_extremes():
    # a CV, an outlier ratio or an efficiency off a value near 0 was printed with fixed
    # decimals: hundreds of digits in a table cell or a reason
    from clusterbench.judge.noise import RowStats, spread_reasons
    from clusterbench.judge.text import cv_text

    assert cv_text(1e200) == "1e+202%" and cv_text(0.0123) == "1.2%" and cv_text(None) == "-"
    stats = RowStats("all_reduce", {"min": 1e-300, "max": 1e10, "median": 1e-300, "mad": 1e-301, "cv": 1e200})
    reasons = spread_reasons(stats)
    assert reasons and max(len(r) for r in reasons) < 60, reasons


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
    # named by what tells it from the other rows of its table
    assert w.worst.startswith("kernel=Triad: slowest iteration 94.0x the fastest")
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


def test_one_noisy_row_is_one_row_that_varies():
    spiky = [100.0 + i % 3 for i in range(50)]
    spiky[30] = 9400.0
    (w,) = noise.check(_stream_rows("Triad", spiky))
    assert w.line().startswith("# warning: stream: the row varies a lot between iterations")   # was "vary"


BUSY = DATA / "golden" / "busy-2core-run-suite.jsonl"


def _busy_run():
    from clusterbench.ingest import parse_text

    (imported,) = parse_text(BUSY.read_text(), name=BUSY.name)
    return imported.run, imported.measurements


def test_a_busy_node_s_whole_suite_is_one_warning_block():
    # before: 13 warnings, two long lines per op, each with the same advice
    run, ms = _busy_run()
    found = noise.check(ms)
    assert len(found) == 13 and {w.kind for w in found} == {noise.SPREAD, noise.FIRST}
    block = noise.summary_lines(found, noise.checked_rows(ms))
    assert sum(line.startswith("# warning:") for line in block) == 1
    assert all(line.startswith("#") and len(line) <= noise.WIDTH for line in block)
    text = "\n".join(block)
    # which rows: how many per benchmark, of how many checked
    spread = sum(w.rows for w in found if w.kind == noise.SPREAD)
    assert f"{spread} row(s) vary a lot between iterations: all_reduce 6/6, all_gather 10/10" in text
    assert f"({noise.checked_rows(ms)} row(s) with per-iteration times checked)" in text
    # the worst figure of them all, once, and one piece of advice
    worst = max((w for w in found if w.kind == noise.SPREAD), key=lambda w: w.severity)
    assert f"worst: {worst.benchmark} {worst.worst}" in text
    assert text.count("what to do:") == 1 and text.count("other load") == 1 and "--repeat" in text


def test_inside_a_repeat_the_advice_is_not_to_repeat():
    _, ms = _busy_run()
    block = "\n".join(noise.summary_lines(noise.check(ms, repeating=True), 68, runs=5, repeating=True))
    assert "noise inside the 5 runs" in block and "--repeat" not in block and "other load" in block
    # stored with each run of the repeat: the same advice
    assert all("--repeat" not in w.text for w in noise.check(ms, repeating=True))


def test_the_advice_fits_the_warnings():
    assert noise.advice([noise.FIRST]) == noise.WARM_UP
    assert noise.advice([noise.FIRST, noise.SPREAD]) == noise.LOAD   # load slows the first iteration too
    assert noise.advice([noise.SPREAD], repeating=True) == noise.LOAD_REPEATING
    assert noise.summary_lines([], 10) == []


def test_stored_warnings_keep_their_severity_and_old_ones_read_without_it():
    _, ms = _busy_run()
    w = noise.check(ms)[0]
    assert noise.NoiseWarning.from_stored(w.to_stored()) == w
    old = {k: v for k, v in w.to_stored().items() if k != "severity"}
    assert noise.NoiseWarning.from_stored(old).severity == 0.0


def test_a_caller_s_row_stats_give_the_same_warnings():
    _, ms = _busy_run()
    stats = noise.row_stats(ms)
    assert noise.check(ms, stats=stats) == noise.check(ms) and noise.check(ms)
    assert noise.check(ms, repeating=True, stats=stats) == noise.check(ms, repeating=True)
