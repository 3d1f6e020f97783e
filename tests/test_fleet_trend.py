"""`clusterbench trend` and the change-point test behind it: a step injected at a known run of a
history built from real logs is named at that run; pure noise gives no false alarm."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fleet_helpers import night, real_measurements, store_history
from json_schema import check_lines
from judge_helpers import cli, json_lines

from clusterbench.judge.changepoint import Settings, find_changes, l1_interval, scan_p_value

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]
A3MEGA = "nccl-tests/a3mega-h100-2node-all_reduce.txt"
BABEL = "babelstream/seed-mi300x-hip-8gpu-mpi.txt"


def _busbw_step(host: str, at: int, factor: float):
    def f(h, i, m):
        return factor if h == host and i >= at and m.metric == "busbw" else 1.0
    return f


def test_step_in_a_real_history_is_named_at_its_run(capsys, db):
    base = real_measurements(A3MEGA)
    ids = store_history(db, base, HOSTS, 20, factor=_busbw_step("gpu03", 12, 0.88), seed=1)
    rc, out, err = cli(capsys, "trend", "fleet=test", "--benchmark", "all_reduce", "--json", "--db", db)
    assert rc == 0, err
    lines = check_lines(out)
    assert {d["kind"] for d in lines} == {"trend_point", "regression", "summary"}
    found = [d for d in lines if d["kind"] == "regression"]
    # the 8 GiB rows (the largest size of each run), one series per placement
    assert sorted(d["params"]["placement"] for d in found) == ["in", "out"], found
    for r in found:
        assert r["host"] == "gpu03" and r["run"] == ids[("gpu03", 12)] and r["started_at"] == night(12)
        assert r["params"]["bytes"] == 8589934592 and r["metric"] == "busbw"
        assert -15 < r["change_pct"] < -9 and r["confidence"] >= 0.99
    points = [d for d in lines if d["kind"] == "trend_point" and d["host"] == "gpu01"]
    assert len(points) == 2 * 20 and all(d["params"]["bytes"] == 8589934592 for d in points)
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["open_regressions"] == 2 and len(summary["runs"]) == 80
    rc, out, _ = cli(capsys, "trend", "fleet=test", "--benchmark", "all_reduce", "--db", db,
                     "--fail-on", "regression")
    assert rc == 1
    assert f"REGRESSION at run {ids[('gpu03', 12)]} (2025-03-13)" in out


def test_by_device_names_the_gpu(capsys, db):
    base = real_measurements(BABEL)   # MI300X GPUs 0 and 1 (the log is truncated), five kernels

    def f(h, i, m):
        return 0.9 if h == "gpu02" and str(m.params.get("device")) == "1" and i >= 8 else 1.0

    ids = store_history(db, base, HOSTS[:3], 18, factor=f, seed=2)
    rc, out, err = cli(capsys, "trend", "--by", "device", "--json", "--db", db)
    assert rc == 0, err
    regs = [d for d in json_lines(out) if d["kind"] == "regression"]
    assert {(d["host"], d["device"]) for d in regs} == {("gpu02", "1")}
    assert {d["params"]["kernel"] for d in regs} == {"Copy", "Mul", "Add", "Triad", "Dot"}
    assert {d["run"] for d in regs} == {ids[("gpu02", 8)]}
    # per host a series is the median over the host's GPUs: one of two 10% slower is a step
    # of about 5% of the host (3 noise sigmas), placed at that run or the next
    rc, out, _ = cli(capsys, "trend", "--by", "host", "--json", "--db", db)
    regs = [d for d in json_lines(out) if d["kind"] == "regression"]
    assert {d["host"] for d in regs} == {"gpu02"} and len(regs) == 5
    assert {d["run"] for d in regs} <= {ids[("gpu02", 8)], ids[("gpu02", 9)]}
    assert all(-7 < d["change_pct"] < -3 for d in regs)


def test_the_text_columns_fit_values_with_their_unit(capsys, db):
    """A value with its unit (3,953,570 GB/s) is wider than the usual ones: the rows stay aligned."""
    store_history(db, real_measurements(BABEL), HOSTS[:2], 6, factor=lambda h, i, m: 1000.0, seed=3)
    rc, out, err = cli(capsys, "trend", "--by", "device", "--db", db)
    assert rc == 0, err
    lines = out.splitlines()
    header = next(ln for ln in lines if ln.endswith("  change"))
    at = len(header) - len("change")
    rows = [ln for ln in lines[lines.index(header) + 1:] if not ln.startswith("#")]
    assert rows and any("," in ln for ln in rows)
    assert all(ln[at - 2:at] == "  " and ln[at] != " " for ln in rows), "\n".join([header, *rows[:3]])


def test_one_bad_night_is_not_a_regression_and_a_repair_closes_one(capsys, db):
    base = real_measurements(A3MEGA)

    def f(h, i, m):
        if m.metric != "busbw":
            return 1.0
        if h == "gpu01" and i == 9:
            return 0.6                   # one noisy night
        if h == "gpu02" and 5 <= i < 13:
            return 0.85                  # degraded, then repaired
        return 1.0

    store_history(db, base, HOSTS[:2], 20, factor=f, seed=3)
    rc, out, err = cli(capsys, "trend", "--benchmark", "all_reduce", "--json", "--db", db,
                       "--fail-on", "regression")
    assert rc == 0, err   # nothing sits at a worse level now
    changes = [d for d in json_lines(out) if d["kind"] in ("regression", "improvement")]
    assert {d["host"] for d in changes} == {"gpu02"}
    by_place = {}
    for d in changes:
        by_place.setdefault(d["params"]["placement"], []).append((d["kind"], d["index"]))
    for place, found in by_place.items():
        assert found == [("regression", 5), ("improvement", 13)], place


def test_latency_up_is_a_regression_and_improvement_never_fails(capsys, db):
    base = [m for m in real_measurements(A3MEGA) if m.metric == "time_us"]
    store_history(db, base, ["gpu01"], 16, seed=4, factor=lambda h, i, m: 1.2 if i >= 8 else 1.0)
    rc, out, err = cli(capsys, "trend", "--metric", "time_us", "--json", "--db", db, "--fail-on", "regression")
    assert rc == 1, err
    assert {d["kind"] for d in json_lines(out) if "index" in d} == {"regression"}
    rc, out, err = cli(capsys, "trend", "--benchmark", "all_reduce", "--json", "--db", db)
    assert rc == 2 and "no headline measurement" in err   # busbw is not in these runs


def test_faster_is_an_improvement(capsys, db):
    base = real_measurements(A3MEGA)
    store_history(db, base, ["gpu01"], 16, seed=5, factor=lambda h, i, m: 1.1 if i >= 6 else 1.0)
    rc, out, _ = cli(capsys, "trend", "--json", "--db", db, "--fail-on", "regression")
    assert rc == 0
    kinds = {d["kind"] for d in json_lines(out) if "index" in d}
    assert kinds == {"improvement"}


def test_since_and_bad_input(capsys, db):
    base = [m for m in real_measurements(A3MEGA) if m.metric == "busbw"]
    store_history(db, base, ["gpu01"], 20, seed=6)
    rc, out, _ = cli(capsys, "trend", "--since", night(10)[:10], "--json", "--db", db)
    assert rc == 0
    points = [d for d in json_lines(out) if d["kind"] == "trend_point" and d["params"]["placement"] == "in"]
    assert [p["started_at"] for p in points] == [night(i) for i in range(10, 20)]
    rc, out, err = cli(capsys, "trend", "--since", "yesterday-ish", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "invalid --since" in err
    rc, out, err = cli(capsys, "trend", "--since", "2d", "--db", db)   # all runs are from 2025
    assert rc == 2 and "no run in the selection" in err
    rc, out, err = cli(capsys, "trend", "nosuch=tag", "--db", db)
    assert rc == 2 and err.startswith("clusterbench: error: selector")


def _noise_history(rng: np.random.Generator, level: float) -> np.ndarray:
    n = int(rng.integers(8, 41))
    cv = float(rng.choice([0.01, 0.03, 0.08]))
    x = level * (1 + rng.normal(0, cv, n))
    wild = rng.random(n) < 0.05           # now and then one run far off (a busy node)
    x[wild] *= rng.uniform(0.5, 0.9, int(wild.sum()))
    return x


def test_no_false_alarm_in_200_noise_histories_from_real_values():
    levels = [m.value for m in real_measurements(A3MEGA) if m.metric == "busbw" and m.value > 1]
    levels += [m.value for m in real_measurements(BABEL)]
    rng = np.random.default_rng(20250301)
    alarms = []
    for trial in range(200):
        x = _noise_history(rng, levels[trial % len(levels)])
        found = find_changes(x)
        if found:
            alarms.append((trial, len(x), [(c.index, round(c.relative, 3), c.p_value) for c in found]))
    assert alarms == []


@pytest.mark.parametrize("at", [3, 6, 10, 14])
def test_a_clear_step_is_found_exactly_at_its_run(at):
    levels = [m.value for m in real_measurements(BABEL) if m.params.get("kernel") == "Triad"]
    rng = random.Random(at)
    x = [levels[at % len(levels)] * (1 + rng.gauss(0, 0.02)) * (0.85 if i >= at else 1) for i in range(20)]
    found = find_changes(x)
    assert [c.index for c in found] == [at]
    assert found[0].relative == pytest.approx(-0.15, abs=0.03)


def test_scan_statistics():
    # identical values: nothing to find (no division by zero)
    assert scan_p_value([5.0] * 10) == (0.0, 1.0)
    assert find_changes([5.0] * 10) == []
    # too short for min_size on both sides
    assert find_changes([1, 2, 3, 4, 5]) == []
    # perfectly separated halves: the smallest p the permutations can give
    obs, p = scan_p_value([10] * 8 + [5] * 8, Settings(permutations=999))
    assert p == pytest.approx(1 / 1000)
    # the L1 search finds the gap even when the first value after it is the best of its level
    assert l1_interval([10, 10.1, 9.9, 10, 10.05, 8.9, 8.5, 8.4, 8.6, 8.5], 3, inner=False) == (0, 5)
    with pytest.raises(ValueError):
        find_changes([1.0, float("nan")] * 5)
    # deterministic: the same history, the same p-value
    x = list(np.random.default_rng(1).normal(0, 1, 30))
    assert scan_p_value(x) == scan_p_value(x)


def test_report_plots_the_history_and_lists_the_change(capsys, db, tmp_path):
    base = [m for m in real_measurements(A3MEGA) if m.metric == "busbw"]
    ids = store_history(db, base, HOSTS[:3], 12, factor=_busbw_step("gpu02", 7, 0.85), seed=7)
    out = tmp_path / "fleet.html"
    rc, _, err = cli(capsys, "report", "fleet=test", "-o", str(out), "--db", db)
    assert rc == 0, err
    page = out.read_text()
    assert '<h2 id="history">History</h2>' in page and "all_reduce 8G float sum -1 in 16 busbw over time" in page
    assert f"<td>{ids[('gpu02', 7)]}</td><td>2025-03-08</td>" in page
    plots = sorted(p.name for p in (tmp_path / "fleet_plots").glob("history-*.png"))
    assert len(plots) == 2   # in- and out-of-place 8 GiB rows


def test_gemm_series_of_each_stat_have_their_own_label():
    # a gemm run records tflops "best" and "median": two series, which printed as one label twice
    from clusterbench.judge.history import Series

    row = {"dtype": "fp32", "m": 256, "n": 256, "k": 256, "batch": 1}
    best = Series("gemm", "tflops", "TFLOP/s", {**row, "stat": "best"}, "vm")
    med = Series("gemm", "tflops", "TFLOP/s", {**row, "stat": "median"}, "vm")
    assert (best.label, med.label) == ("gemm fp32 256x256x256 best", "gemm fp32 256x256x256 median")
