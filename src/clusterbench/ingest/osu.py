"""OSU Micro-Benchmarks output (osu_bw, osu_bibw, osu_latency, osu_allreduce, ...) -> records.

The benchmark name is the OSU program name, read from the title line (``# OSU MPI-ROCM Bandwidth
Test v7.0`` -> ``osu_bw``). OSU's MB/s is 10^6 bytes per second. Every title line starts a run;
``export K=V`` lines and the launch command printed before it are kept with that run.
"""

from __future__ import annotations

import re

from clusterbench.families.net.spec import LATENCY, MSG_RATE, OSU_BANDWIDTH, OSU_PREFIX
from clusterbench.ingest.common import (
    ImportedRun,
    add_error,
    clean_lines,
    new_run,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import INCOMPLETE, Measurement

_TITLE = re.compile(r"^#\s*OSU\s+(\S+)\s+(.*?)\s+Test(?:\s+v?([\d.]+))?\s*$")
_LABEL = re.compile(r"(?:(Avg|Min|Max|P\d+(?:\.\d+)?)\s+)?(?:Tail\s+)?Lat(?:ency)?\s*\(us\)|Bandwidth\s*\(MB/s\)"
                    r"|MB/s|Messages/s|Iterations")
_NAMES = {"bandwidth": "osu_bw", "bi-directional bandwidth": "osu_bibw", "latency": "osu_latency",
          "multi-threaded latency": "osu_latency_mt", "broadcast latency": "osu_bcast",
          "multiple bandwidth / message rate": "osu_mbw_mr", "multiple bandwidth/message rate": "osu_mbw_mr"}


def bench_name(title: str) -> str:
    key = title.strip().lower()
    if key in _NAMES:
        return _NAMES[key]
    words = key.replace("non-blocking", "i").replace(" latency", "").replace(" bandwidth", "").split()
    return OSU_PREFIX + "".join(words).replace("-", "_").replace("ireduce", "ireduce")


class _Run:
    def __init__(self, name: str, m: re.Match[str], env: dict[str, str], command: str) -> None:
        self.run = new_run("osu", name)
        self.bench = bench_name(m.group(2))
        version = m.group(3) or ""
        self.run.source = f"osu {version}".strip()
        if version:
            self.run.versions["osu"] = version
        self.run.meta["variant"] = m.group(1)
        self.run.meta["benchmark"] = self.bench
        self.run.env = env
        if command:
            self.run.meta["log_command"] = command
        self.params: dict[str, object] = {}
        self.cols: list[tuple[str, str]] = []
        self.ms: list[Measurement] = []

    def header(self, line: str) -> None:
        cols = []
        for m in _LABEL.finditer(line):
            label = m.group(0)
            if label == "Iterations":
                cols.append(("iterations", ""))
            elif "Lat" in label:
                stat = (m.group(1) or "avg").lower()
                cols.append(("latency_us", stat))
            elif "Messages" in label:
                cols.append(("msg_rate", ""))
            else:
                cols.append(("bandwidth", ""))
        self.cols = cols

    def row(self, toks: list[str]) -> None:
        size = to_int(toks[0])
        if size is None or not self.cols:
            return
        params = {**self.params, "bytes": size}
        for (metric, stat), raw in zip(self.cols, toks[1:]):
            value = to_float(raw)
            if value is None or metric == "iterations":
                continue
            if metric == "bandwidth":
                self.ms.append(OSU_BANDWIDTH(self.bench, value / 1000.0, params))
            elif metric == "msg_rate":
                self.ms.append(MSG_RATE(self.bench, value / 1e6, params))
            else:
                self.ms.append(LATENCY(self.bench, value, {**params, "stat": stat}))


def parse(text: str, name: str = "") -> list[ImportedRun]:
    runs: list[_Run] = []
    cur: _Run | None = None
    env: dict[str, str] = {}
    command = ""
    for line in clean_lines(text.splitlines()):
        s = line.strip()
        if not s:
            continue
        m = _TITLE.match(s)
        if m:
            cur = _Run(name, m, env, command)
            runs.append(cur)
            env, command = {}, ""
            continue
        if s.startswith("export ") and "=" in s:
            key, _, value = s[len("export "):].partition("=")
            env[key.strip()] = value.strip()
            continue
        if OSU_PREFIX in s and not s.startswith("#"):
            command = s
            continue
        if cur is None:
            continue
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            if body.startswith("Size"):
                cur.header(body)
            elif "Buffer on" in body:
                cur.params["buffers"] = " ".join(re.findall(r"\((\w)\)", body))
            continue
        toks = s.split()
        if toks[0].isdigit():
            cur.row(toks)
        elif re.search(r"error|abort|fail", s, re.IGNORECASE):
            add_error(cur.run, s)
    out = []
    for r in runs:
        if not r.ms and not r.run.errors:
            continue
        if r.run.errors:
            r.run.status = INCOMPLETE
        out.append(ImportedRun(r.run, r.ms))
    return out


IMPORTERS = (Importer("osu", re.compile(r"^\s*#\s*OSU\s+\S+.*Test", re.M), whole(parse), order=40),)
