"""judge.baseline.known_good and read_known_good: the complete runs a baseline is built from, read
from the database."""

import pytest
from small_fleet import save_fleet

from clusterbench.errors import UsageError
from clusterbench.judge.baseline import create_baseline, known_good, read_known_good
from clusterbench.judge.profiles import dump_profile
from clusterbench.judge.select import rows_of
from clusterbench.records import FAILED, INCOMPLETE, Measurement, Run
from clusterbench.store import Store


def _save(db, status):
    with Store.open(db) as s:
        return s.save_run(Run("stream", hosts=["h"], status=status),
                          [Measurement("stream", "bandwidth", 1.0, "GB/s", {"kernel": "Triad"})])


def test_complete_runs_kept_the_others_left_out(db):
    for status in ("complete", FAILED, "complete", INCOMPLETE):
        _save(db, status)
    good, left_out = known_good(db, ["1-4"])
    assert [r.id for r, _ in good] == [1, 3] and all(len(ms) == 1 for _, ms in good)
    assert [(r.id, r.status) for r in left_out] == [(2, FAILED), (4, INCOMPLETE)]


def test_no_complete_run_is_a_usage_error(db):
    _save(db, FAILED)
    with pytest.raises(UsageError, match=r"^none of run\(s\) 1 is complete"):
        known_good(db, ["last"])


@pytest.mark.parametrize("metrics", [(), ("busbw", "time_us"), ("tflops",)])
def test_a_baseline_from_the_records_it_reads_is_the_one_from_every_record(db, metrics):
    """``read_known_good`` makes only the records of the metrics a baseline is of (and reads the
    device labels of the rest): the profile, its hardware and every message are what the whole
    runs give (``known_good``), on a fleet of hosts on two kinds of GPU with a failed run."""
    save_fleet(db, nights=2)
    good, left_out = known_good(db, ["1-8"])
    old = create_baseline(rows_of(good), name="fleet", metrics=metrics, run_ids=[r.id for r, _ in good])
    read = read_known_good(db, ["1-8"], metrics=metrics)
    new = create_baseline(rows_of(read.loaded), name="fleet", metrics=metrics,
                          run_ids=[r.id for r, _ in read.loaded], devices=read.devices)
    assert [r.id for r, _ in read.loaded] == [r.id for r, _ in good] and read.left_out == left_out
    assert sum(map(len, (ms for _, ms in read.loaded))) < sum(map(len, (ms for _, ms in good)))
    assert old.profile.hardware is not None and len(old.profile.hardware.devices) == 2
    assert dump_profile(new.profile) == dump_profile(old.profile)
    assert (new.left_out, new.noisy, new.not_positive) == (old.left_out, old.noisy, old.not_positive)


def test_reading_only_failed_runs_is_the_same_usage_error(db):
    _save(db, FAILED)
    with pytest.raises(UsageError, match=r"^none of run\(s\) 1 is complete"):
        read_known_good(db, ["last"])
