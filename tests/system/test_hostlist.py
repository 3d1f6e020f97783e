"""System tests (hostlist): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from clusterbench.errors import UsageError
from clusterbench.hostlist import expand_hostlist

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
