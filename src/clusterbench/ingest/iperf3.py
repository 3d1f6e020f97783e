"""iperf3 ``-J`` output (and its text output, ``iperf3_text.py``) -> ``net`` records.

Bandwidth comes from ``end.sum_sent`` / ``end.sum_received`` (bits per second / 8 / 10^9 = GB/s),
with retransmits (TCP), jitter and loss (UDP), the stream count and the test duration. A file may
hold several JSON documents one after another (a loop appending ``-J`` output): each is a run.
``--json-stream`` (iperf 3.17+) writes one line per event instead (iperf_api.c, JSONStream_Output:
``{"event":"start","data":...}``, ``interval``, ``error``, ``end``): each ``start`` begins a run,
read as the ``-J`` document those events make up.
"""

from __future__ import annotations

import re
from typing import Any

from clusterbench.families.net.spec import BANDWIDTH, JITTER, LOST, NET, RETRANSMITS
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    finite,
    json_behind_prefixes,
    json_documents,
    json_gap_end,
    new_run,
    refuse_not_utf8,
    shown,
)
from clusterbench.ingest.iperf3_text import SIGNATURE, STAMP, parse_text_output
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import FAILED, INCOMPLETE, Measurement


def _documents(text: str) -> list[dict[str, Any]]:
    # a last document cut short (iperf3 killed mid-write): the complete ones are kept
    return [doc for doc in json_documents(text, "iperf3 JSON", cut_short=True) if isinstance(doc, dict)]


class _Fields:
    """One document's fields, each refused with its path unless of the type iperf3 writes: a
    hand-edited or damaged file would otherwise store a wrong figure or none."""

    def __init__(self, index: int) -> None:
        self.where = f"iperf3 JSON document {index}"

    def refuse(self, path: str, value: object, wanted: str) -> LogFormatError:
        return LogFormatError(f"{self.where}: {path} is {shown(value)}, not {wanted}")

    def obj(self, parent: dict[str, Any], key: str, path: str) -> dict[str, Any]:
        """An object; {} where absent or null (a run that failed before it)."""
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.refuse(path, value, "an object")
        return value

    def number(self, parent: dict[str, Any], key: str, path: str) -> float:
        value = parent[key]
        number = finite(value)
        if number is None:
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            raise self.refuse(path, value, "a finite number" if numeric else "a number")
        return number

    def text(self, parent: dict[str, Any], key: str, path: str) -> str:
        value = parent.get(key, "")
        if not isinstance(value, str):
            raise self.refuse(path, value, "text")
        return value


