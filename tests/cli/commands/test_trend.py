"""Tests of clusterbench.cli.commands.trend: ``clusterbench trend``."""

from __future__ import annotations

import json
import sqlite3

from fleet_helpers import night, real_measurements, store_history
from histories import A3MEGA, BABEL, HOSTS, _busbw_step, _history, _step
from hostile_text import ESC, EVIL, _cb, _clean
from json_schema import check_lines
from judge_helpers import cli, json_lines, run_cli, save
from judged_rows import ROW, _busbw, _busbw_run

from clusterbench.judge.history import Point, Series, median
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


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


def test_trend_subnormal_series_from_the_cli(tmp_path):
    db = tmp_path / "t.db"
    with Store.open(db) as store:
        for i in range(30):
            run = Run(benchmark="coll", hosts=["h1"], ranks=8, started_at=f"2025-01-01T{i // 2:02d}:{i % 2:02d}:00Z")
            store.save_run(run, [Measurement("all_reduce", "busbw", 5e-324 if i < 15 else 1e-323, "GB/s", ROW)])
    code, text, err = run_cli("trend", "--json", "--db", db)
    assert code == 0, err
    changes = [x for x in json_lines(text) if x["kind"] in ("regression", "improvement")]
    assert [(c["kind"], c["index"]) for c in changes] == [("improvement", 15)]


def test_trend_nothing_at_bytes_or_per_device_says_why(tmp_path):
    db = tmp_path / "t.db"
    with Store.open(db) as store:
        _busbw_run(store, 100.0, {})
    code, _, err = run_cli("trend", "--bytes", "1M", "--db", db)
    assert code == 2 and "at --bytes 1M" in err
    code, _, err = run_cli("trend", "--by", "device", "--db", db)
    assert code == 2 and "--by device" in err


def test_trend_orders_runs_by_instant_not_by_text(capsys, db) -> None:
    """05:00+02:00 is 03:00 UTC: before 04:00Z, though its text sorts after."""
    first = save(db, _busbw(1.0), started_at="2025-03-01T05:00:00+02:00")
    second = save(db, _busbw(2.0), started_at="2025-03-01T04:00:00.000Z")
    code, out, err = cli(capsys, "trend", "--json", "--db", db)
    assert code == 0, err
    points = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "trend_point"]
    assert [p["run"] for p in points] == [first, second]
    summary = json.loads(out.splitlines()[-1])
    assert summary["runs"] == [first, second]


def test_trend_and_baseline_escape(capsys, tmp_path):
    # a host name and a tag with terminal controls, over enough runs for a trend
    db = str(tmp_path / "trend.db")
    params = {"bytes": 1 << 20, "count": 1 << 18, "dtype": "float", "redop": "sum", "root": -1,
              "placement": "out", "ranks": 2}
    with Store.open(db) as store:
        for i in range(8):
            value = 10.0 if i < 4 else 7.0   # a step down at the fifth run
            store.save_run(Run(benchmark="all_reduce", hosts=[f"node{ESC}1"], ranks=2, tags={"owner": EVIL},
                               started_at=f"2026-11-{10 + i:02d}T00:00:00Z"),
                           [Measurement("all_reduce", "busbw", value + 0.01 * i, "GB/s", params)])
    code, out, err = _cb(capsys, ["trend", "--db", db])
    _clean(out + err)
    assert code == 0 and "node\\x1b[2J" in out
    profile = tmp_path / "base.yaml"
    # a profile name with controls is refused (it would reach every report naming the profile),
    # in a line that shows it escaped
    code, out, err = _cb(capsys, ["baseline", "create", "1-4", "--name", f"b{ESC}", "-o", str(profile), "--db", db])
    _clean(out + err)
    assert code == 2 and not profile.exists() and "b\\x1b[2J" in err, (code, out, err)
    code, out, err = _cb(capsys, ["baseline", "create", "1-4", "-o", str(profile), "--db", db])
    _clean(out + err)
    assert code == 0 and profile.exists(), (code, out, err)


def test_a_run_whose_value_is_not_finite_is_left_out_with_a_note(capsys, db):
    values: list[float | list[float]] = list(_step(16, 8))
    values[3] = 123456.0
    ids = _history(db, values)
    # A database another writer filled: JSON's 1e999 reads back as inf (the store refuses to
    # write one, so the body is edited in place).
    with sqlite3.connect(db) as con:
        con.execute("UPDATE measurement_packs SET body = replace(body, '123456.0', '1e999')")
    rc, out, err = cli(capsys, "trend", "--db", db)
    assert rc == 0, err   # was exit 1: "internal error: ValueError: a series with NaN or infinite values"
    assert f"# note: h1 stream Triad bandwidth: run {ids[3]} left out, its value is not finite (inf)" in out
    assert f"REGRESSION at run {ids[8]} " in out and " 15 " in out   # 15 points kept
    rc, out, err = cli(capsys, "trend", "--db", db, "--json")
    lines = json_lines(out)
    assert rc == 0, err
    assert ids[3] not in [d["run"] for d in lines if d["kind"] == "trend_point"]
    notes = [d for d in lines if d["kind"] == "note"]
    assert [d["run"] for d in notes] == [ids[3]] and "not finite" in notes[0]["text"]
    (reg,) = [d for d in lines if d["kind"] == "regression"]
    assert reg["run"] == ids[8] and reg["index"] == 7 and reg["points"] == 15
    assert lines[-1]["points_left_out"] == 1


