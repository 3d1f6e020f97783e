"""A writer process for the concurrency tests: stores RUNS runs of MEAS measurements each
through the Store API, tagged with its name and the run's index.

    python store_writer.py DB NAME HOST RUNS MEAS [--hang-after N]

``--hang-after N``: in the first run, after N measurements, print ``HANGING`` and sleep inside
the open transaction, so a test can kill the process mid-run.
"""

from __future__ import annotations

import sys
import time

from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def rows(n: int, hang_after: int | None):
    for j in range(n):
        if hang_after is not None and j == hang_after:
            print("HANGING", flush=True)
            time.sleep(600)
        yield Measurement("all_reduce", "busbw", 1.0 + j, "GB/s", {"bytes": 8 << (j % 30), "j": j})


def main(argv: list[str]) -> None:
    db, name, host, runs, meas = argv[:5]
    hang_after = int(argv[6]) if len(argv) > 6 and argv[5] == "--hang-after" else None
    with Store.open(db) as store:
        for i in range(int(runs)):
            store.save_run(Run(benchmark="coll", hosts=[host], ranks=1, tags={"writer": name, "i": str(i)}),
                           rows(int(meas), hang_after if i == 0 else None))


if __name__ == "__main__":
    main(sys.argv[1:])
