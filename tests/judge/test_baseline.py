"""judge.baseline.known_good: the complete runs a baseline is built from, read from the database."""

import pytest

from clusterbench.errors import UsageError
from clusterbench.judge.baseline import known_good
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
