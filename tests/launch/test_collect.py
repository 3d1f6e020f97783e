"""launch.collect: the run a launched job's ranks stored, found by its launch_id tag."""

import pytest

from clusterbench.errors import ClusterbenchError
from clusterbench.launch.collect import launched_run
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _save(db: str, launch_id: str, status: str = "complete", value: float = 1.0) -> int:
    run = Run(benchmark="coll", command=["clusterbench", "coll"], tags={"launch_id": launch_id},
              status=status, hosts=["n1", "n2"], ranks=2)
    with Store.open(db) as store:
        return store.save_run(run, [Measurement("all_reduce", "busbw", value, "GB/s", {"bytes": 8})])


def test_the_last_run_of_the_launch_with_its_measurements(db):
    _save(db, "other")
    _save(db, "abc", value=1.0)
    last = _save(db, "abc", status="failed", value=2.0)
    run, ms = launched_run(db, "abc", "Slurm job 7 COMPLETED (exit 0:0)")
    assert run.id == last and run.status == "failed"
    assert [m.value for m in ms] == [2.0]


def test_a_launch_that_stored_nothing_says_what_ended_and_where(db):
    _save(db, "other")
    with pytest.raises(ClusterbenchError) as e:
        launched_run(db, "abc", "Slurm job 7 FAILED (exit 1:0)")
    assert str(e.value) == f"Slurm job 7 FAILED (exit 1:0): no run was stored in {db}"