def _run(doc: dict[str, Any], name: str, index: int = 1) -> ImportedRun | None:
    f = _Fields(index)
    start = f.obj(doc, "start", "start")
    end = f.obj(doc, "end", "end")
    test = f.obj(start, "test_start", "start.test_start")
    run = new_run("iperf3", name)
    version = str(start.get("version", "")).replace("iperf ", "")
    run.source = f"iperf3 {version}".strip()
    if version:
        run.versions["iperf3"] = version
    if start.get("system_info"):
        run.meta["system_info"] = start["system_info"]
    timestamp = f.obj(start, "timestamp", "start.timestamp")
    if timestamp.get("time"):
        run.meta["log_started_at"] = f.text(timestamp, "time", "start.timestamp.time")
    connected = start.get("connected") or [{}]
    if not isinstance(connected, list) or not isinstance(connected[0], dict):
        raise f.refuse("start.connected", connected, "a list of objects")
    conn = connected[0]
    local = f.text(conn, "local_host", "start.connected[0].local_host")
    remote = f.text(conn, "remote_host", "start.connected[0].remote_host")
    reverse = bool(test.get("reverse"))
    src, dst = (remote, local) if reverse else (local, remote)
    run.hosts = list(dict.fromkeys(h for h in (local, remote) if h))   # a loopback test names one host
    protocol = str(test.get("protocol", "TCP")).lower()
    streams = int(f.number(test, "num_streams", "start.test_start.num_streams")) if test.get("num_streams") else 1
    params: dict[str, Any] = {"src_host": src, "dst_host": dst, "protocol": protocol, "streams": streams}
    for key, param in (("duration", "duration_s"), ("blksize", "block_bytes")):
        if test.get(key):
            f.number(test, key, f"start.test_start.{key}")
            params[param] = test[key]
    ms: list[Measurement] = []
    sides = [("sum_sent", "sent", params), ("sum_received", "received", params)]
    if not any(k in end for k, _, _ in sides):
        sides = [("sum", "sent", params)]  # UDP in older iperf3 versions
    if "sum_sent_bidir_reverse" in end or "sum_received_bidir_reverse" in end:
        # --bidir: the reverse direction (the server sending) has summaries of its own; each
        # direction shared the link with the other, so neither compares with a one-way run
        forward = {**params, "bidirectional": True, "leg": "forward"}
        back = {**forward, "src_host": dst, "dst_host": src, "leg": "reverse"}
        sides = [("sum_sent", "sent", forward), ("sum_received", "received", forward),
                 ("sum_sent_bidir_reverse", "sent", back), ("sum_received_bidir_reverse", "received", back)]
    for key, side, base in sides:
        s = f.obj(end, key, f"end.{key}")
        if "bits_per_second" not in s:
            continue
        path = f"end.{key}"
        nbytes = int(f.number(s, "bytes", f"{path}.bytes")) if "bytes" in s else 0
        p = {**base, "side": side, "bytes": nbytes}
        ms.append(BANDWIDTH(NET, f.number(s, "bits_per_second", f"{path}.bits_per_second") / 8e9, p))
        if "retransmits" in s:
            ms.append(RETRANSMITS(NET, f.number(s, "retransmits", f"{path}.retransmits"), p))
        # jitter and loss are measured by the receiver; a UDP sender's summary holds zeros
        if "jitter_ms" in s and (side == "received" or key == "sum"):
            ms.append(JITTER(NET, f.number(s, "jitter_ms", f"{path}.jitter_ms") * 1000, p))
        if "lost_percent" in s and (side == "received" or key == "sum"):
            ms.append(LOST(NET, f.number(s, "lost_percent", f"{path}.lost_percent"), p))
    if doc.get("error"):
        add_error(run, str(doc["error"]))
        run.status = FAILED if not ms else INCOMPLETE
    if not ms and not run.errors:
        return None
    if not end and run.status != FAILED:
        run.status = INCOMPLETE
    return ImportedRun(run, ms)


_STREAM_PARTS = {"start": "start", "end": "end", "error": "error"}


def _from_stream(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--json-stream`` event lines -> the ``-J`` documents they make up (one per ``start``)."""
    if not docs or not all("event" in d and "data" in d for d in docs):
        return docs
    out: list[dict[str, Any]] = []
    for d in docs:
        event = d["event"]
        if event == "start" or not out:
            out.append({})
        key = _STREAM_PARTS.get(str(event))
        if key:
            out[-1][key] = d["data"]
    return out


def parse(text: str, name: str = "") -> list[ImportedRun]:
    # -J output saved from a launcher's (srun -l, mpirun --tag-output, pdsh) carries its prefixes
    text = json_behind_prefixes(text, "iperf3 JSON")
    if not text.startswith("{", json_gap_end(text)):
        return parse_text_output(text, name)
    out = []
    for i, doc in enumerate(_from_stream(_documents(text)), 1):
        refuse_not_utf8(doc, text, f"iperf3 JSON document {i}")
        r = _run(doc, name, i)
        if r is not None:
            out.append(r)
    return out


IMPORTERS = (
    Importer("iperf3", re.compile(r'"intervals"\s*:|"sum_sent"\s*:|"version"\s*:\s*"iperf'), whole(parse), order=20),
    # the text output's words, after the other tools' (perftest and OSU logs quote no iperf3 line)
    Importer("iperf3", SIGNATURE, whole(parse), order=95,
             starts=re.compile(rf"^\s*{STAMP}?Connecting to host \S+, port \d+|^\s*{STAMP}?Server listening on \d+",
                               re.M)),
)
