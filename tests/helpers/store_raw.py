"""A results database as it is on disk, read outside clusterbench (sqlite3), and the rows written
to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clusterbench.records import Measurement


def _ms(n: int) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", float(i), "GB/s", {"bytes": 8 << i}) for i in range(n)]


def _runs(db: Path) -> list[tuple[int, int]]:
    """(run id, measurements stored) of every run, read outside clusterbench."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT r.id, coalesce((SELECT sum(count) FROM measurement_packs p"
                            " WHERE p.run_id = r.id), 0) FROM runs r ORDER BY r.id").fetchall()
    finally:
        conn.close()
