"""judge.ab.compare_selections: compare's A/B of two selections read from the database."""

import random

import pytest
from small_fleet import save_fleet

from clusterbench.errors import UsageError
from clusterbench.judge import ab as ab_module
from clusterbench.judge.ab import compare_selections
from clusterbench.judge.compare import INSUFFICIENT, SAME, WORSE
from clusterbench.records import INTERRUPTED, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import loaded

SETTINGS = dict(alpha=0.05, min_effect=0.02, max_cv=0.10, adjust_by="none")


def _save(db, side, value, rng, status="complete", extra=()):
    ms = [Measurement("stream", "bandwidth", value * (1 + rng.gauss(0, 0.002)), "GB/s", {"kernel": k})
          for k in ("Copy", "Triad")]
    ms += list(extra)
    with Store.open(db) as s:
        return s.save_run(Run("stream", hosts=["h"], tags={"side": side}, status=status), ms)


@pytest.fixture
def two_sides(db):
    rng = random.Random(7)
    for _ in range(5):
        _save(db, "a", 100.0, rng)
        _save(db, "b", 80.0, rng, extra=[Measurement("gemm", "tflops", 1.0, "TFLOP/s", {"m": 1})])
    return db


def test_a_drop_is_worse_and_rows_of_one_side_are_counted(two_sides):
    ab = compare_selections(two_sides, "side=a", "side=b", **SETTINGS)
    assert ab.runs_a == [1, 3, 5, 7, 9] and ab.runs_b == [2, 4, 6, 8, 10]
    assert ab.counts()[WORSE] == 2 and [c.status for c in ab.changes()] == [WORSE, WORSE]
    assert (ab.only_in_a, ab.only_in_b) == (0, 1) and ab.family == 2 and ab.partial is None


def test_only_the_benchmark_and_metric_asked_for(two_sides):
    ab = compare_selections(two_sides, "side=a", "side=b", benchmark="stream", metric="bandwidth", **SETTINGS)
    assert len(ab.rows) == 2 and (ab.only_in_a, ab.only_in_b) == (0, 0)
    with pytest.raises(UsageError, match="share no"):
        compare_selections(two_sides, "side=a", "side=b", benchmark="gemm", **SETTINGS)


def test_selections_that_share_a_run_are_refused(two_sides):
    with pytest.raises(UsageError, match="share runs"):
        compare_selections(two_sides, "side=a", "1", **SETTINGS)


def test_too_few_values_and_interrupted_runs_are_said(db):
    rng = random.Random(1)
    _save(db, "a", 100.0, rng)
    _save(db, "b", 100.0, rng, status=INTERRUPTED)
    ab = compare_selections(db, "side=a", "side=b", **SETTINGS)
    assert set(ab.counts()) == {WORSE, "better", SAME, "noisy", INSUFFICIENT}
    assert ab.counts()[INSUFFICIENT] == 2 and ab.changes() == []
    assert ab.partial is not None and "run(s) 2 was interrupted" in ab.partial


@pytest.mark.parametrize("adjust_by", ["fdr", "none"])
def test_a_fleet_compares_as_with_a_dict_of_params_per_record(db, monkeypatch, adjust_by):
    """Records read with shared params dicts and their group keys made once per dict give the
    rows, counts and family that private records, each keyed alone, give: two nights of hosts
    with one host slower on the second, and a failed run."""
    save_fleet(db, nights=3)
    settings = {**SETTINGS, "adjust_by": adjust_by}

    def compared():
        ab = compare_selections(db, "night=0", "night=2", **settings)
        return [c.to_dict() for c in ab.rows], ab.counts(), ab.family, ab.only_in_a, ab.only_in_b, ab.runs_a

    new = compared()
    monkeypatch.setattr(ab_module, "loaded", lambda store, selectors, since, shared=False:
                        loaded(store, selectors, since))
    assert compared() == new
    assert new[1][SAME] and new[2] > 1
