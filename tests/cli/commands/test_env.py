"""Tests of clusterbench.cli.commands.env: ``clusterbench env``."""

import json
import re
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from bench_cli import _cli
from gpu_fakes import _odd_nvml
from host_doubles import ARM_VM, DATA, _inv, _tree
from hostile_text import DEEP, _cb, _clean, cli_store_env
from judge_helpers import cli, run_cli
from launch_rows import BASE, _main_container
from paths import TESTS

from clusterbench.cli import main
from clusterbench.cli.commands import env as env_cmd
from clusterbench.envinfo import gpulib, inventory, torchcheck
from clusterbench.envinfo.diff import Difference
from clusterbench.records import Run
from clusterbench.store import Store


def _save(db, hosts_inv, versions=None, env=None):
    run = Run(benchmark="all_reduce", hosts=list(hosts_inv) or ["old"], versions=versions or {},
              env=env or {}, meta={"inventory": hosts_inv} if hosts_inv else {})
    with Store.open(db) as store:
        return store.save_run(run, [])


K8S_KINDS = ("k8s", "k8s-mpijob", "k8s-cron")


def _run(rid: int) -> str:
    return json.dumps({"kind": "run", "id": rid, "benchmark": "coll", "source": "clusterbench 1",
                       "command": ["x"], "started_at": "2026-01-02T00:00:00.000Z", "ended_at": None,
                       "status": "complete", "hosts": ["h1"], "ranks": 2, "devices": [], "versions": {},
                       "env": {"a": str(rid)}, "tags": {}, "errors": [], "meta": {"n": 1}})


