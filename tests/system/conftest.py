"""Fixtures the system tests share: stored databases, servers, an emulated cluster, Slurm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import cluster_or_skip
from fake_ssh import FAKE_SSH, RECORDER
from fleet_metrics import _fleet
from json_cases import TINY_COLL
from judge_helpers import run_cli
from paths import DATA
from pg_fixtures import _durable_db, pg_server_or_skip
from process_helpers import _env, free_port
from slurm_fixtures import slurm_or_skip
from system_cli import (
    DTYPE_BYTES,
    HOST,
    NCCL_LOG,
    STREAM_LOG,
    TAG,
    _cb,
    _get,
    _wait,
    clusterbench_native_records,
    lines_native_records,
)
from tmpfs_helpers import small_tmpfs

from clusterbench.store import Store


@pytest.fixture(scope="module")
def cluster():
    yield from cluster_or_skip(3)


# (file, tags): real logs of the standard tools
JSON_LINES_LOGS = [
    ("nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt", ["seed=mi300x"]),
    ("transferbench/seed-mi300x-p2p.txt", ["seed=mi300x"]),
    ("transferbench/seed-mi300x-example-cfg.txt", ["seed=mi300x"]),   # Test 2 fails its threshold
    ("rocblas-bench/seed-mi300x-sgemm-4000.txt", ["seed=mi300x"]),
    ("babelstream/seed-mi300x-hip-8gpu-mpi.txt", ["seed=mi300x"]),
    ("nccl-tests/superbench-nccl_allreduce.log", ["env=a"]),
    ("nccl-tests/superbench-nccl_allreduce.log", ["env=b"]),
    ("nccl-tests/issue322-16G-test-nccl-failure-truncated.txt", ["env=broken"]),
]


@pytest.fixture(scope="module")
def store_json_lines(tmp_path_factory):
    """The database every command reads: imported real logs and one tiny CPU run."""
    tmp = tmp_path_factory.mktemp("jsonl")
    db = str(tmp / "cb.db")
    for name, tags in JSON_LINES_LOGS:
        code, _, err = run_cli("import", DATA / name, "--db", db, *[a for t in tags for a in ("--tag", t)])
        assert code in (0, 1), err
    # a run judged against a link: tagged as if it spanned 2 nodes of a 100 Gbps network
    code, _, err = run_cli(*TINY_COLL, "--tag", "env=cpu", "--tag", "nodes=2", "--tag", "link_speed=100Gbps",
                           "--db", db)
    assert code == 0, err
    return {"db": db, "tmp": tmp}


# a small sweep of every op and dtype
NATIVE_COLL = ["-b", "8", "-e", "2K", "-f", "4", "-n", "3", "-w", "1", "-d", ",".join(DTYPE_BYTES)]


@pytest.fixture(scope="module", params=[2, 3])
def coll_run(request, tmp_path_factory) -> tuple[int, str, list[dict[str, Any]]]:
    """``coll all`` on 2 and 3 CPU ranks: the rank count, its database and its --json records."""
    db = str(tmp_path_factory.mktemp("native") / "x.db")
    out = clusterbench_native_records("coll", "all", "--np", str(request.param), *NATIVE_COLL, "--telemetry-interval",
                                      "0", "--db", db, "--json", "-q")
    return request.param, db, lines_native_records(out)


@pytest.fixture
def clean(cluster):
    yield cluster
    for i in range(cluster.n):
        cluster.unshape(i)
        cluster.link(i, True)


@pytest.fixture
def tiny_fs(tmp_path):
    """A directory on a 1 MiB tmpfs."""
    with small_tmpfs(tmp_path / "tiny", "1m") as mnt:
        yield mnt


@pytest.fixture
def serve(db, tmp_path):
    """serve-metrics on a free port over the fleet history; yields (port, process)."""
    _fleet(db)
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "clusterbench", "serve-metrics", "--port", str(port),
                          "--db", db, "--profile", "amd-mi300x-oem", "--refresh", "0.5"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        # it answers at once, with clusterbench_export_success 0 until its first read is done
        _wait(lambda: "\nclusterbench_export_success 1.0\n" in _get(f"http://127.0.0.1:{port}/metrics"),
              "serve-metrics answering with the database read")
        yield port, p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


@pytest.fixture
def started():
    """Start commands in sessions of their own; kill every one's process group at the end."""
    procs: list[subprocess.Popen] = []

    def start(argv: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
        """``env`` None: this environment, the helpers and this checkout's src on PYTHONPATH."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=_env() if env is None else env, **kw)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> str:
    from clusterbench.records import Measurement, Run

    path = str(tmp_path_factory.mktemp("big") / "big.db")
    with Store.open(path) as store:
        for i in range(300):   # far more than a pipe holds, in every form
            store.save_run(Run(benchmark="coll", tags={"i": str(i), "site": "z\u00fcrich"}),
                           [Measurement("all_reduce", "busbw", float(j), "GB/s", {"bytes": j, "host": f"{HOST}{j % 4}"})
                            for j in range(40)])
    return path


@pytest.fixture
def fakes(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("srun", "mpirun", "torchrun", "pip", "scontrol", "clusterbench"):
        (bindir / tool).write_text(RECORDER)
    (bindir / "ssh").write_text(FAKE_SSH)
    for f in bindir.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "CB_RAN": str(tmp_path / "ran"),
            "CB_ARGS": str(tmp_path / "args"), "SLURM_JOB_NODELIST": "n1",
            "DSTACK_GPUS_PER_NODE": "8", "DSTACK_NODE_RANK": "0", "DSTACK_MASTER_NODE_IP": "10.0.0.1"}


@pytest.fixture(scope="module")
def server():
    yield from pg_server_or_skip()


@pytest.fixture
def dbname(server):
    name = _durable_db(server)
    yield name
    server.drop_db(name)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from slurm_or_skip(tmp_path_factory.mktemp("slurm-drain"))


@pytest.fixture(scope="module")
def db_stdio(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("stdio") / "runs.db")
    for i, log in ((1, STREAM_LOG), (2, STREAM_LOG), (3, NCCL_LOG)):
        p = _cb(["import", str(log), "--host", f"{HOST}{i}", "--tag", TAG, "--db", path])
        assert p.returncode == 0, p.stderr
    return path
