"""System tests (gemm): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import pytest
from bench_cli import _key, cli, cli_bench_cpu, measurements
from system_cli import clusterbench_native_records, lines_native_records, stored_bench_cpu


def test_gemm_tflops_is_flops_over_time(tmp_path):
    records = lines_native_records(clusterbench_native_records("gemm", "-m", "64", "-n", "48", "-k", "32", "--batch", "3", "--transA", "T",
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


def test_cli_cpu_all_dtypes_json(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "64", "-n", "48", "-k", "32", "--batch", "2", "--transB", "T",
                         "--dtype", "fp32,tf32,bf16,int8", "-i", "2", "--samples", "3", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    tf = [r for r in rows if r["metric"] == "tflops"]
    assert {r["params"]["dtype"] for r in tf} == {"fp32", "bf16", "int8"}  # tf32 skipped on CPU
    for r in tf:
        p = r["params"]
        # an int8 GEMM's operations are integer ones
        assert r["unit"] == ("TOP/s" if p["dtype"] == "int8" else "TFLOP/s") and r["value"] > 0
        assert p["stat"] in ("best", "median")
        assert (p["m"], p["n"], p["k"], p["batch"], p["transA"], p["transB"], p["device"]) == \
            (64, 48, 32, 2, "N", "T", "cpu")
    best = {r["params"]["dtype"]: r["value"] for r in tf if r["params"]["stat"] == "best"}
    med = {r["params"]["dtype"]: r["value"] for r in tf if r["params"]["stat"] == "median"}
    assert all(best[d] >= med[d] for d in best)
    assert {r["unit"] for r in rows if r["metric"] == "time_us"} == {"us"}


def test_cli_table_shows_skip_reason(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "32", "-n", "32", "-k", "32", "--dtype", "tf32,fp64",
                         "-i", "1", "--samples", "1", "--db", db)
    assert code == 0, err
    assert "skipped tf32 on cpu: tf32 is a GPU tensor-core mode" in out
    assert any(ln.split()[5:7] == ["fp64", "N"] for ln in out.splitlines() if not ln.startswith("#"))


def test_int8_asked_row_major_runs_column_major_b_with_a_note(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "64", "-n", "32", "-k", "32", "--dtype", "int8,fp32",
                         "-i", "1", "--samples", "1", "--db", db)
    assert code == 0, err
    assert "int8 runs transA=N transB=T (A row-major, B column-major)" in out
    rows = [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    layouts = {r[5]: (r[6], r[7]) for r in rows if len(r) > 7}
    assert layouts["int8"] == ("N", "T") and layouts["fp32"] == ("N", "N")


def test_gemm_tflops_are_two_m_n_k_per_call(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = str(tmp_path / "gemm.db")
    code, out, err = cli_bench_cpu(capsys, "gemm", "-m", "33", "-n", "17", "-k", "5", "--batch", "3",
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
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored_bench_cpu(capsys, db, 1)}
