"""System tests (hostlist slurm): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import ast
import random
import re
import shutil
import subprocess

import pytest
from slurm_fixtures import LOOSE

from clusterbench.errors import UsageError
from clusterbench.hostlist import MAX_HOSTS, MAX_NUMBER, REFUSED_HERE, expand_hostlist

HAND_PICKED = [
    # zero padding: the low number's width
    "gpu[8-10]", "gpu[08-10]", "gpu[008-10]", "gpu[8-010]", "gpu[08-100]", "gpu[001-1]", "gpu[00]",
    "gpu[0]", "gpu[0000000000000000000000001-2]", "gpu[007]",
    # several bracket groups, text between them, text after the last
    "rack[1-2]-gpu[1-3]", "a[1-2]b[3-4]", "a[1-2]b[1-2]c[1-2]", "x[1-2]x[1-2]x[1-2]", "[1-2][3-4]",
    "a[1-2]b", "x[1-2]y[1-2]z", "[1-2]x", "x[1-2]-", "x[1]y", "x[1-2].ib", "n[1-2]a]",
    # commas and separators inside and outside brackets
    "x[1,2]", "x[1-2,4,6-7]", "x[1-3],y[2]", "x[1-2],,y", ",x,", "x[1-3,]", "x[,1]", "x[1,,2]",
    "x y", "x\ty", "x[1-2]\ty", "x [1-2]", "x[1-2] [3-4]", " x ", "", ",", " , ", "\t",
    # duplicates and order
    "x[1-2],x[1-2]", "x[2,1]", "x[3,1-2,1]", "b,a,b",
    # single values, descending and empty ranges
    "x[5]", "x[5-5]", "x[5-3]", "x[010-1]", "x[]", "[]", "x[-]", "x[-1]", "x[1--2]", "x[1-2-3]",
    # unbalanced brackets
    "x[", "x]", "[", "]", "x[1-2", "x[01-02", "x]y", "x[1],y]", "x[[1]", "x[1][", "x[1-2]]",
    "x[1]]", "x[[1-2]]",
    # white space and signs inside brackets (Slurm's number reading skips them)
    "x[ 1-2]", "x[1 -2]", "x[1- 2]", "x[ 1]", "x[1 ]", "x[ 1-2 ]", "x[\t1]", "x[1\t-2]", "x[+1]",
    "x[+1-+3]", "x[1-+2]", "x[ +1]", "x[1-]", "x[01-]", "x[1a-2]", "x[1y-2]", "x[1x-2]",
    # not numbers
    "x[a]", "x[a-b]", "x[1a]", "x[0x1]", "x[1e2]", "x[1_0]", "x[1;2]", "x[1:2]", "x[1-4:2]",
    "x[\u0661-\u0663]", "x[\uff11-\uff13]",
    # control characters: Slurm keeps them in names
    "x\ny", "x[1-2]\n", "y\nx[1-2]", "x\ry", "x\vy", "x\fy", "x[\r1]", "x\x7fy",
    # range and number limits
    "x[1-65536]", "x[0-65536]", "x[1-99999999]", "x[4294967295-4294967296]",
    f"x[{MAX_NUMBER}]", f"x[{MAX_NUMBER - 1}-{MAX_NUMBER}]", f"x[{MAX_NUMBER + 1}]",
    f"x[{MAX_NUMBER}-{MAX_NUMBER + 1}]", "x[99999999999999999999]",
    f"x[1-{MAX_HOSTS // 2 + 1}],y[1-{MAX_HOSTS // 2}]",
    # dots, dashes, underscores, IPv4, other name characters
    "a.b_c-d[1-2]", "node-1_a.b", "10.0.0.[1-3]", "10.0.[0-1].[1-2]", "10.0.0.1,10.0.0.2",
    "192.168.[1-2].[001-2]", "x-[1-2]", "x_[1-2]", "x.[1-2]", "node1[1-2]", "\u00fc[1-2]", "x:1,y@z",
    "x/[1-2]", "x'[1-2]", "x\u00a0y", "X[1-2]", "gpu[001-100]", "rack[1-3]-gpu[1-4,7]-nic[0-1]",
]


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory) -> list[str]:
    exe = shutil.which("scontrol")
    if exe is None:
        pytest.skip("scontrol (Slurm) is not installed")
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    # scontrol reads a configuration before it parses anything; a minimal one is enough offline
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\n"
                    "PartitionName=p Nodes=n1\n")
    return [exe, str(conf)]


def _run(scontrol: list[str], what: str, arg: str) -> bytes | None:
    exe, conf = scontrol
    # bytes, not text: text mode would turn a '\r' in a name into a newline
    r = subprocess.run([exe, "show", what, arg], capture_output=True, timeout=30,
                       env={"SLURM_CONF": conf, "PATH": "/usr/bin:/bin"})
    # "error: ... Invalid range" alone: Slurm dropped a name with a bad first range among three or
    # more bracket groups ('a[5-3]b[1]c[1],d' prints only d), its refusal of that name
    if r.returncode != 0 or b"Invalid hostlist" in r.stderr or b"error:" in r.stderr:
        return None
    return r.stdout


def _slurm_expand(scontrol: list[str], spec: str) -> list[str] | None:
    out = _run(scontrol, "hostnames", spec)
    if out is None:
        return None
    return [name.decode("utf-8", "surrogateescape") for name in out.split(b"\n")[:-1]]


def _slurm_compress(scontrol: list[str], names: list[str]) -> str:
    out = _run(scontrol, "hostlist", ",".join(names))
    assert out is not None, names
    return out.decode().strip()


def _difference(scontrol: list[str], spec: str) -> str | None:
    """Where clusterbench and Slurm disagree on ``spec``, in words; None where they agree."""
    want = _slurm_expand(scontrol, spec)
    try:
        got = expand_hostlist(spec, "--hosts")
    except UsageError as e:
        msg = str(e)
        if "\n" in msg or "--hosts" not in msg:
            return f"{spec!r}: not a one-line error naming --hosts: {msg!r}"
        if want is not None and REFUSED_HERE not in msg:
            return f"{spec!r}: Slurm gives {want[:5]}..., clusterbench refuses without saying why: {msg}"
        if want is None and "Slurm has no such limit" in msg:
            return f"{spec!r}: Slurm refuses it too, but the error says it has no limit: {msg}"
        loose = re.search(r": ('.*') in \[\] is not", msg) if LOOSE in msg else None
        if loose and _slurm_expand(scontrol, f"x[{ast.literal_eval(loose.group(1))}]") is None:
            return f"{spec!r}: Slurm refuses {loose.group(1)} in [] too, but the error says it accepts it"
        return None
    if want is None:
        return f"{spec!r}: Slurm refuses it, clusterbench gives {got[:5]}..."
    if got != want:
        return f"{spec!r}: Slurm gives {want[:8]}..., clusterbench {got[:8]}..."
    return None


def _number(rng: random.Random, top: int = 12) -> str:
    n = rng.randint(0, top)
    return f"{n:0{rng.choice([1, 1, 2, 3])}d}"


def _part(rng: random.Random) -> str:
    lo = _number(rng)
    roll = rng.random()
    if roll < 0.35:
        return lo
    if roll < 0.85:   # mostly ascending, sometimes descending, sometimes equal
        return f"{lo}-{_number(rng, 20)}"
    return rng.choice([f" {lo}", f"+{lo}", f"{lo}-", f"{lo} -3", f"-{lo}", f"{lo}a", "", f"{lo}-x"])


def _group(rng: random.Random) -> str:
    body = ",".join(_part(rng) for _ in range(rng.choice([1, 1, 2, 3])))
    roll = rng.random()
    if roll < 0.04:
        return "[" + body          # unclosed
    if roll < 0.07:
        return body + "]"          # stray
    if roll < 0.09:
        return "[[" + body + "]"   # nested
    return "[" + body + "]"


def _name(rng: random.Random) -> str:
    name = rng.choice(["gpu", "node", "n", "rack1-n", "a.b_c-", "10.0.0.", "x-", "", "X_", "h1"])
    for i in range(rng.choice([0, 1, 1, 1, 2, 2, 3])):
        if i:
            name += rng.choice(["", "-", ".", "_", "b", "-gpu", "1"])
        name += _group(rng)
    if rng.random() < 0.06:
        name += rng.choice(["-ib", "a", "]", "."])
    return name


def _hostlist(rng: random.Random) -> str:
    names = [_name(rng) for _ in range(rng.choice([1, 1, 2, 3, 4]))]
    out = names[0]
    for name in names[1:]:
        out += rng.choice([",", ",", " ", "\t", ", ", ",,", " , "]) + name
    if rng.random() < 0.1:
        out = rng.choice([" ", ",", "\t"]) + out + rng.choice([" ", ",", "\t", ""])
    return out


@pytest.mark.parametrize("spec", HAND_PICKED)
def test_hand_picked_lists_match_slurm(scontrol, spec):
    assert _difference(scontrol, spec) is None


@pytest.mark.parametrize("seed", range(4))
def test_generated_lists_match_slurm(scontrol, seed):
    rng = random.Random(seed)
    specs = [_hostlist(rng) for _ in range(100)]
    differences = [d for d in (_difference(scontrol, spec) for spec in specs) if d]
    assert not differences, "\n".join(differences)
    # the generator must reach both outcomes, or this test could not fail
    outcomes = {_slurm_expand(scontrol, spec) is None for spec in specs}
    assert outcomes == {True, False}


@pytest.mark.parametrize("seed", range(3))
def test_slurm_compressed_lists_expand_back(scontrol, seed):
    # what SLURM_JOB_NODELIST and sinfo print: Slurm's own compression, with padding, duplicates,
    # IPv4 addresses and several numbers in a name
    rng = random.Random(100 + seed)
    for _ in range(25):
        names = []
        for _ in range(rng.randint(1, 30)):
            prefix = rng.choice(["gpu", "node-", "rack2-n", "a.b_", "10.0.1.", "r1b", "login"])
            names.append(prefix + _number(rng, 40) if prefix != "login" else prefix)
        compressed = _slurm_compress(scontrol, names)
        assert _difference(scontrol, compressed) is None
        assert expand_hostlist(compressed) == names, compressed
