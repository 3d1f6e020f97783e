"""`clusterbench trend` at the edges of what its test can say: values that are not finite or
huge, series too short for any p-value to reach alpha, an alpha no permutation count resolves,
and a level that starts at 0."""

from __future__ import annotations

import itertools
import math
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fleet_helpers import night
from judge_helpers import cli, json_lines

from clusterbench.judge.changepoint import (
    Settings,
    _candidates,
    _max_z,
    find_changes,
    runs_needed,
    smallest_p_value,
)
from clusterbench.judge.history import Point, Series, detect, median
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

ROOT = Path(__file__).resolve().parent.parent


def _history(db: str, values: list[float | list[float]], metric: str = "bandwidth", unit: str = "GB/s",
             benchmark: str = "stream", params: dict | None = None) -> list[int]:
    """One run per night on host h1 (stream Triad by default), with these values (a list: one
    per GPU)."""
    ids = []
    with Store.open(db) as store:
        for i, v in enumerate(values):
            per_gpu = v if isinstance(v, list) else [v]
            ms = [Measurement(benchmark, metric, x, unit, {**(params or {"kernel": "Triad"}), "device": str(d)})
                  for d, x in enumerate(per_gpu)]
            ids.append(store.save_run(Run("stream", hosts=["h1"], started_at=night(i)), ms))
    return ids


def _step(n: int, at: int, before: float = 100.0, after: float = 80.0) -> list[float]:
    """A clean step with a little spread on each side (no ties)."""
    return [(before if i < at else after) + 0.01 * (i % 5) for i in range(n)]


# -- values that are not finite, or huge ------------------------------------------------------

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


def test_detect_leaves_out_points_that_are_not_finite():
    s = Series("stream", "bandwidth", "GB/s", {"kernel": "Triad"}, "h1",
               points=[Point(i, night(i), v) for i, v in enumerate([1.0, math.inf, 2.0, -math.inf, 3.0])])
    (out,) = detect([s])   # raised ValueError
    assert [p.run for p in out.points] == [0, 2, 4] and [p.run for p in out.left_out] == [1, 3]


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


def test_huge_levels_are_found_without_overflow():
    # np.median of two 1.7e308 is inf: the levels came back infinite (null in --json)
    (c,) = find_changes([1.7e308] * 6 + [0.8e308] * 6)
    assert (c.index, c.before, c.after) == (6, 1.7e308, 0.8e308)
    assert c.relative == pytest.approx(-0.9 / 1.7)
    # the same series scaled down finds the same change at the same p-value
    (small,) = find_changes([1.7] * 6 + [0.8] * 6)
    assert (small.index, small.p_value) == (c.index, c.p_value)


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


# -- how many runs a change needs -------------------------------------------------------------

@pytest.mark.parametrize("n", [6, 7, 8, 9])
def test_smallest_p_value_is_the_exact_chance_of_the_cleanest_step(n):
    """Over every order of n ranks, the share whose largest standardized U reaches that of a
    clean step is q = 2 / C(2m, m), as smallest_p_value assumes."""
    i, j = _candidates(n, 3, inner=False)
    k = j - i
    var = k * (n - k) / 12.0 * (n + 1)
    perms = np.array(list(itertools.permutations(range(1, n + 1))), dtype=float)
    observed = float(_max_z(np.arange(1, n + 1, dtype=float)[None, :], i, j, var)[0])
    q = float(np.mean(_max_z(perms, i, j, var) >= observed - 1e-9))
    m = n // 2
    assert q == pytest.approx(2 / math.comb(2 * m, m)) and smallest_p_value(n) == pytest.approx(q)


@pytest.mark.parametrize("alpha", [0.1, 0.05, 0.01, 0.005, 0.002])
def test_runs_needed_is_tight(alpha):
    s = Settings(alpha=alpha)
    needed = runs_needed(s)
    assert needed is not None and needed >= 2 * s.min_size
    # the cleanest step one run shorter shows nothing; at the length needed it is found
    assert find_changes(_step(needed - 1, (needed - 1) // 2), s) == []
    assert [c.index for c in find_changes(_step(needed, needed // 2), s)] == [needed // 2]


def test_runs_needed_at_the_default_and_the_floor():
    assert runs_needed() == 12   # a 10-run series: 2/252 > 0.005
    assert runs_needed(Settings(min_size=10)) == 20
    assert runs_needed(Settings(alpha=0.001)) is None   # p never below 1/2000 = alpha / 2


def test_the_docs_table_is_what_the_code_computes():
    doc = (ROOT / "docs" / "judge.md").read_text()
    head = re.search(r"^\| `--alpha` \|(.*)\|$", doc, re.M)
    runs = re.search(r"^\| runs \|(.*)\|$", doc, re.M)
    assert head and runs
    alphas = [float(a.split()[0]) for a in head.group(1).split("|")]
    needed = [int(r) for r in runs.group(1).split("|")]
    assert needed == [runs_needed(Settings(alpha=a)) for a in alphas]


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


def test_the_report_lists_series_too_short_to_show_a_change(capsys, db, tmp_path):
    _history(db, _step(8, 4))
    out = tmp_path / "r.html"
    rc, _, err = cli(capsys, "report", "1..8", "-o", str(out), "--db", db)
    assert rc == 0, err
    page = out.read_text()
    history = page[page.index('<h2 id="history">'):]
    # "No change of level in any series" alone read as a stable history
    assert "No change of level in any series" in history
    assert "<li>h1 stream Triad bandwidth: 8 runs: at least 12 are needed to detect a change at alpha 0.01</li>" \
        in history


def test_a_change_off_a_level_near_zero_keeps_its_percentage_short():
    from clusterbench.cli.commands.trend import _change_text
    from clusterbench.judge.changepoint import Change

    s = Series("stream", "bandwidth", "GB/s", {"kernel": "Triad"}, "h1",
               points=[Point(i, night(i), 1e-300 if i < 6 else 1.0) for i in range(12)])
    text = _change_text(s, Change(6, 1e-300, 1.0, 0.001, 9.0))
    assert "+1e+302%" in text and len(text) < 160
    # ordinary changes read as before
    assert "-20.0% " in _change_text(s, Change(6, 100.0, 80.0, 0.001, 9.0))
