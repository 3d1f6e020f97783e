"""System tests (env): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from system_cli import _argv, _cb, _env, _reference


@pytest.fixture(scope="module")
def db(db_stdio) -> str:
    """The stored stream and nccl runs (system/conftest db_stdio) every read here is of."""
    return db_stdio


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "latin-1"},
                                 {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}],
                         ids=["latin-1", "C-locale"])
@pytest.mark.parametrize("name", ["list", "show", "trend", "env-show"])
def test_other_narrow_encodings_escape_only_what_they_cannot_hold(db, tmp_path, name, env):
    """latin-1 holds µ, ü, ± and ² (written as themselves), not œ or →; the C locale without
    UTF-8 mode is ASCII with Python's surrogateescape, which refuses them all just the same."""
    encoding = "latin-1" if "PYTHONIOENCODING" in env else "ascii"
    want = _reference(name, db, tmp_path)
    got = _cb(_argv(name, db, tmp_path), _env(**env))
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout.decode().encode(encoding, "backslashreplace")


# -- the execution context: a cgroup's quota, taskset, a network namespace ------------------

COLL = ["coll", "all_reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--np", "2", "--device", "cpu"]


@pytest.fixture
def quota_cgroup():
    from cgroup_fixtures import quota_cgroup_or_skip

    yield from quota_cgroup_or_skip()


def _diff(db: Path, a: str, b: str) -> dict[str, tuple]:
    p = _cb(["env", "diff", a, b, "--json", "--db", str(db)], text=True)
    assert p.returncode == 0, p.stderr
    import json

    lines = [json.loads(line) for line in p.stdout.splitlines()]
    return {d["key"]: (d["category"], d["a"], d["b"]) for d in lines if d["kind"] == "difference"}


def test_env_diff_names_a_cpu_quota_and_a_taskset(tmp_path, quota_cgroup):
    """The first seed question, containers against bare metal: a run under ``taskset -c 0`` in a
    cgroup with half a CPU against a plain run (before: ``0 difference(s)``)."""
    import shutil

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs: taskset -c 0 changes nothing on one")
    db = tmp_path / "ctx.db"
    plain = _cb([*COLL, "--db", str(db)], text=True)
    assert plain.returncode == 0, plain.stderr
    taskset = shutil.which("taskset")
    pinned = [taskset, "-c", "0"] if taskset else []
    p = subprocess.run([*pinned, sys.executable, "-m", "clusterbench", *COLL, "--db", str(db)], env=_env(),
                       capture_output=True, text=True, timeout=120,
                       preexec_fn=quota_cgroup.enter if taskset else lambda: (
                           quota_cgroup.enter(), os.sched_setaffinity(0, {0})))
    assert p.returncode == 0, p.stderr
    diffs = _diff(db, "1", "2")
    assert diffs["cgroup.cpu_max"] == ("context", "max 100000", quota_cgroup.cpu_max)
    allowed = diffs["process.cpus_allowed"]
    assert allowed[0] == "context" and allowed[2] == "0"
    # the CPUs each rank got, asked in the rank
    assert diffs["ranks.0.cpus"][2] == diffs["ranks.1.cpus"][2] == "0"
    shown = _cb(["env", "diff", "1", "2", "--db", str(db)], text=True).stdout
    assert "cgroup.cpu_max" in shown and f"max 100000  ->  {quota_cgroup.cpu_max}" in shown
    assert "0 difference(s)" not in shown


@pytest.fixture
def one_host():
    from cluster_fixtures import cluster_or_skip

    yield from cluster_or_skip(1)


def test_a_run_in_a_network_namespace_over_veth_names_the_kind(tmp_path, one_host):
    """``ip netns exec``: the namespace's eth0 is a veth (the other end on a bridge); the
    inventory names its kind and driver, and env diff against a run outside names them too."""
    import json

    env = {**_env(), **one_host.host_env(0)}
    p = subprocess.run(one_host.exec_argv(0, [sys.executable, "-m", "clusterbench", "env", "--json"]), env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    inv = json.loads(p.stdout)
    eth0 = next(n for n in inv["nics"] if n["name"] == "eth0")
    assert (eth0["kind"], eth0["driver"], eth0["virtual"], eth0["pci"]) == ("veth", "veth", True, None)
    outside = json.loads(_cb(["env", "--json"], text=True).stdout)
    assert inv["netns"]["inode"] != outside["netns"]["inode"]
    text = subprocess.run(one_host.exec_argv(0, [sys.executable, "-m", "clusterbench", "env"]), env=env,
                          capture_output=True, text=True, timeout=120).stdout
    assert "nic       eth0: veth, up" in text and "driver veth" in text
    db = tmp_path / "ns.db"
    assert _cb([*COLL, "--db", str(db)], text=True).returncode == 0
    p = subprocess.run(one_host.exec_argv(0, [sys.executable, "-m", "clusterbench", *COLL, "--db", str(db)]),
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    diffs = _diff(db, "1", "2")
    assert diffs["nics.eth0.kind"][1:] == (next((n["kind"] for n in outside["nics"] if n["name"] == "eth0"), None),
                                          "veth")
    assert diffs["nics.eth0.driver"][2] == "veth"
    assert diffs["netns.inode"][0] == "context"
