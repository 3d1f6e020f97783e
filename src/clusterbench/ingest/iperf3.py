"""iperf3 ``-J`` output (and its text output, ``iperf3_text.py``) -> ``net`` records.

Bandwidth comes from ``end.sum_sent`` / ``end.sum_received`` (bits per second / 8 / 10^9 = GB/s),
with retransmits (TCP), jitter and loss (UDP), the stream count and the test duration. A file may
hold several JSON documents one after another (a loop appending ``-J`` output): each is a run.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clusterbench.families.net.spec import BANDWIDTH, JITTER, LOST, NET, RETRANSMITS
from clusterbench.ingest.common import ImportedRun, LogFormatError, add_error, new_run
from clusterbench.ingest.iperf3_text import SIGNATURE, parse_text_output
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import FAILED, INCOMPLETE, Measurement


def _documents(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    docs, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if docs:
                break  # a last document cut short: keep the complete ones
            raise LogFormatError(f"not iperf3 JSON: {e.msg} at line {e.lineno}") from None
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def _run(doc: dict[str, Any], name: str) -> ImportedRun | None:
    start = doc.get("start") or {}
    end = doc.get("end") or {}
    test = start.get("test_start") or {}
    run = new_run("iperf3", name)
    version = str(start.get("version", "")).replace("iperf ", "")
    run.source = f"iperf3 {version}".strip()
    if version:
        run.versions["iperf3"] = version
    if start.get("system_info"):
        run.meta["system_info"] = start["system_info"]
    if (start.get("timestamp") or {}).get("time"):
        run.meta["log_started_at"] = start["timestamp"]["time"]
    conn = (start.get("connected") or [{}])[0]
    local, remote = conn.get("local_host", ""), conn.get("remote_host", "")
    reverse = bool(test.get("reverse"))
    src, dst = (remote, local) if reverse else (local, remote)
    run.hosts = [h for h in (local, remote) if h]
    protocol = str(test.get("protocol", "TCP")).lower()
    params: dict[str, Any] = {"src_host": src, "dst_host": dst, "protocol": protocol,
                              "streams": int(test.get("num_streams", 1) or 1)}
    if test.get("duration"):
        params["duration_s"] = test["duration"]
    if test.get("blksize"):
        params["block_bytes"] = test["blksize"]
    ms: list[Measurement] = []
    sides = [("sum_sent", "sent"), ("sum_received", "received")]
    if not any(k in end for k, _ in sides):
        sides = [("sum", "sent")]  # UDP in older iperf3 versions
    for key, side in sides:
        s = end.get(key)
        if not isinstance(s, dict) or "bits_per_second" not in s:
            continue
        p = {**params, "side": side, "bytes": int(s.get("bytes", 0))}
        ms.append(BANDWIDTH(NET, float(s["bits_per_second"]) / 8e9, p))
        if "retransmits" in s:
            ms.append(RETRANSMITS(NET, float(s["retransmits"]), p))
        # jitter and loss are measured by the receiver; a UDP sender's summary holds zeros
        if "jitter_ms" in s and (side == "received" or key == "sum"):
            ms.append(JITTER(NET, float(s["jitter_ms"]) * 1000, p))
        if "lost_percent" in s and (side == "received" or key == "sum"):
            ms.append(LOST(NET, float(s["lost_percent"]), p))
    if doc.get("error"):
        add_error(run, str(doc["error"]))
        run.status = FAILED if not ms else INCOMPLETE
    if not ms and not run.errors:
        return None
    if not end:
        run.status = INCOMPLETE
    return ImportedRun(run, ms)


def parse(text: str, name: str = "") -> list[ImportedRun]:
    if not text.lstrip().startswith("{"):
        return parse_text_output(text, name)
    out = []
    for doc in _documents(text):
        r = _run(doc, name)
        if r is not None:
            out.append(r)
    return out


IMPORTERS = (
    Importer("iperf3", re.compile(r'"intervals"\s*:|"sum_sent"\s*:|"version"\s*:\s*"iperf'), whole(parse), order=20),
    # the text output's words, after the other tools' (perftest and OSU logs quote no iperf3 line)
    Importer("iperf3", SIGNATURE, whole(parse), order=95,
             starts=re.compile(r"^\s*Connecting to host \S+, port \d+|^\s*Server listening on \d+", re.M)),
)
