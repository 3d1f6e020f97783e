"""The run a launched job's ranks stored, found by the ``launch_id`` tag the launcher gave
their command line (``launch slurm --submit --wait`` shows it once the job has ended)."""

from __future__ import annotations

from clusterbench.errors import ClusterbenchError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store, describe
from clusterbench.store import location as loc


def launched_run(db: str | None, launch_id: str, what: str) -> tuple[Run, list[Measurement]]:
    """The last run tagged ``launch_id=LAUNCH_ID`` in ``db``, with its measurements;
    ClusterbenchError saying ``what`` ended (the job, its state) when the ranks stored none."""
    with Store.open(db) as store:
        runs = store.runs_with_tags({"launch_id": launch_id})
        if not runs:
            raise ClusterbenchError(f"{what}: no run was stored in {db}")
        run = runs[-1]
        return run, store.measurements(run.id)


def check_stored(db: str, launch_id: str, what: str) -> None:
    """A launcher that exited 0 while rank 0 stored nothing has measured nothing: an error, not
    a success (the ranks never ran the command, or stored elsewhere)."""
    where = loc.parse(db)
    found = False
    if where.kind != loc.SQLITE or (where.path is not None and where.path.is_file()):
        with Store.open_to_read(db) as store:
            found = bool(store.runs_with_tags({"launch_id": launch_id}))
    if not found:
        raise ClusterbenchError(f"{what} exited 0 but rank 0 stored no run in {describe(db)} "
                                f"(tag launch_id={launch_id}): the command did not run or stored elsewhere")
