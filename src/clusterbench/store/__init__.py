"""The results store: every run with its context, in SQLite (the default, one file) or
PostgreSQL (one database a whole cluster writes to). Callers import from here; the parts live in:

- ``store.py``: ``Store``, the shared SQL that writes and reads runs;
- ``open.py``: where a database is and how one is opened (``connect``, ``default_db_path``,
  ``describe``);
- ``batch.py``: the bulk writer of one transaction's runs; ``run_columns.py``: a run's row;
- ``packs.py``: how measurements are packed into rows; ``nul.py``: the NUL policy;
- ``selectors.py``: the selector grammar; ``selector_sql.py``: a selector as SQL;
- ``migrations.py``: the schema; ``backend.py``, ``sqlite.py``, ``postgres.py``: the engines;
- ``location.py``, ``fstype.py``, ``warn.py``, ``copy.py``: ``--db``, its file system, warnings,
  ``results copy``.
"""

from __future__ import annotations

from clusterbench.records import TelemetrySample
from clusterbench.store.open import connect, default_db_path, describe
from clusterbench.store.packs import MeasurementRow, Pack, Packs
from clusterbench.store.store import Store

__all__ = ["MeasurementRow", "Pack", "Packs", "Store", "TelemetrySample", "connect", "default_db_path",
           "describe"]
