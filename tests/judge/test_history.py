"""judge.history.stored_trend: trend's series of stored runs, read from the database."""

import math

import pytest
from fleet_helpers import night

from clusterbench.errors import UsageError
from clusterbench.judge.changepoint import Settings
from clusterbench.judge.history import REGRESSION, Point, Series, detect, stored_trend
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _night(db, day, value, host="h1", size=1 << 30):
    ms = [Measurement("all_reduce", "busbw", value, "GB/s", {"bytes": size, "placement": "out", "host": host}),
          Measurement("all_reduce", "busbw", value * 10, "GB/s", {"bytes": 1 << 20, "placement": "out",
                                                                    "host": host})]
    run = Run("coll", hosts=[host], started_at=f"2025-01-{day:02d}T03:00:00.000Z")
    with Store.open(db) as s:
        return s.save_run(run, ms)


@pytest.fixture
def nights(db):
    for day in range(1, 21):
        _night(db, day, 100.0 + (day % 3) * 0.1 if day <= 10 else 70.0 + (day % 3) * 0.1)
    return db


def test_a_drop_is_an_open_regression(nights):
    t = stored_trend(nights, [], settings=Settings(min_size=5))
    [s] = t.series
    assert len(t.runs) == 20 and len(s.points) == 20 and s.row["bytes"] == 1 << 30   # the largest size
    assert t.regressions() == 1 and [x.host for x in t.open_regressions()] == ["h1"]
    [(series, change)] = t.changes()
    assert series.kind(change) == REGRESSION and series.points[change.index].run == 11
    assert t.too_short() == [] and t.points_left_out() == 0


def test_rows_at_a_size_and_since_a_date(nights):
    t = stored_trend(nights, [], "2025-01-15", size="1M")
    assert [r.id for r in t.runs] == list(range(15, 21))
    assert t.series[0].row["bytes"] == 1 << 20 and t.too_short() == t.series
    assert any("at least" in text for _, text in t.notes())


def test_nothing_to_follow_is_a_usage_error(nights):
    with pytest.raises(UsageError, match="no run in the selection since 2030-01-01"):
        stored_trend(nights, [], "2030-01-01")
    with pytest.raises(UsageError, match=r"no tflops measurement in the 20 selected run\(s\) at --bytes 8"):
        stored_trend(nights, [], metric="tflops", size="8")


def test_gemm_series_of_each_stat_have_their_own_label():
    # a gemm run records tflops "best" and "median": two series, which printed as one label twice
    from clusterbench.judge.history import Series

    row = {"dtype": "fp32", "m": 256, "n": 256, "k": 256, "batch": 1}
    best = Series("gemm", "tflops", "TFLOP/s", {**row, "stat": "best"}, "vm")
    med = Series("gemm", "tflops", "TFLOP/s", {**row, "stat": "median"}, "vm")
    assert (best.label, med.label) == ("gemm fp32 256x256x256 best", "gemm fp32 256x256x256 median")


def test_detect_leaves_out_points_that_are_not_finite():
    s = Series("stream", "bandwidth", "GB/s", {"kernel": "Triad"}, "h1",
               points=[Point(i, night(i), v) for i, v in enumerate([1.0, math.inf, 2.0, -math.inf, 3.0])])
    (out,) = detect([s])   # raised ValueError
    assert [p.run for p in out.points] == [0, 2, 4] and [p.run for p in out.left_out] == [1, 3]


def _gpu_nights(db):
    """Three hosts of two GPUs, twelve nights; host h2's GPU 1 drops from night 7, one night
    measured only GPU 0, and every run tagged so a selector can pick them all."""
    with Store.open(db) as s:
        for day in range(1, 13):
            for host in ("h1", "h2", "h3"):
                devices = ["0"] if (day, host) == (4, "h3") else ["0", "1"]
                ms = [Measurement("stream", "bandwidth", (80.0 if (host, d) == ("h2", "1") and day >= 7 else 100.0)
                                  + day % 3 * 0.1, "GB/s", {"kernel": "Triad", "device": d, "host": host})
                      for d in devices]
                ms.append(Measurement("all_reduce", "busbw", 50.0 + day % 2, "GB/s", {"bytes": 1 << 30, "host": host}))
                s.save_run(Run("run", hosts=[host], started_at=f"2025-02-{day:02d}T03:00:00.000Z",
                               tags={"fleet": "x"}), ms)
    return db


def _shape(t):
    return ([(r.id, r.started_at) for r in t.runs],
            [(s.host, s.device, s.benchmark, s.metric, sorted(s.row.items()), [(p.run, p.started_at, p.value)
              for p in s.points], [(c.index, c.before, c.after) for c in s.changes]) for s in t.series])


@pytest.mark.parametrize("by", ["host", "device"])
@pytest.mark.parametrize("window", [4, 60])
def test_every_run_s_trend_read_at_once_equals_the_per_host_read(any_db, by, window):
    db = _gpu_nights(any_db)
    s = Settings(min_size=3)
    every = stored_trend(db, [], by=by, window=window, settings=s)
    picked = stored_trend(db, ["fleet=x"], by=by, window=window, settings=s)
    assert _shape(every) == _shape(picked)
    assert len(every.series) == 6   # by host: Triad and busbw a host; by device: Triad a GPU
    if window == 60 and by == "device":
        assert [x.host for x in every.open_regressions()] == ["h2"]
