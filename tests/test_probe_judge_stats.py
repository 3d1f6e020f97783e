"""Statistics commands checked against independent computations (scipy, plain arithmetic) and at
their edges: trend's --min-effect floor, trend's time order, baseline and scaling near the
largest float, and compare's Welch numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from judge_helpers import cli, save
from scipy import stats as sps

from clusterbench.judge.changepoint import Settings, find_changes
from clusterbench.judge.scaling import Point, scaling_table
from clusterbench.records import Measurement

PARAMS = {"bytes": 1 << 30, "count": 1 << 28, "dtype": "float", "redop": "sum", "root": -1,
          "placement": "in", "ranks": 16}
NOISE = [0.01, -0.01, 0.02, -0.02, 0.0, 0.01]


def _busbw(value: float) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s", dict(PARAMS))]


@pytest.mark.parametrize(("before", "after"), [(100.0, 98.02), (98.02, 100.0), (100.0, 97.9), (97.9, 100.0)])
def test_min_effect_is_relative_to_the_level_before(before: float, after: float) -> None:
    """A change is reported exactly when |after - before| / |before| (what it says as its
    change_pct) reaches --min-effect, up or down alike."""
    x = [before + e for e in NOISE] + [after + e for e in NOISE]
    found = find_changes(x, Settings(min_effect=0.02))
    b, a = float(np.median(x[:6])), float(np.median(x[6:]))
    expected = abs(a - b) / abs(b) >= 0.02
    assert bool(found) == expected, (found, abs(a - b) / abs(b))
    for c in found:
        assert abs(c.relative) >= 0.02
        assert c.index == 6 and c.before == pytest.approx(b) and c.after == pytest.approx(a)


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


def test_baseline_near_the_largest_float_writes_a_profile_validate_loads(capsys, db, tmp_path) -> None:
    for _ in range(2):
        save(db, _busbw(1.7e308), tags={"g": "x"})
    profile = str(tmp_path / "big.yaml")
    code, _, err = cli(capsys, "baseline", "create", "g=x", "-o", profile, "--db", db)
    assert code == 0, err
    code, out, err = cli(capsys, "validate", "g=x", "--profile", profile, "--json", "--db", db)
    assert code == 0, err
    crit = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "criterion"]
    assert [c["status"] for c in crit] == ["pass"]


def test_baseline_bound_is_pct_of_the_median_of_run_medians(capsys, db, tmp_path) -> None:
    runs = [[100.0, 104.0, 90.0], [101.0, 99.0], [97.0, 98.0, 99.5, 100.5]]
    for values in runs:
        save(db, [m for v in values for m in _busbw(v)], tags={"g": "b"})
    profile = tmp_path / "b.yaml"
    code, out, err = cli(capsys, "baseline", "create", "g=b", "-o", str(profile), "--pct", "85", "--json",
                         "--db", db)
    assert code == 0, err
    import yaml
    crit = yaml.safe_load(profile.read_text())["criteria"]
    expected = float(np.median([np.median(v) for v in runs]))
    assert len(crit) == 1 and crit[0]["baseline"] == pytest.approx(expected) and crit[0]["pct"] == 85


def test_scaling_means_near_the_largest_float_stay_finite() -> None:
    rows = scaling_table([Point("g", 1, 1, 1.7e308), Point("g", 1, 1, 1.7e308), Point("g", 2, 2, 1.7e308)])
    assert [r.throughput for r in rows] == [1.7e308, 1.7e308]
    assert rows[1].speedup == 1.0 and rows[1].efficiency == 0.5


def test_compare_welch_agrees_with_scipy_text_and_json(capsys, db) -> None:
    a = [100.0, 101.5, 99.2, 100.7, 98.9]
    b = [95.1, 96.0, 94.2, 95.5, 96.3]
    for v in a:
        save(db, _busbw(v), tags={"env": "a"})
    for v in b:
        save(db, _busbw(v), tags={"env": "b"})
    code, out, err = cli(capsys, "compare", "env=a", "env=b", "--json", "--db", db)
    assert code == 0, err
    row = next(d for d in map(json.loads, out.splitlines()) if d["kind"] == "comparison")
    ref = sps.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert row["ci95_low"] == pytest.approx(ci.low, rel=1e-9)
    assert row["ci95_high"] == pytest.approx(ci.high, rel=1e-9)
    assert row["delta_pct"] == pytest.approx((np.mean(b) - np.mean(a)) / np.mean(a) * 100)
    assert row["status"] == "worse"
    code, text, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db)
    assert f"[{ci.low:+.3g}, {ci.high:+.3g}]" in text and f"{ref.pvalue:.3g}" in text


def test_outliers_near_the_largest_float_still_have_a_centre() -> None:
    """The median of an even count of values near 1.7e308 is finite, so a slow one is flagged."""
    from clusterbench.judge.outliers import flag_outliers

    found = flag_outliers({"a": 1.7e308, "b": 1.7e308, "c": 1.6e308, "d": 1.0e308})
    assert [o.key for o in found] == ["d"]
    assert found[0].median == pytest.approx(1.65e308)


def test_baseline_pct_above_100_is_refused(capsys, tmp_path):
    """A --pct above 100 wrote a bandwidth bound above the median: validating the runs the
    baseline came from failed half of them."""
    db = tmp_path / "r.db"
    seed = Path(__file__).parent / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
    assert cli(capsys, "import", seed, "--db", db)[0] == 0
    code, _, err = cli(capsys, "baseline", "create", "1", "-o", tmp_path / "p.yaml", "--pct", "150", "--db", db)
    assert code == 2 and "at most 100" in err and len(err.strip().splitlines()) == 1
