"""The real tool logs under tests/data, found by the importers that read them: a folder per tool
the importer registry names (``ingest.TOOLS``), so a new importer's logs are checked with the rest."""

from __future__ import annotations

from paths import DATA

from clusterbench.ingest import TOOLS

TOOL_DIRS = [tool for tool in TOOLS if (DATA / tool).is_dir()]

LOGS = sorted(p for d in TOOL_DIRS for p in (DATA / d).iterdir() if p.name != "README.md")