def _store(capsys, db: str, tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    log.write_text(_run(1) + "\n" + _run(2) + "\n")
    rc, _, err = cli(capsys, "import", log, "--db", db)
    assert rc == 0, err


def test_cli_diff_two_runs(db, capsys):
    r1 = _save(db, {"node-a": _inv()})
    r2 = _save(db, {"node-a": _inv(mtu=1500)})
    code, out, _ = _cli(["env", "diff", str(r1), str(r2), "--db", db], capsys)
    assert code == 0
    assert "1 difference(s)" in out and "nics.ens1.mtu" in out and "9000  ->  1500" in out
    code, out, _ = _cli(["env", "diff", str(r1), str(r2), "--db", db, "--json"], capsys)
    row, summary = [json.loads(line) for line in out.splitlines()]
    assert row["kind"] == "difference" and row["key"] == "nics.ens1.mtu" and row["a"] == 9000 and row["b"] == 1500
    assert row["left"].startswith(f"run {r1}") and summary["differences"] == 1
    # --exit-code: 1 on differences (git diff --exit-code), 0 without
    code, _, _ = _cli(["env", "diff", str(r1), str(r2), "--db", db, "--exit-code"], capsys)
    assert code == 1
    code, _, _ = _cli(["env", "diff", str(r1), str(r1), "--db", db, "--exit-code"], capsys)
    assert code == 0


def test_cli_diff_hosts_of_one_run(db, capsys):
    rid = _save(db, {"node-a": _inv(), "node-b": _inv(host="node-b", gid_index=1), "node-c": _inv(host="node-c")})
    code, out, _ = _cli(["env", "diff", str(rid), "--db", db, "--json"], capsys)
    rows = [json.loads(line) for line in out.splitlines() if '"difference"' in line]
    assert code == 0 and [(r["key"], r["right"].split("(")[1].split(")")[0]) for r in rows] == \
        [("env.NCCL_IB_GID_INDEX", "node-b")]  # every host against the first; node-c matches node-a
    code, out, _ = _cli(["env", "diff", str(rid), "--hosts", "node-b,node-c", "--db", db], capsys)
    assert code == 0 and "env.NCCL_IB_GID_INDEX" in out and "1  ->  3" in out


def test_cli_diff_old_runs_without_inventory(db, capsys):
    r1 = _save(db, {}, versions={"torch": "2.3"}, env={"NCCL_ALGO": "Ring"})
    r2 = _save(db, {}, versions={"torch": "2.4"}, env={})
    code, out, _ = _cli(["env", "diff", str(r1), str(r2), "--db", db], capsys)
    assert code == 0 and "versions.torch" in out and "env.NCCL_ALGO" in out and "no inventory stored" in out


def test_cli_diff_against_local(db, capsys):
    rid = _save(db, {"node-a": _inv()})
    code, out, _ = _cli(["env", "diff", str(rid), "local", "--db", db], capsys)
    assert code == 0 and "this host" in out


@pytest.mark.parametrize("args,message", [
    (["999"], "no run 999"),
    (["RUN1"], "has 1 host(s)"),
    (["RUN1", "--hosts", "a,b,c"], "--hosts"),
    (["RUN1", "RUN1", "--hosts", "nope"], "no host 'nope'"),
])
def test_cli_diff_usage_errors(db, capsys, args, message):
    rid = _save(db, {"node-a": _inv()})
    args = [str(rid) if a == "RUN1" else a for a in args]
    code, _, err = _cli(["env", "diff", *args, "--db", db], capsys)
    assert code == 2 and err.startswith("clusterbench: error:") and message in err


def test_cli_env_json(capsys):
    code = 0
    try:
        main(["env", "--json", "--root", str(DATA / "mi300x-node")])
    except SystemExit as e:
        code = e.code
    inv = json.loads(capsys.readouterr().out)
    assert code == 0 and inv["gpus"][0]["compute_partition"] == "CPX"


def test_cli_env_table(capsys):
    try:
        main(["env", "--root", str(DATA / "h100-node")])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert "rdma      mlx5_1 port 1: ACTIVE, 100 Gb/sec (2X HDR)" in out
    assert "3=RoCE v2(ens1f0np0)" in out and "x8/x16" in out


def test_cli_env_show(db, capsys):
    rid = _save(db, {"node-a": inventory.collect(DATA / "mi300x-node", environ={"NCCL_IB_GID_INDEX": "3"}),
                     "node-b": _inv(host="node-b")})
    code, out, _ = _cli(["env", "show", str(rid), "--db", db], capsys)
    assert code == 0
    assert f"# run {rid}, host node-a" in out and f"# run {rid}, host node-b" in out
    assert "partition CPX/NPS4" in out and "NCCL_IB_GID_INDEX=3" in out
    with pytest.raises(SystemExit) as e:
        main(["env", "show", str(rid), "--host", "nope", "--db", db])
    assert e.value.code == 2


def test_cli_env_show_json_one_host(db, capsys):
    rid = _save(db, {"node-a": _inv(), "node-b": _inv(host="node-b", mtu=1500)})
    code, out, _ = _cli(["env", "show", str(rid), "--host", "node-b", "--json", "--db", db], capsys)
    assert code == 0
    (inv,) = [json.loads(line) for line in out.splitlines()]
    assert inv["host"] == "node-b" and inv["nics"][0]["mtu"] == 1500


@pytest.mark.parametrize("where", ["tag", "env", "command"])
@pytest.mark.parametrize("launcher", K8S_KINDS)
def test_k8s_never_expands_a_variable(launcher: str, where: str, tmp_path: Path) -> None:
    """The kubelet expands ``$(VAR)`` in container commands and env values: a tag reading
    ``$(CLUSTERBENCH_DB)`` would become the database Secret's URL (password included) in the
    run's stored command. Every kind of manifest doubles each ``$``, so it arrives as typed."""
    typed = "x=$(CLUSTERBENCH_DB)$$(NCCL_X)$"
    argv = [*BASE[launcher], "--db-secret", "cb-db", "--env", "NCCL_X=1"]
    if where == "env":
        argv += ["--env", f"NCCL_Y={typed}"]
    # a word of the command the CLI takes as text (a file name: launch checks the values after --)
    tail = ["--", "preflight", "--kernel-log", typed] if where == "command" else \
        ["--", "coll", "all_reduce", *(["--tag", typed] if where == "tag" else [])]
    code, out, err = run_cli(*argv, *tail)
    assert code == 0, err
    main = _main_container(yaml.safe_load(out))[0]
    seen = main["command"] + [e.get("value", "") for e in main["env"]]
    assert typed in seen, seen
    assert not any("SECRET" in w for w in seen), seen


@pytest.mark.parametrize("column, text, why", [
    ("meta", DEEP, "nested more than"),
    ("env", DEEP, "nested more than"),
    ("hosts", "[" * 100_000, "nested more than"),
    ("versions", "{", "not JSON"),
    ("meta", "5", "a JSON number, not an object"),
    ("errors", '{"a": 1}', "a JSON object, not a list"),
])
def test_a_stored_run_this_tool_never_wrote_is_one_line_naming_it(capsys, db, tmp_path, column, text, why):
    _store(capsys, db, tmp_path)
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE runs SET {column}=? WHERE id=2", (text,))
    con.close()
    for argv in (["results", "list"], ["env", "show", "2"], ["env", "diff", "1", "2"], ["results", "show", "2"]):
        rc, out, err = cli(capsys, *argv, "--db", db)
        assert rc == 2 and err.count("\n") == 1, (argv, err)
        assert f": run 2: unreadable {column}: {why}" in err and "internal error" not in err, (argv, err)
    rc, out, err = cli(capsys, "env", "show", "1", "--db", db)   # the other runs still read
    assert rc == 0 and "a=1" in out, err
    rc, out, err = cli(capsys, "results", "delete", "2", "--db", db)   # and the bad one can go
    assert rc == 0 and out == "deleted run 2\n", err
    rc, out, err = cli(capsys, "results", "list", "--db", db)
    assert rc == 0 and len(out.splitlines()) == 2, err


def test_env_text_and_json_on_the_arm_vm(capsys):
    rc, out, err = cli(capsys, "env", "--root", ARM_VM)
    assert rc == 0 and err == ""
    assert "cpu       ARM Neoverse-V2: 2 socket(s), 4 core(s), 4 logical" in out
    assert "NUMA nodes: 0 (cpus 0-1, 240.0 GiB), 2 (cpus none, 96.0 GiB)" in out
    assert "systemd-nspawn in a VM (QEMU)" in out and "bonding_masters" not in out
    assert "None" not in out
    rc, out, _ = cli(capsys, "env", "--root", ARM_VM, "--json")
    (line,) = out.splitlines()
    inv = json.loads(line)
    assert rc == 0 and inv["kind"] == "inventory" and inv["run"] is None
    assert [p["port"] for p in inv["rdma"][0]["ports"]] == [1, 2, 10]


def test_env_with_an_nvml_of_odd_answers(capsys, monkeypatch):
    mod = ModuleType("pynvml")
    vars(mod).update(vars(_odd_nvml()))
    mod.nvmlInit = lambda: None
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monkeypatch.setitem(sys.modules, "amdsmi", None)   # import fails: "not installed"
    monkeypatch.setattr(gpulib, "_cache", {})
    monkeypatch.setattr(gpulib, "unavailable", {})
    rc, out, err = cli(capsys, "env")
    assert rc == 0 and err == "", err
    assert "gpus      1 (via nvml)" in out
    assert "  gpu 0: NVIDIA H100 80GB HBM3, ?, pci ?, uuid ?" in out
    rc, out, err = cli(capsys, "env", "--json")
    (gpu,) = json.loads(out)["gpus"]
    assert rc == 0 and gpu["mig"] is None and gpu["memory_bytes"] is None


def test_env_on_a_node_whose_torch_fails_to_import(capsys, monkeypatch, tmp_path):
    """A CUDA library missing makes `import torch` raise OSError, not ImportError: `env`, the
    command that should say what the node has, stopped with an internal error."""
    _tree(tmp_path, {"torch/__init__.py": "raise OSError('libcudnn.so.9: cannot open shared object file')\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    build = torchcheck.torch_build()
    assert build.version is None and build.reason == "OSError: libcudnn.so.9: cannot open shared object file"
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    rc, out, err = cli(capsys, "env", "--json")
    assert rc == 0 and err == "", err
    inv = json.loads(out)
    assert inv["torch"]["version"] is None and "libcudnn" in inv["torch"]["reason"]


def test_unknown_values_print_as_question_marks():
    inv = {"host": None, "gpus": [{"index": 0}],
           "pcie": [{"bdf": "0000:01:00.0", "kind": "gpu", "vendor": "NVIDIA", "numa_node": None,
                     "link": {"current_width": None, "max_width": 16, "current_speed_gts": None,
                              "max_speed_gts": 32.0}}],
           "cpu": {"numa_nodes": [{"node": 3, "cpus": "", "memory_bytes": 1 << 30}]}}
    text = "\n".join(env_cmd.inventory_lines(inv))
    assert "None" not in text
    assert "  gpu 0: ?, ?, pci ?, uuid ?" in text
    assert "pcie      0000:01:00.0 gpu NVIDIA: x?/x16 ?/32.0 GT/s, numa ?" in text
    assert "3 (cpus none, 1.0 GiB)" in text


def test_env_diff_columns_stay_aligned_with_a_long_key(capsys):
    diffs = [Difference("env.NCCL_IB_HCA", "mlx5_0", "mlx5_1", "environment"),
             Difference("env.TORCH_NCCL_ENABLE_TIMING_AND_ASYNC_ERROR_HANDLING", "1", "0", "environment"),
             Difference("nics.ens1f0np0.mtu", 9000, 1500, "network")]
    env_cmd._print(diffs, "run 1 (a)", "run 1 (b)", as_json=False)
    lines = capsys.readouterr().out.splitlines()[1:]
    starts = {re.search(r" \S+  ->  ", line).start() for line in lines}
    assert len(lines) == 3 and len(starts) == 1, lines


@pytest.mark.parametrize("inventory", [{"gpu01": "not an inventory"}, ["gpu01"], "text",
                                       {"gpu01": {"virtualization": "docker", "cpu": {"numa_nodes": [{"cpus": "0-3"}]},
                                                  "nics": [{"name": "eth0", "speed_mbps": "fast"}],
                                                  "memory": {"total_bytes": -5}, "pcie": [{"bdf": "x"}],
                                                  "rdma": [{"name": "r", "ports": [{"state": "DOWN"}]}],
                                                  "versions": "1.0"}}])
def test_env_show_and_diff_read_an_inventory_of_another_shape(capsys, db, inventory):
    # an imported run line carries any meta its file held
    with Store.open(db) as s:
        s.save_run(Run("coll", hosts=["gpu01"], started_at="2026-01-01T00:00:00+00:00", versions={"torch": "2.6"},
                       meta={"inventory": inventory}), [])
        s.save_run(Run("coll", hosts=["gpu02"], started_at="2026-01-02T00:00:00+00:00", versions={"torch": "2.7"}), [])
    rc, out, err = cli(capsys, "env", "show", "1", "--db", db)
    assert rc == 0 and err == "" and "gpu01" in out and "memory" in out
    rc, out, err = cli(capsys, "env", "diff", "1", "2", "--json", "--db", db)
    assert rc == 0 and err == "", err
    lines = [json.loads(line) for line in out.splitlines()]
    assert {"key": "versions.torch", "a": "2.6", "b": "2.7"}.items() <= next(
        d for d in lines if d.get("key") == "versions.torch").items()


def test_env_diff_shows_values_that_print_alike_as_json(capsys, db):
    with Store.open(db) as s:
        a = s.save_run(Run(benchmark="x", hosts=["h"], meta={"inventory": {"h": {
            "nics": [{"name": "e", "mtu": "9000"}], "env": {"NCCL_A": "(unset)"}}}}), [])
        b = s.save_run(Run(benchmark="x", hosts=["h"], meta={"inventory": {"h": {
            "nics": [{"name": "e", "mtu": 9000}]}}}), [])
    rc, out, err = cli_store_env(capsys, "env", "diff", a, b, "--db", db)
    assert rc == 0 and err == ""
    lines = {line.split()[1]: line.split(None, 2)[2] for line in out.splitlines()[1:]}
    assert lines == {"env.NCCL_A": '"(unset)"  ->  null', "nics.e.mtu": '"9000"  ->  9000'}
    rc, out, _ = cli_store_env(capsys, "env", "diff", a, a, "--db", db, "--exit-code")
    assert rc == 0 and "0 difference(s)" in out


def test_env_show_and_diff_escape(capsys, evil_db):
    code, out, err = _cb(capsys, ["env", "show", "1", "--db", evil_db])
    _clean(out + err)
    assert "node\\x1b[2J" in out
    code, out, err = _cb(capsys, ["env", "diff", "1", "2", "--db", evil_db])
    _clean(out + err)
    assert "2.\\x1b[2J" in out


def test_env_text_says_what_a_pod_was_given(capsys):
    rc, out, err = cli(capsys, "env", "--root", TESTS / "data" / "sysfs" / "k8s-sriov-pod")
    assert rc == 0 and err == "", err
    assert ("context   cgroup v2 /; cpu.max 400000 100000 (4 CPU); memory.max 64 GiB; cpuset 4-7 (mems 0); "
            "netns 4026533001, as PID 1's") in out
    assert "process   CPUs 4-7 (4); memlock 64 KiB; nofile 1048576; /dev/shm 16 GiB; huge pages 1024 x 2 MiB, THP madvise" in out
    assert ("nic       net1: sriov-vf of PF 0000:3b:00.0, up, 200 Gb/s, MTU 9000, driver mlx5_core, "
            "pci 0000:3b:02.1, rdma mlx5_2") in out
    assert "nic       eth0: virtual, up, 10 Gb/s, MTU 1450, driver virtual, pci -, default route" in out


def test_env_text_of_ranks_and_half_a_cpu():
    inv = {"cgroup": {"mode": "v1", "path": "/", "cpu_max": "50000 100000", "memory_max": "max"},
           "process": {"cpus_allowed": "0", "rlimits": {"memlock": {"soft": "unlimited", "hard": "unlimited"}}},
           "ranks": [{"rank": 0, "cpus": "0"}, {"rank": 1, "cpus": "1"}]}
    text = "\n".join(env_cmd.context_lines(inv))
    assert "cpu.max 50000 100000 (0.5 CPU); memory.max max" in text
    assert "process   CPUs 0 (1); memlock unlimited; /dev/shm ?" in text
    assert "ranks     0: CPUs 0; 1: CPUs 1" in text
    assert env_cmd.context_lines({}) == []   # an inventory stored before these existed
