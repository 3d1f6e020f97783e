"""An emulated cluster on one machine: network namespaces joined by a bridge, one per host.

Each host is a namespace with its own address on ``eth0``; the bridge lives in its own
namespace so the machine's network is untouched. Names carry this process's id, so clusters
of parallel test sessions never clash, and ``Cluster.close`` removes everything even after a
failure. ``agent`` is an ssh-like launch agent (``agent HOST WORD...`` runs the words with a
shell inside that host's namespace), which clusterbench's launchers and Open MPI both accept.

Namespaces share one hostname and one /tmp, where real hosts have their own: Open MPI's daemons
make their session directories under ``$TMPDIR/ompi.HOSTNAME.UID/jf.JOB/``, so two "hosts"
creating that path at the same moment raced (``mkdir ... File exists``, orte_init failed, mpirun
exit 213, about 1 launch in 8 here under load). Each host gets its own ``TMPDIR`` (``host_env``).

Root only: ``cluster_or_skip`` skips when not root or ``ip netns`` does not work.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

IP = shutil.which("ip") or "/usr/sbin/ip"
TC = shutil.which("tc") or "/usr/sbin/tc"


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = [IP, "netns", "exec", ns, *args] if ns else [IP, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=check)


def netns_usable() -> str | None:
    """None when namespaces can be created here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not Path(IP).exists():
        return "iproute2 `ip` not found"
    probe = f"cbprobe{os.getpid()}"
    try:
        r = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return f"`ip netns add` failed: {r.stderr.strip()}"
        subprocess.run([IP, "netns", "del", probe], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`ip netns` unavailable: {e}"
    return None


@dataclass
class Cluster:
    prefix: str
    n: int
    subnet: str                      # e.g. "10.213.7"
    workdir: Path
    hosts: list[str] = field(default_factory=list)      # addresses, one per host
    namespaces: list[str] = field(default_factory=list)
    switch: str = ""
    agent: str = ""
    shaped: set[int] = field(default_factory=set)

    def ns_of(self, host: str) -> str:
        return self.namespaces[self.hosts.index(host)]

    def exec_argv(self, i: int, argv: list[str]) -> list[str]:
        return [IP, "netns", "exec", self.namespaces[i], *argv]

    def tmpdir(self, i: int) -> Path:
        """Host i's own temporary directory (its /tmp)."""
        return self.workdir / f"tmp-node{i}"

    def host_env(self, i: int) -> dict[str, str]:
        """The environment the agent gives a command on host i, for one started there directly."""
        return {"CLUSTERBENCH_HOSTNAME": f"node{i}", "TMPDIR": str(self.tmpdir(i)), "OMP_NUM_THREADS": "1"}

    def shape(self, i: int, rate: str = "1gbit") -> None:
        """tbf on both directions of host i: its egress, and the bridge port towards it."""
        for dev, ns in (("eth0", self.namespaces[i]), (f"{self.prefix}v{i}", self.switch)):
            _ip("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                "burst", "256kb", "latency", "10ms", ns=ns)
        self.shaped.add(i)

    def unshape(self, i: int) -> None:
        for dev, ns in (("eth0", self.namespaces[i]), (f"{self.prefix}v{i}", self.switch)):
            _ip("tc", "qdisc", "del", "dev", dev, "root", ns=ns, check=False)
        self.shaped.discard(i)

    def link(self, i: int, up: bool) -> None:
        _ip("ip", "link", "set", "eth0", "up" if up else "down", ns=self.namespaces[i])

    def close(self) -> None:
        for ns in [*self.namespaces, self.switch]:
            if ns:
                # Kill what still runs inside (a test that failed mid-run), then remove.
                pids = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True,
                                      timeout=10).stdout.split()
                for pid in pids:
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, ValueError):
                        pass
                subprocess.run([IP, "netns", "del", ns], capture_output=True, timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


_AGENT = """#!/bin/sh
# ssh-like launch agent for an emulated cluster: AGENT HOST WORD... runs the words with a
# shell inside HOST's network namespace, with CLUSTERBENCH_HOSTNAME naming the host and TMPDIR
# its own temporary directory.
host="$1"; shift
case "$host" in
{cases}
  *) echo "agent: no route to host $host" >&2; exit 255;;
esac
exec {ip} netns exec "$ns" env CLUSTERBENCH_HOSTNAME="$name" TMPDIR="$tmp" OMP_NUM_THREADS=1 \
  /bin/sh -c "$*"
"""


def create_cluster(n: int = 3) -> Cluster:
    tag = f"cb{os.getpid() % 100000}{random.randint(0, 9)}"
    subnet = f"10.{random.randint(100, 250)}.{random.randint(0, 250)}"
    c = Cluster(prefix=tag, n=n, subnet=subnet, workdir=Path(tempfile.mkdtemp(prefix=f"{tag}-")))
    try:
        c.switch = f"{tag}s"
        _ip("netns", "add", c.switch)
        _ip("ip", "link", "add", "br0", "type", "bridge", ns=c.switch)
        _ip("ip", "link", "set", "br0", "up", ns=c.switch)
        for i in range(n):
            ns, veth = f"{tag}h{i}", f"{tag}v{i}"
            _ip("netns", "add", ns)
            c.namespaces.append(ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "netns", c.switch)
            _ip("ip", "link", "set", veth, "master", "br0", ns=c.switch)
            _ip("ip", "link", "set", veth, "up", ns=c.switch)
            addr = f"{subnet}.{i + 1}"
            _ip("ip", "addr", "add", f"{addr}/24", "dev", "eth0", ns=ns)
            _ip("ip", "link", "set", "eth0", "up", ns=ns)
            _ip("ip", "link", "set", "lo", "up", ns=ns)
            c.hosts.append(addr)
        for i in range(n):
            c.tmpdir(i).mkdir()
        cases = "\n".join(f'  {h}) ns={ns}; name=node{i}; tmp={c.tmpdir(i)};;' for i, (h, ns) in
                          enumerate(zip(c.hosts, c.namespaces)))
        agent = c.workdir / "agent.sh"
        agent.write_text(_AGENT.format(cases=cases, ip=IP))
        agent.chmod(agent.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        c.agent = str(agent)
    except BaseException:
        c.close()
        raise
    return c


def cluster_or_skip(n: int = 3):
    """Generator body for a fixture: yields a Cluster and always tears it down."""
    reason = netns_usable()
    if reason:
        pytest.skip(reason)
    c = create_cluster(n)
    try:
        yield c
    finally:
        c.close()


COLL = ["coll", "all_reduce", "-b", "4M", "-e", "4M", "-n", "5", "-w", "1", "--device", "cpu"]


GLOO = ["--env", "GLOO_SOCKET_IFNAME=eth0"]


def _cb(args, timeout=240, ns=None, env=None):
    argv = [sys.executable, "-m", "clusterbench", *args]
    if ns:
        argv = [IP, "netns", "exec", ns, *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _hostlist_cb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *args], capture_output=True, text=True,
                          timeout=120)
