"""A profile whose failing criterion names a hostile node, for the drain tests: nothing it names
may run."""

from __future__ import annotations

import json
import os

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

PWNED = f"/tmp/cb-i16-pwned-{os.getpid()}"


EVIL = f'Triad "fast" ; $(touch {PWNED}) `touch {PWNED}`'


PROFILE = f"""name: drain-test
criteria:
  - name: {json.dumps(EVIL)}
    benchmark: stream
    metric: bandwidth
    params: {{kernel: Triad}}
    op: ">="
    value: 100
    unit: GB/s
"""


def _stream_runs(db: str, values: dict[str, float], tag: str) -> None:
    with Store.open(db) as s:
        for host, v in values.items():
            s.save_run(Run("stream", hosts=[host], tags={"check": tag}),
                       [Measurement("stream", "bandwidth", v, "GB/s", {"kernel": "Triad", "device": "cpu"})])
