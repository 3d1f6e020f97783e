"""``--json``: one JSON object per measurement, the public contract (see clusterbench.records)."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from clusterbench.dist.driver import Event
from clusterbench.records import Measurement, Run


def dump_line(obj: dict[str, Any], out: IO[str] | None = None) -> None:
    (out or sys.stdout).write(json.dumps(obj, default=str) + "\n")


class JsonPrinter:
    """Prints every measurement once the run is stored, so each line carries the run id."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out

    def on_event(self, event: Event) -> None:
        pass  # lines are written at the end, when the run id is known

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        out = self.out or sys.stdout
        for m in measurements:
            out.write(m.to_json(run.id) + "\n")
        out.flush()
