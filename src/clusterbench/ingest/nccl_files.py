"""The machine-readable result files of nccl-tests (``-J file.json``) and rccl-tests
(``-Z csv|json -x file``), mapped to the same records as the text output.

Formats, as the tools' sources write them:

- nccl-tests ``-J`` (src/util.cu, JSON_FILE_VERSION 2): one object with ``config.devices``
  (rank, hostname, device, device_info), ``results`` (size, count, type, redop, root as a
  padded string, ``out_of_place``/``in_place`` = {time or cpu_time, alg_bw, bus_bw, nwrong}),
  ``out_of_bounds`` {count, okay}, ``average_bus_bandwidth`` {bandwidth, okay}, ``errors``.
  A run that crashed leaves the object unterminated; the finished part is kept (incomplete).
- rccl-tests ``-Z csv``: ``numCycle,collective,[nodes,ranks,ranksPerNode,gpusPerRank | gpus],
  size,type,redop,inplace,time,algbw,busbw,#wrong``, one line per size and placement.
- rccl-tests ``-Z json`` (``--rccl_output_format json``; src/common.cu ``Reporter::writeFile``):
  ``[``, then one ``{"numCycle":0, "name":"AllReduce", ...}`` object per line, separated by ``},``
  line ends, then ``]``. Older releases left string values unquoted (``"name":AllReduce``), and
  logs often hold the object lines alone (a grep, a pod's output): each object is read field by
  field on its own, with or without quotes, brackets and the separating commas.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from clusterbench.families.collectives.spec import (
    ALGBW,
    AVG_BUSBW,
    BUSBW,
    DTYPE_SIZES,
    OUT_OF_BOUNDS,
    SPECS,
    TIME,
    WRONG,
    op_name,
)
from clusterbench.ingest import nccl_parallel
from clusterbench.ingest.collectives import (
    RANK_LIST,
    Evidence,
    decide_op,
    ops_in_name,
    rank_count,
    ratio_interval,
    unknown_ranks_note,
)
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    add_warning,
    json_behind_prefixes,
    new_run,
    refuse_not_utf8,
    to_float,
    to_int,
)
from clusterbench.ingest.nccl_tests import nccl_version_from_code, parse_lines
from clusterbench.ingest.registry import Importer, whole_text
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, Measurement


def lenient_json(text: str) -> tuple[Any, bool]:
    """Parse JSON; if the writer died mid-file, close what is open. Returns (value, was_truncated)."""
    value, truncated = _lenient_json(text)
    refuse_not_utf8(value, text, "JSON")
    return value, truncated


def _lenient_json(text: str) -> tuple[Any, bool]:
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        pass
    cut = text
    for _ in range(50):
        candidate = _close_open(cut)
        if candidate is not None:
            try:
                return json.loads(candidate), True
            except json.JSONDecodeError:
                pass
        last = max(cut.rfind("}"), cut.rfind("]"), cut.rfind(","))
        if last <= 0:
            break
        cut = cut[:last] if cut[last] == "," else cut[: last + 1]
    raise LogFormatError("not valid JSON, and no complete part could be recovered")


def _close_open(text: str) -> str | None:
    stack: list[str] = []
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
    if in_str:
        return None
    body = text.rstrip().rstrip(",")
    if body.endswith(":"):
        return None
    return body + "".join(reversed(stack))


def parse_nccl_json(text: str, name: str = "") -> list[ImportedRun]:
    doc, truncated = lenient_json(text)
    if not isinstance(doc, dict) or "results" not in doc and "config" not in doc:
        raise LogFormatError("JSON without nccl-tests 'results'")
    run = new_run("nccl-tests", name)
    if doc.get("nccl_version"):
        run.versions["nccl"] = nccl_version_from_code(int(doc["nccl_version"]))
    args = doc.get("args") or []
    if args:
        run.meta["log_command"] = [str(a) for a in args]
    if doc.get("start_time"):
        run.meta["log_started_at"] = doc["start_time"]
    devices = (doc.get("config") or {}).get("devices") or []
    devices = sorted((d for d in devices if isinstance(d, dict)), key=lambda d: d.get("rank", 0))
    run.meta["rank_hosts"] = [str(d.get("hostname", "")) for d in devices]
    run.devices = [str(d.get("device_info", "")) for d in devices]
    run.hosts = list(dict.fromkeys(run.meta["rank_hosts"]))
    # config.devices lists every rank (src/util.cu): a file without it does not say how many
    run.ranks = len(devices) or None
    if run.ranks:
        run.meta["ranks_from"] = [RANK_LIST]
    if "rank_hosts" in run.meta and not run.meta["rank_hosts"]:
        del run.meta["rank_hosts"]
    file_ops = ops_in_name(name)
    named = op_name(str(args[0])) if args else None
    op = named or (file_ops[0] if len(file_ops) == 1 else None)
    if op is None:
        raise LogFormatError("the JSON file does not say which collective it measured (no program in "
                             "'args'): name the file after the op (all_reduce.json)")
    run.meta["op"] = op
    run.meta["op_from"] = ["printed name" if named else "file name"]
    ms: list[Measurement] = []
    for row in doc.get("results") or []:
        if not isinstance(row, dict):
            continue
        root = to_int(str(row.get("root", "-1")).strip())
        params = {"bytes": int(row.get("size", 0)), "count": int(row.get("count", 0)),
                  "dtype": str(row.get("type", "")), "redop": str(row.get("redop") or "none"),
                  "root": -1 if root is None else root, "ranks": run.ranks}
        for key, placement in (("out_of_place", "out"), ("in_place", "in")):
            block = row.get(key)
            if not isinstance(block, dict):
                continue
            p = {**params, "placement": placement}
            time_us = block.get("time", block.get("cpu_time"))
            for metric, value in ((TIME, time_us), (ALGBW, block.get("alg_bw")),
                                  (BUSBW, block.get("bus_bw")), (WRONG, block.get("nwrong"))):
                v = to_float(str(value)) if value is not None else None
                if v is not None:
                    ms.append(metric(op, v, p))
    avg = doc.get("average_bus_bandwidth")
    oob = doc.get("out_of_bounds")
    if isinstance(avg, dict) and to_float(str(avg.get("bandwidth"))) is not None:
        ms.append(AVG_BUSBW(op, float(avg["bandwidth"]), {"ranks": run.ranks}))
    if isinstance(oob, dict) and oob.get("count") is not None:
        ms.append(OUT_OF_BOUNDS(op, float(oob["count"]), {"ranks": run.ranks}))
    for err in doc.get("errors") or []:
        add_error(run, str(err))
    run.status = COMPLETE if isinstance(avg, dict) and not truncated else INCOMPLETE
    if truncated:
        run.meta["truncated"] = "the JSON file ends before its end; finished rows kept"
    if any(isinstance(x, dict) and str(x.get("okay")).lower() == "false" for x in (avg, oob)):
        run.status = FAILED
    return [ImportedRun(run, ms)]


_RCCL_FIELD = re.compile(r'"([#\w]+)"\s*:\s*("[^"]*"|[^,}]*)')


def _rccl_rows_from_json(text: str) -> list[dict[str, str]]:
    rows = []
    for obj in re.finditer(r"\{([^{}]*)\}", text):
        rows.append({k: v.strip().strip('"') for k, v in _RCCL_FIELD.findall(obj.group(1))})
    return rows


def _count(op: str, size: int, dtype: str, ranks: int | None) -> int | None:
    """The count column nccl-tests would print (rccl's result files leave it out): elements per rank
    buffer, which for the ops that split their buffer is the printed size over the ranks (unknown
    where the rank count is)."""
    word = DTYPE_SIZES.get(dtype, 0)
    if not word:
        return None
    if SPECS[op].splits_count:
        return size // word // ranks if ranks else None
    return size // word


def _field(row: dict[str, str], *keys: str) -> str:
    return next((row[k] for k in keys if row.get(k)), "")


def _invocations(rows: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """The rows of each invocation: a file (or a pod's output) may hold several, one after
    another; a new one starts where the op or the rank count changes."""
    groups: list[list[dict[str, str]]] = []
    last: tuple[str, ...] | None = None
    for r in rows:
        key = (_field(r, "collective", "name"), _field(r, "ranks", "gpus"), r.get("nodes", ""))
        if key != last:
            groups.append([])
            last = key
        groups[-1].append(r)
    return groups


def parse_rccl_results(text: str, name: str = "", fmt: str = "csv") -> Iterator[ImportedRun]:
    """rccl-tests ``-Z csv|json`` files and the ``--output_format json`` lines (rccl-tests PR 93:
    ``{"#wrong":"0","algBw":...,"busBw":...,"gpus":4,"inPlace":0,"name":"AllReduce",...}``, one
    object per line): one run per invocation, each yielded before the next is read (a refusal
    of one then names it by its place)."""
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text.strip())))
        rows = [{(k or "").strip(): (v or "").strip() for k, v in r.items()} for r in rows]
    else:
        rows = _rccl_rows_from_json(text)
    rows = [r for r in rows if r.get("size")]
    if not rows:
        raise LogFormatError("rccl-tests result file without rows")
    for group in _invocations(rows):
        yield _rccl_run(group, name)


def _rccl_run(rows: list[dict[str, str]], name: str) -> ImportedRun:
    run = new_run("rccl-tests", name)
    first = rows[0]
    printed = _field(first, "collective", "name")
    named = op_name(printed) if printed else None
    if printed and named is None:
        raise LogFormatError(f"unknown collective {printed!r} in the rccl-tests result file")
    pairs = [(_field(r, "algbw", "algBw"), _field(r, "busbw", "busBw")) for r in rows]
    redops = frozenset(_field(r, "redop") or "none" for r in rows)
    evidence = Evidence(redops=redops if all(r.get("redop") for r in rows) else None, ratio=ratio_interval(pairs))
    op, run.meta["op_from"] = decide_op(evidence, [(named, printed)] if named else [], ops_in_name(name), len(rows))
    run.meta["op"] = op
    stated = to_int(_field(first, "ranks", "gpus"))
    found = rank_count(op, evidence, None, (RANK_LIST, stated) if stated else None)
    ranks = found.value
    for warning in found.warnings:
        add_warning(run, warning)
    if ranks is not None:
        field = "ranks" if first.get("ranks") else "gpus"   # the file's own count, by its field's name
        run.meta["ranks_from"] = [field if p == RANK_LIST else p for p in found.proof]
    else:
        add_warning(run, unknown_ranks_note(found))
    run.ranks = ranks
    if first.get("nodes"):
        run.meta["nodes"] = to_int(first["nodes"])
    cycles = {r.get("numCycle", "0") for r in rows}
    ms: list[Measurement] = []
    placed: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        inplace = _field(r, "inplace", "inPlace") or "0"
        size = to_int(r["size"]) or 0
        placement = "in" if inplace.strip() == "1" else "out"
        placed.setdefault((r.get("numCycle", "0"), r["size"]), set()).add(placement)
        params: dict[str, Any] = {"bytes": size, "count": _count(op, size, r.get("type", ""), ranks),
                                  "dtype": r.get("type", ""),
                                  "redop": r.get("redop") or "none", "root": -1,
                                  "placement": placement, "ranks": ranks}
        if len(cycles) > 1:
            params["cycle"] = to_int(r.get("numCycle", "0"))
        for metric, keys in ((TIME, ("time",)), (ALGBW, ("algbw", "algBw")), (BUSBW, ("busbw", "busBw")),
                             (WRONG, ("#wrong", "wrong"))):
            v = to_float(_field(r, *keys))
            if v is not None:
                ms.append(metric(op, v, params))
    both = {frozenset(p) for p in placed.values()}
    if len(both) > 1:   # every size is timed in the same placements: a size short of one was cut
        cut = [size for (_, size), p in placed.items() if len(p) < max(map(len, both))]
        run.status = INCOMPLETE
        add_warning(run, f"the {'sizes' if len(cut) > 1 else 'size'} {', '.join(cut)} "
                         f"{'lack' if len(cut) > 1 else 'lacks'} a placement the other sizes have: the file is cut short")
    return ImportedRun(run, ms)


def _parse(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
    """nccl-tests' text output, its -J JSON, or rccl-tests' -Z csv/json, told apart by the head."""
    if json_behind_prefixes(head, "nccl-tests JSON") != head:
        # JSON written to standard output through a launcher (srun -l's ``0: {``, mpirun
        # --tag-output, pdsh): read behind the prefixes, as saved to a file (the head decides:
        # a text log is not read whole)
        text = json_behind_prefixes(whole_text(lines), "nccl-tests JSON")
        if '"numCycle"' in text[:4096] or '"busBw"' in text[:4096]:
            yield from parse_rccl_results(text, name, "json")
        else:
            yield from parse_nccl_json(text, name)
        return
    start = head.lstrip()[:1]
    if head.lstrip().startswith("numCycle,"):
        yield from parse_rccl_results(whole_text(lines), name, "csv")
    elif '"numCycle"' in head[:4096] or '"busBw"' in head[:4096]:   # -Z json: an array, its object lines alone
        yield from parse_rccl_results(whole_text(lines), name, "json")
    elif start == "{":
        yield from parse_nccl_json(whole_text(lines), name)
    elif nccl_parallel.usable(lines):
        yield from nccl_parallel.parse_file(lines, name)  # type: ignore[arg-type]
    else:
        yield from parse_lines(lines, name)


IMPORTERS = (
    # the result files' keys early; the text's words last (other tools' logs may quote them)
    Importer("nccl-tests", re.compile(r'^\s*numCycle,|"numCycle"\s*:|"bus_bw"\s*:|"nccl_version"\s*:|"busBw"\s*:',
                                      re.M),
             _parse, order=30, aliases=("rccl-tests",), streams=True),
    Importer("nccl-tests", re.compile(r"Avg bus bandwidth|out-of-place|nThread:?\s+\d+\s+nGpus|Collective test"
                                      r"|rccl-tests|\balgbw\b.*\bbusbw\b|Test NCCL failure|Test CUDA failure"),
             _parse, order=100, aliases=("rccl-tests",), streams=True,
             starts=re.compile(r"^#?\s*nThread:?\s+\d+\s+nGpus|^#\s*Collective test starting|^#\s*nccl-tests version"
                               r"|^#?\s*NCCL Tests compiled|^#?\s*rccl-tests:\s*Version", re.M)),
)
