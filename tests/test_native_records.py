"""Records of real, small native CPU runs against the definitions of docs/metrics.md (nccl-tests'
PERFORMANCE.md): algbw = bytes / time, busbw = algbw x the op's factor, count x dtype size =
bytes, #wrong 0, every row of the sweep in both placements, the text table at its precision, and
``--json`` of the run equal to ``results show --json`` of the stored run. The expected values are
computed here from the definitions, not from clusterbench's own helpers, so a wrong helper fails."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from typing import Any

import pytest

DTYPE_BYTES = {"float": 4, "half": 2, "double": 8}
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}
PER_RANK = {"all_gather", "reduce_scatter", "alltoall"}      # count is the per-rank count
IN_ONLY = {"all_reduce", "broadcast", "reduce"}              # PyTorch has only the in-place form
UNCHECKED_IN = {"alltoall", "sendrecv"}                      # nccl-tests does not check in-place
SIZES = [8, 32, 128, 512, 2048]                              # -b 8 -e 2K -f 4
COLL = ["-b", "8", "-e", "2K", "-f", "4", "-n", "3", "-w", "1", "-d", ",".join(DTYPE_BYTES)]


def clusterbench(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "clusterbench", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def rows(records: list[dict[str, Any]]) -> dict[tuple, dict[str, float]]:
    """Row params (without stat) -> {metric: value}, per benchmark; per-iteration stats left out."""
    out: dict[tuple, dict[str, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement" and "stat" not in r["params"]:
            out[(r["benchmark"], *sorted(r["params"].items()))][r["metric"]] = r["value"]
    return out


@pytest.fixture(scope="module", params=[2, 3])
def coll_run(request, tmp_path_factory) -> tuple[int, str, list[dict[str, Any]]]:
    db = str(tmp_path_factory.mktemp("native") / "x.db")
    out = clusterbench("coll", "all", "--np", str(request.param), *COLL, "--telemetry-interval", "0",
                       "--db", db, "--json", "-q")
    return request.param, db, lines(out)


def test_coll_rows_follow_the_definitions(coll_run):
    n, _, records = coll_run
    seen: set[tuple] = set()
    for key, v in rows(records).items():
        op, p = key[0], dict(key[1:])
        if "dtype" not in p:                           # avg_busbw, out_of_bounds: per run
            continue
        w = DTYPE_BYTES[p["dtype"]]
        assert p["ranks"] == n
        assert p["count"] * (n if op in PER_RANK else 1) * w == p["bytes"], key
        assert math.isclose(v["algbw"], p["bytes"] / (v["time_us"] * 1e-6) / 1e9, rel_tol=1e-12), key
        assert v["busbw"] == pytest.approx(v["algbw"] * FACTOR[op](n), rel=1e-15, abs=0), key
        if p["placement"] == "in" and op in UNCHECKED_IN:
            assert "wrong" not in v, key
        else:
            assert v["wrong"] == 0, key
        seen.add((op, p["dtype"], p["bytes"], p["placement"]))
    expected = set()
    for op in FACTOR:
        for dtype, w in DTYPE_BYTES.items():
            for size in SIZES:
                # per rank: whole 16-byte units, as nccl-tests trims (count / n) & -(16 / w)
                count = size // w // n & ~(16 // w - 1) if op in PER_RANK else size // w
                if count == 0:                         # skipped with a note (docs/collectives.md)
                    continue
                for placement in ("in",) if op in IN_ONLY else ("out", "in"):
                    expected.add((op, dtype, count * (n if op in PER_RANK else 1) * w, placement))
    assert seen == expected


def test_coll_run_summary_and_stored_run(coll_run):
    n, db, records = coll_run
    busbws: dict[str, list[float]] = defaultdict(list)
    summary: dict[tuple[str, str], float] = {}
    for r in records:
        if r["kind"] != "measurement":
            continue
        if r["metric"] == "busbw" and "stat" not in r["params"]:
            busbws[r["benchmark"]].append(r["value"])
        if r["metric"] in ("avg_busbw", "out_of_bounds"):
            summary[(r["benchmark"], r["metric"])] = r["value"]
    for op, values in busbws.items():
        assert summary[(op, "avg_busbw")] == pytest.approx(sum(values) / len(values), rel=1e-12)
        assert summary[(op, "out_of_bounds")] == 0
    run = next(r for r in records if r["kind"] == "run")
    assert run["status"] == "complete" and run["ranks"] == n
    assert lines(clusterbench("results", "show", str(run["id"]), "--db", db, "--json")) == records


def _agrees(printed: str, value: float | None) -> bool:
    """A table cell shows ``value`` to its printed precision (N/A for none)."""
    if printed == "N/A" or value is None:
        return printed == "N/A" and value is None
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


def test_coll_table_shows_the_records(coll_run):
    _, db, records = coll_run
    run_id = next(r["id"] for r in records if r["kind"] == "run")
    values = {}
    for r in records:
        p = r.get("params", {})
        if r["kind"] == "measurement" and "stat" not in p and "dtype" in p:
            values[(r["benchmark"], p["bytes"], p["count"], p["dtype"], p["redop"], str(p["root"]),
                    p["placement"], r["metric"])] = r["value"]
    op, shown = None, set()
    for line in clusterbench("results", "show", str(run_id), "--db", db).splitlines():
        if line.startswith("# Collective test:"):
            op = line.split(":", 1)[1].strip()
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        assert op is not None and len(f) == 13, line
        for placement, cells in (("out", f[5:9]), ("in", f[9:13])):
            for metric, cell in zip(("time_us", "algbw", "busbw", "wrong"), cells):
                key = (op, int(f[0]), int(f[1]), f[2], f[3], f[4], placement, metric)
                assert _agrees(cell, values.get(key)), (line, metric, values.get(key))
                shown.add(key)
    assert set(values) <= shown                        # every record has its cell


def test_stream_bandwidth_is_bytes_over_min_time(tmp_path):
    arrays = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    records = lines(clusterbench("stream", "--sizes", "64K:128K", "--float", "-n", "5", "--device", "cpu",
                                 "--telemetry-interval", "0", "--db", str(tmp_path / "s.db"), "--json", "-q"))
    stats: dict[tuple, dict[str | None, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement":
            p = dict(r["params"])
            stat = p.pop("stat", None)
            stats[tuple(sorted(p.items()))][f"{r['metric']}:{stat}"] = r["value"]
    assert {dict(k)["array_size"] for k in stats} == {16384, 32768}         # bytes per array / 4
    assert {dict(k)["kernel"] for k in stats} == set(arrays)
    for key, v in stats.items():
        p = dict(key)
        moved = arrays[p["kernel"]] * 4 * p["array_size"]
        assert math.isclose(v["bandwidth:None"], moved / (v["time_us:min"] * 1e-6) / 1e9, rel_tol=1e-12), key
        assert v["time_us:min"] <= v["time_us:median"] <= v["time_us:max"], key


def test_gemm_tflops_is_flops_over_time(tmp_path):
    records = lines(clusterbench("gemm", "-m", "64", "-n", "48", "-k", "32", "--batch", "3", "--transA", "T",
                                 "--dtype", "fp32,fp64,bf16", "-i", "2", "--samples", "4", "--device", "cpu",
                                 "--telemetry-interval", "0", "--db", str(tmp_path / "g.db"), "--json", "-q"))
    by: dict[tuple, dict[str, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement":
            p = dict(r["params"])
            by[tuple(sorted(p.items()))][r["metric"]] = r["value"]
    checked = 0
    for key, v in by.items():
        p = dict(key)
        assert (p["m"], p["n"], p["k"], p["batch"], p["transA"], p["transB"]) == (64, 48, 32, 3, "T", "N")
        if p["stat"] in ("best", "median"):
            flops = 2 * 64 * 48 * 32 * 3
            assert math.isclose(v["tflops"], flops / (v["time_us"] * 1e-6) / 1e12, rel_tol=1e-12), key
            checked += 1
    assert checked == 6                                # 3 dtypes x best, median
