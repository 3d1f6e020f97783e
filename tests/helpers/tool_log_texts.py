"""Real tool logs (tests/data) read or parsed by name, and the figures picked from their runs."""

from __future__ import annotations

from paths import TESTS

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.records import WARNINGS

DATA_import_stream_forms = TESTS / "data" / "babelstream"


def runs_import_stream_forms(name: str):
    return parse_text((DATA_import_stream_forms / name).read_text(), name=name)


def values(runs: list, metric: str) -> list[float]:
    return [m.value for r in runs for m in r.measurements if m.metric == metric]


DATA_import_net_tools = TESTS / "data"


DATA_ingest_malformed = TESTS / "data"


SWEEP = DATA_ingest_malformed / "transferbench" / "docs-presets-sweep-v1.67.txt"


DATA_ingest_common = TESTS / "data"


DATA_tool_logs = TESTS / "data"


def text_tool_logs(tool: str, name: str) -> str:
    return (DATA_tool_logs / tool / name).read_text()


def records(runs: list) -> list[tuple]:
    return [(m.benchmark, m.metric, m.value, m.params) for r in runs for m in r.measurements]


def warnings(run) -> list[str]:
    return run.run.meta.get(WARNINGS, [])


DATA_more_tool_logs = TESTS / "data"


def runs_more_tool_logs(tool: str, name: str) -> list:
    text = (DATA_more_tool_logs / tool / name).read_text()
    assert detect_tool(text) == tool
    return parse_text(text, name=name)


def one(ms: list, metric: str, **params: object):
    found = [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, params, found)
    return found[0]
