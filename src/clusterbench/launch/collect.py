"""The run a launched job's ranks stored, found by the ``launch_id`` tag the launcher gave
their command line (``launch slurm --submit --wait`` shows it once the job has ended)."""

from __future__ import annotations

from clusterbench.errors import ClusterbenchError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def launched_run(db: str | None, launch_id: str, what: str) -> tuple[Run, list[Measurement]]:
    """The last run tagged ``launch_id=LAUNCH_ID`` in ``db``, with its measurements;
    ClusterbenchError saying ``what`` ended (the job, its state) when the ranks stored none."""
    with Store.open(db) as store:
        runs = store.runs_with_tags({"launch_id": launch_id})
        if not runs:
            raise ClusterbenchError(f"{what}: no run was stored in {db}")
        run = runs[-1]
        return run, store.measurements(run.id)
