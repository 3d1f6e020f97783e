"""The NUL policy of the results store: what a run may hold of the character ``\\x00``.

PostgreSQL's text columns cannot hold it (SQLite's can). Text stored as JSON (hosts, errors,
meta, params, metric names) has it escaped and is kept on both; text stored as it is (tags, the
run's benchmark, source, times and status, the benchmarks a run measured, telemetry labels) is
refused on both, so that a run stores the same way wherever it goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from clusterbench.errors import UsageError
from clusterbench.records import Run, TelemetrySample
from clusterbench.store.packs import Pack

NUL = "\x00"


def refuse_nul(text: object, what: str) -> None:
    if isinstance(text, str) and NUL in text:
        raise UsageError(f"{what} holds a NUL character (\\x00), which a results database cannot store")


def refuse_nul_in_tags(tags: Mapping[str, object]) -> None:
    for key, value in tags.items():
        refuse_nul(key, f"tag name {key!r}")
        refuse_nul(str(value), f"tag {key!r}")


def refuse_nul_in_run(run: Run, uid: str, telemetry: Sequence[TelemetrySample]) -> None:
    """A one-line UsageError naming the first raw-text field of ``run`` that holds a NUL."""
    refuse_nul_in_tags(run.tags)
    for what, value in (("benchmark", run.benchmark), ("source", run.source), ("started_at", run.started_at),
                        ("ended_at", run.ended_at), ("status", run.status), ("uid", uid)):
        refuse_nul(value, f"run {what} {value!r}")
    for s in telemetry:
        for what, value in (("host", s.host), ("device", s.device), ("metric", s.metric), ("unit", s.unit)):
            refuse_nul(value, f"telemetry {what} {value!r}")


def refuse_nul_in_pack(pack: Pack, benchmarks: Iterable[str]) -> None:
    for b in benchmarks:
        refuse_nul(b, f"benchmark {b!r}")
    # a rows pack is JSON, where a NUL is escaped; a table pack keeps a log's tokens as printed
    if NUL in pack.body:
        line = next(t for t in pack.body.splitlines() if NUL in t)
        raise UsageError(f"measurement row {line.strip()[:80]!r} holds a NUL character (\\x00), which a "
                         f"results database cannot store")
