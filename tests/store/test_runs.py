"""store.runs: the reads and writes of stored runs that commands make, each opening the
database itself."""

import pytest

from clusterbench.errors import StoreError, UsageError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import (
    check_writable,
    delete_runs,
    list_runs,
    read_runs,
    runs_tagged,
    save_run,
    select_runs,
    tag_runs,
)


def _run(benchmark="coll", **tags):
    return Run(benchmark=benchmark, command=["clusterbench", benchmark], tags=dict(tags), hosts=["h1"], ranks=1)


def _m(benchmark="all_reduce", value=1.0):
    return Measurement(benchmark, "busbw", value, "GB/s", {"bytes": 8})


@pytest.fixture
def filled(any_db):
    """Three runs, in an SQLite file and in a PostgreSQL database."""
    save_run(any_db, _run(team="a"), [_m(value=1.0), _m(value=2.0)])
    save_run(any_db, _run("stream", team="b"), [_m("stream")])
    save_run(any_db, _run(team="a"), [])
    return any_db


def test_read_runs_gives_each_selected_run_once_with_its_measurements(filled):
    got = read_runs(filled, ["team=a", "1", "last"])
    assert [(r.id, [m.value for m in ms]) for r, ms in got] == [(1, [1.0, 2.0]), (3, [])]
    assert [r.id for r in select_runs(filled, ["team=b"])] == [2]
    with pytest.raises(UsageError, match="matches no run"):
        read_runs(filled, ["team=c"])


def test_reading_never_makes_a_database(tmp_path):
    missing = tmp_path / "typo.db"
    with pytest.raises(StoreError):
        read_runs(str(missing), ["last"])
    with pytest.raises(StoreError):
        list_runs(str(missing))
    assert not missing.exists()


def test_list_runs_newest_first_with_counts_and_benchmarks(filled):
    listed = list_runs(filled)
    assert [(x.run.id, x.measurements, x.benchmarks) for x in listed] == \
        [(3, 0, []), (2, 1, ["stream"]), (1, 2, ["all_reduce"])]
    assert [x.run.id for x in list_runs(filled, limit=1)] == [3]
    assert [x.run.id for x in list_runs(filled, benchmark="stream")] == [2]


def test_tag_and_delete_act_on_all_selected_runs(filled):
    assert tag_runs(filled, ["team=a"], {"checked": "yes"}) == [1, 3]
    assert [r.id for r in runs_tagged(filled, {"checked": "yes"})] == [1, 3]
    assert delete_runs(filled, ["team=a"]) == [1, 3]
    with Store.open_to_read(filled) as store:
        assert [r.id for r in store.list_runs()] == [2]
    with pytest.raises(UsageError):   # a selector that picks nothing deletes nothing
        delete_runs(filled, ["2", "99"])
    with Store.open_to_read(filled) as store:
        assert [r.id for r in store.list_runs()] == [2]


def test_writes_to_a_missing_database_are_refused_but_check_writable_makes_one(tmp_path):
    missing = str(tmp_path / "new.db")
    with pytest.raises(StoreError):
        delete_runs(missing, ["1"])
    with pytest.raises(StoreError):
        tag_runs(missing, ["1"], {"a": "b"})
    check_writable(missing)
    with Store.open_to_read(missing) as store:
        assert store.list_runs() == []


def test_listed_and_read_runs_stream_in_chunks_with_the_same_runs(db):
    from clusterbench.errors import UsageError
    from clusterbench.records import Measurement, Run
    from clusterbench.store import Store
    from clusterbench.store.runs import iter_listed, iter_read_runs, list_runs, read_runs

    with Store.open(db) as s:
        for i in range(7):
            s.save_run(Run("coll", hosts=[f"h{i}"], tags={"k": str(i % 2)}),
                       [Measurement("all_reduce", "busbw", float(i), "GB/s", {"bytes": 8})] * (i % 3))
        chunks = list(s.iter_list_runs(limit=5, chunk=2))
    assert [[r.id for r in c] for c in chunks] == [[7, 6], [5, 4], [3]]
    assert [(x.run.id, x.measurements, x.benchmarks) for x in iter_listed(db, limit=6)] == \
        [(x.run.id, x.measurements, x.benchmarks) for x in list_runs(db, limit=6)]
    assert [(r.id, ms) for r, ms in iter_read_runs(db, ["k=1", "2-3"], chunk=2)] == \
        [(r.id, ms) for r, ms in read_runs(db, ["k=1", "2-3"])]
    # an error is raised when asked, not when the first run is
    with pytest.raises(UsageError):
        iter_read_runs(db, ["nosuch=tag"])
    with pytest.raises(UsageError):
        iter_listed(db, benchmark="")