def test_a_series_of_only_infinite_values_prints_no_first_or_last(capsys, db):
    _history(db, [123456.0] * 3)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE measurement_packs SET body = replace(body, '123456.0', '1e999')")
    rc, out, err = cli(capsys, "trend", "--db", db)
    assert rc == 0 and err == ""
    assert "0 runs: at least 12 are needed" in out and out.count("left out, its value is not finite") == 3


def test_two_huge_values_of_a_run_have_a_finite_median(capsys, db):
    values: list[float | list[float]] = [[100.0 + i % 3, 100.0 + i % 3] for i in range(12)]
    values[5] = [1.7e308, 1.7e308]
    ids = _history(db, values)
    rc, out, err = cli(capsys, "trend", "--db", db, "--json")
    assert rc == 0, err   # the median (a + b) / 2 overflowed to inf: internal error
    (point,) = [d for d in json_lines(out) if d["kind"] == "trend_point" and d["run"] == ids[5]]
    assert point["value"] == 1.7e308
    assert median([1.7e308, 1.7e308]) == 1.7e308 and median([-1.7e308, -1.7e308]) == -1.7e308
    assert median([1.0, 2.0]) == 1.5 and median([3.0, 1.0, 2.0]) == 2.0


def test_a_level_from_zero_has_no_percentage(capsys, db):
    # #wrong going from 0 to 5: the relative change is infinite; --json printed null for a
    # change_pct the schema said is a number, the text "+inf%"
    _history(db, [0.0] * 7 + [5.0] * 7, metric="wrong", unit="", benchmark="all_reduce",
             params={"bytes": 1024, "placement": "in"})
    rc, out, err = cli(capsys, "trend", "--metric", "wrong", "--db", db)
    assert rc == 0 and "inf" not in out and "(0.00 -> 5.00)" in out
    rc, out, err = cli(capsys, "trend", "--metric", "wrong", "--db", db, "--json")
    (reg,) = [d for d in json_lines(out) if d["kind"] == "regression"]
    assert reg["change_pct"] is None and reg["before"] == 0 and reg["after"] == 5


def test_trend_says_when_a_series_is_too_short_to_show_a_change(capsys, db):
    ids = _history(db, _step(10, 5))
    rc, out, err = cli(capsys, "trend", "--db", db)
    assert rc == 0, err
    row = next(line for line in out.splitlines() if line.startswith("h1 "))
    assert row.endswith("10 runs: at least 12 are needed to detect a change at alpha 0.01")   # was "-"
    assert "# 1 series too short to show a change at alpha 0.01: at least 12 runs are needed" in out
    rc, out, err = cli(capsys, "trend", "--db", db, "--json")
    lines = json_lines(out)
    (note,) = [d for d in lines if d["kind"] == "note"]
    assert note == {"kind": "note", "run": None,
                    "text": "h1 stream Triad bandwidth: 10 runs: at least 12 are needed to detect a change at alpha 0.01"}
    assert (lines[-1]["runs_needed"], lines[-1]["too_short"]) == (12, 1)
    # at alpha 0.05, 10 runs are enough: the step is found and nothing is said
    rc, out, err = cli(capsys, "trend", "--db", db, "--alpha", "0.05", "--json")
    lines = json_lines(out)
    assert not [d for d in lines if d["kind"] == "note"]
    assert [d["run"] for d in lines if d["kind"] == "regression"] == [ids[5]]
    assert (lines[-1]["runs_needed"], lines[-1]["too_short"]) == (10, 0)


def test_an_alpha_no_permutation_p_value_can_reach_is_refused(capsys, db):
    _history(db, _step(30, 15))
    rc, out, err = cli(capsys, "trend", "--db", db, "--alpha", "0.0005")
    assert rc == 2 and err.count("\n") == 1 and "must be more than 0.001" in err   # was: silently nothing
    rc, out, err = cli(capsys, "trend", "--db", db, "--alpha", "0.0011", "--json")
    assert rc == 0 and json_lines(out)[-1]["runs_needed"] == 16


def test_a_change_off_a_level_near_zero_keeps_its_percentage_short():
    from clusterbench.cli.commands.trend import _change_text
    from clusterbench.judge.changepoint import Change

    s = Series("stream", "bandwidth", "GB/s", {"kernel": "Triad"}, "h1",
               points=[Point(i, night(i), 1e-300 if i < 6 else 1.0) for i in range(12)])
    text = _change_text(s, Change(6, 1e-300, 1.0, 0.001, 9.0))
    assert "+1e+302%" in text and len(text) < 160
    # ordinary changes read as before
    assert "-20.0% " in _change_text(s, Change(6, 100.0, 80.0, 0.001, 9.0))
