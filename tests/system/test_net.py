"""System tests (net): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from json_cases import BENCHMARKS
from json_schema import check_lines
from judge_helpers import cli, run_cli
from net_ranks import FakeCtx, _peer_gathers
from paths import SRC
from process_helpers import Lines, free_port, wait_until

from clusterbench.bench.net import perftest
from clusterbench.bench.net.matrix import NetConfig
from clusterbench.judge.efficiency import run_link_efficiency
from clusterbench.store import Store

TIMEOUT = 3   # --timeout of the commands started here, in seconds


def _launched_env(rank: int, world: int, port: int) -> dict[str, str]:
    """This environment without any launcher's variables, then torchrun's for ``rank``."""
    launcher = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "TORCHELASTIC_USE_AGENT_STORE", "CLUSTERBENCH_DB")
    env = {k: v for k, v in os.environ.items()
           if k not in launcher and not k.startswith(("OMPI_", "PMI_", "SLURM_", "MPI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return env


def _net(db: Path) -> list[str]:
    return [sys.executable, "-m", "clusterbench", "net", "--timeout", str(TIMEOUT), "-t", "0.5", "--db", str(db)]


def test_net_over_loopback_stores_a_matrix(tmp_path):
    db = str(tmp_path / "net.db")
    r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "3", "--duration", "0.3",
                        "--latency-iters", "20", "--link-rate", "100Gbps", "--db", db],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        ms = store.measurements(run.id)
    bw = [m for m in ms if m.metric == "bandwidth"]
    lat = [m for m in ms if m.metric == "latency_us"]
    assert len(bw) == 6 and all(m.value > 0 and m.params["streams"] == 4 for m in bw)
    assert {(m.params["src_rank"], m.params["dst_rank"]) for m in bw} == \
        {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}
    assert len(lat) == 12 and {m.params["stat"] for m in lat} == {"min", "avg", "p50", "max"}
    # the --link-rate is the run's link_speed: each pair is judged against it when read
    assert run.tags["link_speed"] == "100Gbps"
    eff = run_link_efficiency(run, ms, None)
    assert len(eff) == 6 and all(abs(e.ratio - b.value / 12.5) < 1e-9 for e, b in zip(eff, bw))


def test_net_keeps_its_telemetry_interval(tmp_path):
    db = str(tmp_path / "net.db")
    for interval in ("0", "0.05"):
        r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "2", "--duration", "0.3",
                            "--no-latency", "--telemetry-interval", interval, "--db", db],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    with Store.open(db) as store:
        off, on = reversed(store.list_runs())
        assert "telemetry" not in off.meta and store.telemetry(off.id) == []
        assert on.meta["telemetry"]["interval_s"] == 0.05 and store.telemetry(on.id)


@pytest.mark.parametrize("args", [["--streams", "0"], ["--latency-bytes", "-5"], ["--latency-bytes", "0"],
                                  ["-t", "nan"], ["-t", "inf"], ["-t", "-1"], ["--rdma-qps", "0"]])
def test_net_bad_input_is_one_line(args):
    r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "2", *args],
                       capture_output=True, text=True, timeout=60)
    option = "--duration" if args[0] == "-t" else args[0]
    assert r.returncode == 2 and r.stderr.startswith("clusterbench: error: ") and option in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, argv in BENCHMARKS.items() if argv])
def test_benchmark_command_lines(tmp_path, name):
    code, out, err = run_cli(*BENCHMARKS[name], "--json", "--telemetry-interval", "0",
                             "--db", tmp_path / "b.db")
    assert code == 0, err
    objs = check_lines(out)
    assert objs[-1]["kind"] in ("run", "warning", "efficiency") and any(o["kind"] == "run" for o in objs)
    if name == "net":  # judged at once against the --link-rate it was given
        assert any(o["kind"] == "efficiency" for o in objs)


def test_rdma_report_without_rows_is_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = FakeCtx()
    _peer_gathers(monkeypatch, lambda call, mine: None)
    monkeypatch.setattr(perftest, "skip_reason", lambda root=perftest.SYSFS_IB: None)
    monkeypatch.setattr(perftest, "rdma_devices", lambda root=perftest.SYSFS_IB: ["mlx5_0"])
    monkeypatch.setattr(perftest, "_client", lambda *a: " #bytes     #iterations    BW peak[Gb/sec]\n")
    perftest.run_pairs(ctx, NetConfig(rdma=True), [0, 1], [("127.0.0.1", 1)] * 2,  # type: ignore[arg-type]
                       ["h/rank0", "h/rank1"])
    assert ctx.rows == []
    assert ctx.failures[0].startswith("ib_write_bw h/rank0 -> h/rank1:  #bytes")


def test_loopback_run_json_and_table(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = tmp_path / "net.db"
    code, out, err = cli(capsys, "net", "--np", "2", "-t", "0.05", "--latency-iters", "5", "--latency-bytes", "1K",
                         "--streams", "1", "--link-rate", "10Gbps", "--timeout", "60", "--json", "--db", db, "-q")
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    ms = [x for x in lines if x["kind"] == "measurement"]
    bw = [m for m in ms if m["metric"] == "bandwidth"]
    lat = {m["params"]["stat"]: m["value"] for m in ms if m["metric"] == "latency_us"}
    assert sorted((m["params"]["src_rank"], m["params"]["dst_rank"]) for m in bw) == [(0, 1), (1, 0)]
    assert all(m["unit"] == "GB/s" and m["value"] > 0 and m["params"]["bytes"] > 0 for m in bw)
    assert {m["unit"] for m in ms if m["metric"] == "latency_us"} == {"us"}
    assert [m["params"]["bytes"] for m in ms if m["metric"] == "latency_us"] == [1024] * 4
    assert lat["min"] <= lat["p50"] <= lat["max"] and lat["min"] <= lat["avg"] <= lat["max"]
    assert [x["kind"] for x in lines].count("efficiency") == 2
    code, out, _ = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0
    # src dst metric streams value unit Gbit/s: the Gbit/s column is the GB/s value times 8
    rows = [r.split() for r in out.splitlines() if r.split()[2:3] == ["bandwidth"] and not r.startswith("#")]
    for r, m in zip(rows, bw, strict=True):
        assert r[2:4] == ["bandwidth", "1"] and r[5] == "GB/s"
        assert float(r[4]) == pytest.approx(m["value"], rel=2e-3)
        assert float(r[6]) == pytest.approx(8 * float(r[4]), rel=2e-3)


@pytest.mark.parametrize(("rank", "words"), [
    (1, "rank 0 never came: nothing listened at 127.0.0.1:{port} (MASTER_ADDR:MASTER_PORT)"),
    (0, "1 rank never joined at 127.0.0.1:{port} (1 of 2 ranks joined)"),
])
def test_a_rank_whose_peer_never_starts_ends_at_its_timeout_in_one_line(
        started: Any, tmp_path: Path, rank: int, words: str) -> None:
    port = free_port()
    proc = started(_net(tmp_path / "r.db"), _launched_env(rank, 2, port))
    # a bound on a hang, not a timing: the rank ends at its own --timeout, not the store's retries
    out, err = proc.communicate(timeout=TIMEOUT + 30)
    assert proc.returncode == 1, err
    errors = [line for line in err.splitlines() if line.startswith("clusterbench: error:")]
    assert errors == [f"clusterbench: error: rank {rank} on {socket.gethostname()}: "
                      f"{words.format(port=port)} within {TIMEOUT} s (--timeout)"], err
    stored = [line for line in err.splitlines() if line.startswith("# run ")]
    assert [line.split(" stored in ")[0] for line in stored] == (["# run 1 (failed)"] if rank == 0 else []), err
    others = [line for line in err.splitlines() if line not in errors + stored and "warning: " not in line]
    assert others == [], err   # no traceback, no C++ frames of the store's client
    assert "Traceback" not in err and "frame #" not in err
    assert out == ""


def test_a_rank_that_rank_0_joins_late_runs(started: Any, tmp_path: Path) -> None:
    """The wait is for rank 0 to come, not a shorter timeout: rank 0 started after rank 1 has
    waited a while (and said so) still makes a complete run."""
    port = free_port()
    db = tmp_path / "r.db"
    argv = [sys.executable, "-m", "clusterbench", "net", "--timeout", "60", "-t", "0.1",
            "--latency-iters", "5", "--db", str(db)]
    worker = started(argv, _launched_env(1, 2, port))
    said = Lines(worker.stderr)
    # rank 1 says it waits after min(JOIN_NOTICE_S, --timeout / 2) of waiting: rank 0 comes after
    wait_until(lambda: said.has(f"waiting for rank 0 at 127.0.0.1:{port}"), 120, "rank 1 waiting for rank 0")
    root = started(argv, _launched_env(0, 2, port))
    out, err = root.communicate(timeout=120)
    worker.wait(60)
    werr = said.text()
    assert root.returncode == 0 and worker.returncode == 0, (err, werr)
    assert "bandwidth" in out
    assert "Traceback" not in werr and "error" not in werr
