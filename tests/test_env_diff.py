"""Environment drift: flattening, differences between inventories, ``clusterbench env diff``."""

import json
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.envinfo import diff as envdiff
from clusterbench.envinfo import inventory
from clusterbench.records import Run
from clusterbench.store import Store

DATA = Path(__file__).parent / "data" / "sysfs"


def test_flatten_keys_lists_by_natural_id():
    flat = envdiff.flatten({"nics": [{"name": "eth0", "mtu": 9000}], "gpus": [{"index": 0, "name": "H100"}],
                            "cpu": {"numa_nodes": [{"node": 1, "cpus": "0-3"}]}, "tags": ["a", "b"]})
    assert flat == {"nics.eth0.name": "eth0", "nics.eth0.mtu": 9000, "gpus.0.index": 0, "gpus.0.name": "H100",
                    "cpu.numa_nodes.1.node": 1, "cpu.numa_nodes.1.cpus": "0-3", "tags": ["a", "b"]}


def test_diff_reorder_is_not_a_difference():
    a = {"nics": [{"name": "a", "mtu": 1500}, {"name": "b", "mtu": 9000}]}
    b = {"nics": [{"name": "b", "mtu": 9000}, {"name": "a", "mtu": 1500}]}
    assert envdiff.diff(a, b) == []


def _inv(mtu=9000, gid_index=3, nccl=None, host="node-a", partition="SPX", mac="aa"):
    return {
        "host": host, "collected_at": "now",
        "versions": {"torch": "2.4.0", "rccl": "2.20.5"},
        "env": {"NCCL_IB_GID_INDEX": str(gid_index)} | ({"NCCL_SOCKET_IFNAME": nccl} if nccl else {}),
        "gpus": [{"index": 0, "name": "MI300X", "uuid": f"u-{host}", "compute_partition": partition}],
        "nics": [{"name": "ens1", "mtu": mtu, "address": mac, "carrier": 1}],
    }


def test_diff_finds_drift_and_hides_identity():
    a, b = _inv(), _inv(mtu=1500, gid_index=1, nccl="ens1", host="node-b", partition="CPX", mac="bb")
    diffs = {d.key: d for d in envdiff.diff(a, b)}
    assert set(diffs) == {"nics.ens1.mtu", "env.NCCL_IB_GID_INDEX", "env.NCCL_SOCKET_IFNAME", "gpus.0.compute_partition"}
    assert diffs["env.NCCL_SOCKET_IFNAME"].a is None and diffs["env.NCCL_SOCKET_IFNAME"].b == "ens1"
    assert diffs["nics.ens1.mtu"].category == "network" and diffs["env.NCCL_IB_GID_INDEX"].category == "environment"
    assert diffs["gpus.0.compute_partition"].to_dict() == {"key": "gpus.0.compute_partition", "category": "gpus",
                                                           "a": "SPX", "b": "CPX"}
    shown = {d.key for d in envdiff.diff(a, b, show_identity=True)}
    assert {"host", "gpus.0.uuid", "nics.ens1.address"} <= shown and "collected_at" not in shown


def test_diff_of_two_fake_nodes():
    a = inventory.collect(DATA / "h100-node", environ={})
    b = inventory.collect(DATA / "mi300x-node", environ={})
    cats = {d.category for d in envdiff.diff(a, b)}
    assert {"versions", "gpus", "pcie", "network", "host"} <= cats
    assert envdiff.diff(a, inventory.collect(DATA / "h100-node", environ={})) == []


def _save(db, hosts_inv, versions=None, env=None):
    run = Run(benchmark="all_reduce", hosts=list(hosts_inv) or ["old"], versions=versions or {},
              env=env or {}, meta={"inventory": hosts_inv} if hosts_inv else {})
    with Store.open(db) as store:
        return store.save_run(run, [])


def _cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


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
