"""Slurm hostlists: the expansion matches ``scontrol show hostnames`` where Slurm is installed,
malformed lists and huge ones are one line, and every --hosts/--nodelist/Nodes= takes them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tracemalloc

import pytest

from clusterbench.errors import UsageError
from clusterbench.hostlist import MAX_HOSTS, expand_hostlist
from clusterbench.sweep.analyze import parse_topology

# Expressions both parsers accept, and what they expand to.
ACCEPTED = [
    "x[1-3]", "rack[1-2]-node[01-02]", "x[1-3,5],y[08-11]", "x[1-010]", "x[01-3]", "x[9-11]",
    "x[009-011]", "x[1-2][3-4]", "a[1-2]b[3-4]", "[1-2]", "a,,b", "x[1-3],x2", "x[1,1]", "x-[1-2]",
    "x.y[1-2]", "n[1-2],m", "x[1-3],", ",x", "x y", "x[1,3-4,7]", "x[00-02]", "x[0-0]", "x[7-07]",
    "x[1-2],[3-4]", "gpu[001-100]", "node1", "rack[1-3]-gpu[1-4,7]-nic[0-1]", "X[1-2]",
    "a[1-2]b[1-2]c[1-2]d[1-2]",
]
# Expressions Slurm refuses ("Invalid hostlist"); so does clusterbench, with one line.
REFUSED = [
    "gpu[a-b]", "x[3-1]", "x[010-1]", "x[]", "x[-1]", "x[1-2-3]", "x[1-4:2]", "x[1-3,]", "x[,1]",
    "x[1,,2]", "x[a]", "x[1a]", "x[1-2b]", "n[1-2]a", "x[0-2]y", "rack[1-2]-node", "x[1-2].ib",
    "x[[1-2]]", "x[1-2]]", "x[1-65537]",
]


def _scontrol(tmp_path_factory) -> list[str] | None:
    exe = shutil.which("scontrol")
    if exe is None:
        return None
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    # scontrol reads a configuration before it parses anything; a minimal one is enough offline
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\n"
                    "PartitionName=p Nodes=n1\n")
    return [exe, str(conf)]


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory):
    found = _scontrol(tmp_path_factory)
    if found is None:
        pytest.skip("scontrol (Slurm) is not installed")
    return found


def _slurm_expand(scontrol: list[str], spec: str) -> list[str] | None:
    exe, conf = scontrol
    r = subprocess.run([exe, "show", "hostnames", spec], capture_output=True, text=True, timeout=30,
                       env={"SLURM_CONF": conf, "PATH": "/usr/bin:/bin"})
    if "Invalid hostlist" in r.stderr or r.returncode != 0:
        return None
    return r.stdout.split()


@pytest.mark.parametrize("spec", ACCEPTED)
def test_expansion_matches_scontrol(scontrol, spec):
    want = _slurm_expand(scontrol, spec)
    assert want is not None, f"Slurm refuses {spec!r}"
    assert expand_hostlist(spec) == want


@pytest.mark.parametrize("spec", REFUSED)
def test_refused_where_scontrol_refuses(scontrol, spec):
    assert _slurm_expand(scontrol, spec) is None, f"Slurm accepts {spec!r}"
    with pytest.raises(UsageError) as e:
        expand_hostlist(spec, "--hosts")
    assert "\n" not in str(e.value) and "--hosts" in str(e.value)


def test_expansion_without_slurm():
    # the same facts, so they hold where Slurm is not installed
    assert expand_hostlist("rack[1-2]-node[01-02]") == ["rack1-node01", "rack1-node02", "rack2-node01",
                                                        "rack2-node02"]
    assert expand_hostlist("gpu[08-11,20],login1") == ["gpu08", "gpu09", "gpu10", "gpu11", "gpu20", "login1"]
    assert expand_hostlist("x[1-010]")[-2:] == ["x9", "x10"]
    with pytest.raises(UsageError, match="'a-b' in \\[\\] is not a number"):
        expand_hostlist("gpu[a-b]")


@pytest.mark.parametrize("spec", ["x[1-3", "x]1[", "x[ 1-2]", "x[+1-2]", "x[1-]"])
def test_stricter_than_slurm_where_slurm_accepts_by_accident(spec):
    # scontrol turns these into odd names ("x]", "x]1]") or pads them ("x01"): refused here
    with pytest.raises(UsageError):
        expand_hostlist(spec)


def test_cap_is_checked_before_any_name_is_built():
    tracemalloc.start()
    try:
        with pytest.raises(UsageError, match=f"more than the {MAX_HOSTS:,}"):
            expand_hostlist("gpu[1-60000],rack[1-40000]-n[1-2]")
        with pytest.raises(UsageError, match="65,536"):
            expand_hostlist("gpu[1-99999999]")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing near 100,000 strings was allocated
    assert len(expand_hostlist("gpu[1-50000],cpu[1-50000]")) == MAX_HOSTS


def _cb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *args], capture_output=True, text=True,
                          timeout=120)


def test_sweep_hosts_huge_or_malformed_is_one_line():
    r = _cb("sweep", "--hosts", "gpu[1-99999999]", "--", "net")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "65,536" in r.stderr and r.stderr.startswith("clusterbench: error: invalid --hosts")
    r = _cb("sweep", "--hosts", "gpu[a-b]", "--", "net")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'a-b'" in r.stderr


def test_launchers_take_the_grammar(tmp_path):
    r = _cb("launch", "torchrun", "--hosts", "rack[1-2]-n[1-2]", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and "rack2-n2" in lines[-1] and "--rdzv_endpoint=rack1-n1:29400" in lines[0]
    r = _cb("launch", "mpi", "--hosts", "gpu[01-02]", "--procs-per-node", "4", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    assert "-H gpu01:4,gpu02:4" in r.stdout and "-n 8" in r.stdout
    r = _cb("launch", "mpi", "--print", "--", "net")
    assert r.returncode == 2 and "--hostfile PATH or --hosts" in r.stderr
    r = _cb("launch", "slurm", "--nodelist", "rack[1-2]-gpu[01-02] login1", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    assert "#SBATCH --nodelist=rack[1-2]-gpu[01-02],login1" in r.stdout
    assert "#SBATCH --nodes=5" in r.stdout
    r = _cb("launch", "slurm", "--nodelist", "gpu[01-04]", "--nodes", "2", "--print", "--", "net")
    assert r.returncode == 2 and "names 4 nodes" in r.stderr
    r = _cb("launch", "slurm", "--nodelist", "gpu[1-2];reboot", "--print", "--", "net")
    assert r.returncode == 2 and r.stderr.startswith("clusterbench: error: invalid --nodelist")


def test_topology_uses_the_same_parser():
    topo = parse_topology("SwitchName=s1 Nodes=rack1-n[1-2]\nSwitchName=s2 Nodes=rack2-n[01-02],x\n")
    assert topo == {"rack1-n1": "s1", "rack1-n2": "s1", "rack2-n01": "s2", "rack2-n02": "s2", "x": "s2"}
    with pytest.raises(UsageError, match=r"^topo.conf line 2: invalid Nodes= 'n\[a-b\]'"):
        parse_topology("# leaf\nSwitchName=s1 Nodes=n[a-b]\n", "topo.conf")
