"""A real Slurm on this host for tests: slurmctld and two slurmd "nodes" (n1, n2), started with a
private configuration and ports, stopped afterwards. ``slurm_or_skip`` is a fixture body: it
yields the environment (``SLURM_CONF``) every Slurm command of the test must run with, and skips
with the reason when not root or Slurm/munge is not installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from process_helpers import free_ports

from clusterbench.launch import drain

SBIN = ["/usr/sbin", "/usr/bin"]
NODES = ("n1", "n2")


def which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.path.exists(f"{d}/{name}")), None)


def _munge_works() -> bool:
    munge, unmunge = which("munge"), which("unmunge")
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


def slurm_or_skip(d: Path):
    """Start Slurm with its files under ``d``; yield the environment; stop it afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run slurmctld and slurmd")
    ctld, slurmd = which("slurmctld"), which("slurmd")
    if not ctld or not slurmd or not which("sbatch") or not which("munged"):
        pytest.skip("Slurm (slurm-wlm) or munge is not installed")
    for sub in ("state", *(f"spool/{n}" for n in NODES), "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    started_munge = None
    if not _munge_works():
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", which("munged")], timeout=20, check=True)
        started_munge = Path("/run/munge/munged.pid")
        for _ in range(50):
            if _munge_works():
                break
            time.sleep(0.1)
    ctld_port, p1, p2 = free_ports(3, "0.0.0.0")   # the daemons listen on every address
    conf = d / "slurm.conf"
    conf.write_text(CONF.format(host=socket.gethostname(), d=d, ctld_port=ctld_port, p1=p1, p2=p2))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        subprocess.run([ctld, "-c"], env=env, timeout=30, check=True)
        for n in NODES:
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
        for pid in (*(f"slurmd-{n}.pid" for n in NODES), "slurmctld.pid"):
            _stop(d / pid)
        if started_munge is not None:
            _stop(started_munge)


LOOSE = "Slurm reads it loosely"   # the one refusal message that claims Slurm's acceptance exactly


def _node(env: dict, name: str) -> drain.SlurmNode:
    r = subprocess.run(["scontrol", "show", "node", name], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return drain.parse_scontrol_node(r.stdout, name)
