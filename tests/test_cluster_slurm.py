"""A real Slurm on this host (slurmctld + two slurmd "nodes", started here, stopped afterwards)
runs ``clusterbench launch slurm --submit`` end to end; sbatch missing from PATH is one line."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from json_schema import check_lines

from clusterbench.store import Store

SBIN = ["/usr/sbin", "/usr/bin"]


def _which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.path.exists(f"{d}/{name}")), None)


def _munge_works() -> bool:
    munge, unmunge = _which("munge"), _which("unmunge")
    if not munge or not unmunge:
        return False
    try:
        cred = subprocess.run([munge, "-n"], capture_output=True, timeout=10)
        return cred.returncode == 0 and subprocess.run(
            [unmunge], input=cred.stdout, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


CONF = """ClusterName=cbtest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 Port={p1} CPUs=1 RealMemory=4000 State=UNKNOWN
NodeName=n2 NodeHostname={host} NodeAddr=127.0.0.1 Port={p2} CPUs=1 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
"""


def _stop(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to run slurmctld and slurmd")
    ctld, slurmd = _which("slurmctld"), _which("slurmd")
    if not ctld or not slurmd or not _which("sbatch") or not _which("munged"):
        pytest.skip("Slurm (slurm-wlm) or munge is not installed")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool/n1", "spool/n2", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    started_munge = None
    if not _munge_works():
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", _which("munged")], timeout=20, check=True)
        started_munge = Path("/run/munge/munged.pid")
        for _ in range(50):
            if _munge_works():
                break
            time.sleep(0.1)
    base = random.randint(20000, 29000)
    conf = d / "slurm.conf"
    conf.write_text(CONF.format(host=socket.gethostname(), d=d, ctld_port=base, p1=base + 1, p2=base + 2))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        subprocess.run([ctld, "-c"], env=env, timeout=30, check=True)
        for n in ("n1", "n2"):
            subprocess.run([slurmd, "-N", n], env=env, timeout=30, check=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=10)
            if r.stdout.split() and all(s == "idle" for s in r.stdout.split()):
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"Slurm nodes never became idle: {r.stdout!r}")
        yield env
    finally:
        for pid in ("slurmd-n1.pid", "slurmd-n2.pid", "slurmctld.pid"):
            _stop(d / pid)
        if started_munge is not None:
            _stop(started_munge)


def _cb(args, env, timeout=180):
    return subprocess.run([sys.executable, "-m", "clusterbench", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_submit_runs_end_to_end_and_imports_the_run(slurm, tmp_path):
    db = tmp_path / "slurm.db"
    out = tmp_path / "job-%j.out"
    r = _cb(["launch", "slurm", "--submit", "--nodes", "2", "--time", "5", "--output", str(out),
             "--env", "MASTER_ADDR=127.0.0.1", "--env", "OMP_NUM_THREADS=1",
             "--env", "NCCL_IB_QPS_PER_CONNECTION=4", "--wait-timeout", "150", "--db", str(db), "--json",
             "--", "coll", "all_reduce", "-b", "64K", "-e", "256K", "-n", "3", "-w", "1",
             "--device", "cpu", "--tag", "who=$(touch /tmp/cb6-pwned)"], slurm)
    logs = "\n".join(p.read_text() for p in tmp_path.glob("job-*.out"))
    assert r.returncode == 0, r.stderr + logs
    assert "COMPLETED" in r.stderr and "2 rank(s)" in r.stderr
    lines = check_lines(r.stdout)  # --json: the stored run's lines, valid against the schema
    assert lines[-1]["kind"] == "run" and lines[-1]["status"] == "complete" and lines[-1]["ranks"] == 2
    with Store.open(db) as store:
        runs = store.list_runs()
        assert len(runs) == 1
        run = runs[0]
        assert run.status == "complete" and run.ranks == 2
        assert run.meta.get("launcher") == "slurm"
        assert run.tags["who"] == "$(touch /tmp/cb6-pwned)"   # a tag is data, never code
        assert store.measurements(run.id)
    assert not os.path.exists("/tmp/cb6-pwned")


def test_sbatch_missing_is_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    r = _cb(["launch", "slurm", "--submit", "--nodes", "2", "--db", str(tmp_path / "x.db"), "--", "net"],
            env, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: sbatch not found")
