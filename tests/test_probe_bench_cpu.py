"""The CPU benchmark commands against definitions computed here, independently of the code under
test: nccl-tests' size, count, algbw and busbw per op (doc/PERFORMANCE.md), BabelStream's bytes
per kernel, GEMM's 2*m*n*k FLOPs; the same numbers live, stored and in the table; and the
statistics and size sweeps that once came out wrong."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from nccl_facts import FACTORS, PER_RANK, WIDTH

from clusterbench.bench.net.tcp import LatencyResult
from clusterbench.bench.stream.config import stream_config
from clusterbench.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def measurements(text: str) -> list[dict[str, Any]]:
    return [d for d in map(json.loads, text.splitlines()) if d.get("kind") == "measurement"]


def stored(capsys: pytest.CaptureFixture[str], db: str, run: int) -> list[dict[str, Any]]:
    code, out, err = cli(capsys, "results", "show", "--db", db, str(run), "--json")
    assert code == 0, err
    return measurements(out)


def _key(m: dict[str, Any]) -> tuple:
    return m["benchmark"], m["metric"], json.dumps(m["params"], sort_keys=True)


def test_collective_rows_follow_nccl_tests_definitions(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db, n = str(tmp_path / "coll.db"), 3
    # 7, 35 and 175 bytes: odd sizes, not multiples of the rank count nor of a half's 2 bytes;
    # 175 B leaves the ops that split per rank whole 16-byte units to move (nccl-tests' trim)
    code, out, err = cli(capsys, "coll", "all", "-b", "7", "-e", "175", "-f", "5", "-n", "1", "-w", "0",
                         "-d", "half,int8", "--np", str(n), "--json", "--db", db)
    assert code == 0, err
    live = measurements(out)
    rows: dict[tuple, dict[str, Any]] = {}
    for m in live:
        p = m["params"]
        if "placement" in p and "stat" not in p:
            key = (m["benchmark"], p["dtype"], p["bytes"], p["placement"])
            rows.setdefault(key, {"params": p})[m["metric"]] = m["value"]
    assert {k[0] for k in rows} == set(FACTORS)
    seen: dict[str, set[tuple[str, int, int]]] = {}
    for (op, dtype, _, placement), row in rows.items():
        p, w = row["params"], WIDTH[dtype]
        assert p["ranks"] == n
        seen.setdefault(op, set()).add((dtype, p["count"], p["bytes"]))
        assert math.isclose(row["algbw"], p["bytes"] / (row["time_us"] * 1e-6) / 1e9, rel_tol=1e-12)
        assert math.isclose(row["busbw"], row["algbw"] * FACTORS[op](n), rel_tol=1e-12)
        # the check is on by default and found nothing wrong; nccl-tests leaves in-place alltoall
        # and sendrecv unchecked
        unchecked = placement == "in" and op in ("alltoall", "sendrecv")
        assert ("wrong" not in row) if unchecked else row["wrong"] == 0
        assert p["bytes"] == p["count"] * w * (n if op in PER_RANK else 1)
    for op in FACTORS:
        want = set()
        for dtype, w in WIDTH.items():
            if dtype == "float":
                continue
            for size in (7, 35, 175):
                count = size // w // n & ~(16 // w - 1) if op in PER_RANK else size // w
                if count:   # less than one element per rank: skipped, with a note
                    want.add((dtype, count, count * w * (n if op in PER_RANK else 1)))
        assert seen[op] == want, op
    # what --json printed is what was stored
    assert sorted(map(_key, live)) == sorted(map(_key, stored(capsys, db, 1)))
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored(capsys, db, 1)}


def test_stream_bandwidth_counts_babelstream_arrays(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = str(tmp_path / "stream.db")
    code, out, err = cli(capsys, "stream", "-s", "1000", "-n", "3", "--float", "--json", "--db", db)
    assert code == 0, err
    live = measurements(out)
    arrays = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    tmin = {m["params"]["kernel"]: m["value"] for m in live
            if m["metric"] == "time_us" and m["params"]["stat"] == "min"}
    bw = {m["params"]["kernel"]: m["value"] for m in live if m["metric"] == "bandwidth"}
    assert set(bw) == set(arrays)
    for kernel, count in arrays.items():
        assert math.isclose(bw[kernel], count * 4 * 1000 / (tmin[kernel] * 1e-6) / 1e9, rel_tol=1e-12)
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored(capsys, db, 1)}


def test_gemm_tflops_are_two_m_n_k_per_call(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = str(tmp_path / "gemm.db")
    code, out, err = cli(capsys, "gemm", "-m", "33", "-n", "17", "-k", "5", "--batch", "3",
                         "--dtype", "fp32,bf16", "-i", "2", "--samples", "3", "--json", "--db", db)
    assert code == 0, err
    live = measurements(out)
    times = {(m["params"]["dtype"], m["params"]["stat"]): m["value"] for m in live if m["metric"] == "time_us"}
    rates = [m for m in live if m["metric"] == "tflops"]
    assert {(m["params"]["dtype"], m["params"]["stat"]) for m in rates} == {
        (d, s) for d in ("fp32", "bf16") for s in ("best", "median")}
    for m in rates:
        t = times[(m["params"]["dtype"], m["params"]["stat"])] * 1e-6
        assert math.isclose(m["value"], 2 * 33 * 17 * 5 * 3 / t / 1e12, rel_tol=1e-12)
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored(capsys, db, 1)}


def test_stream_size_sweep_measures_each_array_size_once() -> None:
    # 1, 2 and 4 bytes of double all round up to one element: once, not three identical rows
    cfg = stream_config("1", 2, "double", "1:32", "all", "cpu", None, True)
    assert cfg.sizes == (1, 2, 4)
    assert stream_config("1", 2, "float", "12:48", "all", "cpu", None, True).sizes == (3, 6, 12)


def test_latency_p50_is_the_median() -> None:
    assert LatencyResult([5.0, 1.0]).stat("p50") == 3.0        # not the slower of the two
    assert LatencyResult([4.0, 1.0, 3.0, 2.0]).stat("p50") == 2.5
    assert LatencyResult([3.0, 1.0, 2.0]).stat("p50") == 2.0
