"""``--on-fail drain|taint``: failing nodes out of the scheduler, passing ones back, never a node
someone else took out. Slurm for real (slurmctld + two slurmd started here); Kubernetes as the
exact kubectl argument lists and JSON patches (no cluster here)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
from judge_helpers import cli, json_lines
from slurm_fixtures import slurm_or_skip

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch import drain
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

PWNED = f"/tmp/cb-i16-pwned-{os.getpid()}"
EVIL = f'Triad "fast" ; $(touch {PWNED}) `touch {PWNED}`'
PROFILE = f"""name: drain-test
criteria:
  - name: {json.dumps(EVIL)}
    benchmark: stream
    metric: bandwidth
    params: {{kernel: Triad}}
    op: ">="
    value: 100
    unit: GB/s
"""
# `scontrol show node n1` of Slurm 22.05 (this machine), a node drained with a reason.
SHOW_NODE = """NodeName=n1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=1.05
   NodeAddr=127.0.0.1 NodeHostName=vm Port=23091 Version=22.05.8
   RealMemory=4000 AllocMem=0 FreeMem=20658 Sockets=1 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug
   Reason=clusterbench: a "quoted" 'single' ; $(touch /x) 1.5 GB/s >= 2 GB/s [root@2026-11-23T19:02:19]
"""


def _stream_runs(db: str, values: dict[str, float], tag: str) -> None:
    with Store.open(db) as s:
        for host, v in values.items():
            s.save_run(Run("stream", hosts=[host], tags={"check": tag}),
                       [Measurement("stream", "bandwidth", v, "GB/s", {"kernel": "Triad", "device": "cpu"})])


# -- pure parts --------------------------------------------------------------------------------

def test_parse_scontrol_node_and_ownership():
    n = drain.parse_scontrol_node(SHOW_NODE, "n1")
    assert n.state == "IDLE+DRAIN" and n.drained and n.ours
    assert n.reason == "clusterbench: a \"quoted\" 'single' ; $(touch /x) 1.5 GB/s >= 2 GB/s"
    other = drain.parse_scontrol_node(SHOW_NODE.replace("Reason=clusterbench:", "Reason=RMA ticket"), "n1")
    assert other.drained and not other.ours
    idle = drain.parse_scontrol_node("NodeName=n2\n   State=IDLE ThreadsPerCore=1\n", "n2")
    assert not idle.drained and idle.reason == ""
    with pytest.raises(ClusterbenchError):
        drain.parse_scontrol_node("garbage", "n3")


def test_reason_text_is_one_bounded_line():
    assert drain.reason_text(["a 1 GB/s >= 2 GB/s"]) == "clusterbench: a 1 GB/s >= 2 GB/s"
    assert drain.reason_text(["x\ny\x00z"]) == "clusterbench: x y z"   # control characters: spaces
    long = drain.reason_text(["c" * 300, "second"])
    assert len(long) <= drain.MAX_REASON and long.endswith("... (+1 more)")
    assert drain.reason_text(["one", "two"]) == "clusterbench: one; two"


@pytest.mark.parametrize("bad", ["n[1-2]", "a,b", "-n1", "", "n1 n2", "n1;reboot", "$(x)"])
def test_node_names_that_would_act_on_other_nodes_are_refused(bad):
    with pytest.raises(UsageError):
        drain.check_node(bad)


def test_slurm_plan_decisions():
    nodes = {
        "ours": drain.SlurmNode("ours", "IDLE+DRAIN", "clusterbench: x"),
        "theirs": drain.SlurmNode("theirs", "IDLE+DRAIN", "maintenance"),
        "idle": drain.SlurmNode("idle", "IDLE", ""),
    }

    def lookup(name):
        if name == "broken":
            raise ClusterbenchError("scontrol show node broken failed: no such node")
        return nodes[name]

    nodes["bad"] = drain.SlurmNode("bad", "IDLE", "")
    verdicts = [drain.Verdict("bad", ("c 1 GB/s >= 2 GB/s",)), *(drain.Verdict(n) for n in ("ours", "theirs", "idle",
                                                                                           "broken"))]
    acts = {a.node: a for a in drain.slurm_plan(verdicts, True, lookup)}
    assert acts["bad"].action == "drain"
    assert acts["bad"].commands == [["scontrol", "update", "NodeName=bad", "State=DRAIN",
                                     "Reason=clusterbench: c 1 GB/s >= 2 GB/s"]]
    assert acts["ours"].action == "resume"
    assert acts["ours"].commands == [["scontrol", "update", "NodeName=ours", "State=RESUME"]]
    assert acts["theirs"].action == "keep" and "someone else" in acts["theirs"].note
    assert acts["idle"].action == "keep" and acts["idle"].commands == []
    assert acts["broken"].action == "keep" and "no such node" in acts["broken"].note
    # without --undrain passing nodes are not even looked up
    assert [a.node for a in drain.slurm_plan(verdicts, False, lookup)] == ["bad"]
    # a failing node someone else drained keeps their reason (a later --undrain must not resume it);
    # one clusterbench drained gets the new reason; one whose state cannot be read is drained
    failing = [drain.Verdict(n, ("c 1 GB/s >= 2 GB/s",)) for n in ("theirs", "ours", "broken")]
    acts = {a.node: a for a in drain.slurm_plan(failing, False, lookup)}
    assert acts["theirs"].action == "keep" and acts["theirs"].commands == [] and "maintenance" in acts["theirs"].note
    assert acts["ours"].action == "drain" and acts["broken"].action == "drain" and "no such node" in acts["broken"].note


def test_kubernetes_taint_label_and_annotation():
    reason = f"clusterbench: {EVIL} 90 GB/s >= 100 GB/s"
    taint, patch = drain.taint_argv("gpu-07.example", reason)
    assert taint == ["kubectl", "taint", "nodes", "gpu-07.example", "clusterbench.io/failed=true:NoSchedule",
                     "--overwrite"]
    assert patch[:6] == ["kubectl", "patch", "node", "gpu-07.example", "--type", "merge"]
    assert json.loads(patch[7]) == {"metadata": {"labels": {"clusterbench.io/health": "failed"},
                                                 "annotations": {"clusterbench.io/reason": reason}}}
    untaint, unpatch = drain.untaint_argv("gpu-07.example")
    assert untaint[-1] == "clusterbench.io/failed:NoSchedule-"   # only our key, only our effect
    assert json.loads(unpatch[7]) == {"metadata": {"labels": {"clusterbench.io/health": None},
                                                   "annotations": {"clusterbench.io/reason": None}}}
    ours = {"spec": {"taints": [{"key": "clusterbench.io/failed", "value": "true", "effect": "NoSchedule"},
                                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}}
    cordoned = {"spec": {"unschedulable": True, "taints": [{"key": "node.kubernetes.io/unschedulable",
                                                            "effect": "NoSchedule"}]}}
    nodes = {"a": ours, "b": cordoned, "c": {"spec": {}}}
    acts = {a.node: a for a in drain.k8s_plan([drain.Verdict(n) for n in nodes], True, nodes.get)}
    assert acts["a"].action == "untaint" and acts["a"].commands == drain.untaint_argv("a")
    assert acts["b"].action == "keep" and acts["c"].action == "keep"   # cordoned by a person: left


def test_cli_dry_run_prints_the_exact_commands(capsys, db, tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"n1": 90.0, "n2": 120.0, "n3": 130.0}, "a")
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "drain")
    assert rc == 1, err
    lines = out.splitlines()
    start = lines.index("# --on-fail drain (dry run, add --apply to run these):")
    cmd = shlex.split(lines[start + 1])
    assert cmd == ["scontrol", "update", "NodeName=n1", "State=DRAIN", f"Reason=clusterbench: {EVIL} 90 GB/s >= 100 GB/s"]
    # passing nodes are left alone without --undrain; n1's state is read first (where scontrol
    # has no cluster to ask, a note says so and the drain is still planned)
    assert all(line.startswith("# n1: state not read") for line in lines[start + 2:])
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "taint",
                       "--json")
    acts = [d for d in json_lines(out) if d["kind"] == "drain"]
    assert [(a["node"], a["action"], a["dry_run"], a["applied"]) for a in acts] == [("n1", "taint", True, False)]
    crit = next(d for d in json_lines(out) if d["kind"] == "criterion")
    assert crit["failing"] == {"n1": 90.0}
    assert acts[0]["commands"] == drain.taint_argv("n1", acts[0]["reason"])
    assert not os.path.exists(PWNED)


def test_a_refused_node_name_ends_the_json_lines_without_a_summary_that_contradicts_it(capsys, db, tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"-all": 90.0, "n2": 120.0}, "a")   # a host name scontrol would take as an option
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "taint",
                       "--json")
    assert rc == 2 and err.count("\n") == 1 and "-all" in err
    assert [d["kind"] for d in json_lines(out) if d["kind"] in ("summary", "drain")] == []


def test_cli_usage_errors(capsys, db, tmp_path, monkeypatch):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"n1": 90.0}, "a")
    rc, _, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--apply")
    assert rc == 2 and "--apply and --undrain need --on-fail" in err
    monkeypatch.setenv("PATH", str(tmp_path))   # no scontrol
    rc, _, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "drain",
                     "--apply")
    assert rc == 2 and err.count("\n") == 1 and "scontrol not found" in err


# -- a real Slurm ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from slurm_or_skip(tmp_path_factory.mktemp("slurm-drain"))


def _node(env: dict, name: str) -> drain.SlurmNode:
    r = subprocess.run(["scontrol", "show", "node", name], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return drain.parse_scontrol_node(r.stdout, name)


def test_slurm_drain_resume_and_someone_elses_drain(slurm, capsys, db, tmp_path, monkeypatch):
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    subprocess.run(["scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=RMA ticket 42"],
                   env=slurm, check=True, timeout=30)
    _stream_runs(db, {"n1": 90.0, "n2": 120.0}, "night1")
    rc, out, err = cli(capsys, "validate", "check=night1", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain", "--json")
    assert rc == 1, err
    acts = {d["node"]: d for d in json_lines(out) if d["kind"] == "drain"}
    assert acts["n1"]["action"] == "drain" and acts["n1"]["applied"] and not acts["n1"]["dry_run"]
    assert acts["n2"]["action"] == "keep" and "RMA ticket 42" in acts["n2"]["note"]
    n1 = _node(slurm, "n1")
    assert n1.drained and n1.reason == f"clusterbench: {EVIL} 90 GB/s >= 100 GB/s"   # literally
    assert not os.path.exists(PWNED)
    assert _node(slurm, "n2").reason == "RMA ticket 42"

    # the next night both pass: n1 (drained by clusterbench) comes back, n2 stays out
    _stream_runs(db, {"n1": 110.0, "n2": 121.0}, "night2")
    rc, out, err = cli(capsys, "validate", "check=night2", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain")
    assert rc == 0, err
    assert "scontrol update NodeName=n1 State=RESUME" in out
    assert "# n2: passes, but drained by someone else (RMA ticket 42): left drained" in out
    assert not _node(slurm, "n1").drained
    n2 = _node(slurm, "n2")
    assert n2.drained and n2.reason == "RMA ticket 42"

    # a third night n2 fails while a person has it drained: their reason stays (a clusterbench
    # reason there would let a later --undrain put it back in service)
    _stream_runs(db, {"n1": 110.0, "n2": 80.0}, "night3")
    rc, out, err = cli(capsys, "validate", "check=night3", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain", "--json")
    assert rc == 1, err
    acts = {d["node"]: d for d in json_lines(out) if d["kind"] == "drain"}
    assert acts["n2"]["action"] == "keep" and "RMA ticket 42" in acts["n2"]["note"] and not acts["n2"]["commands"]
    assert _node(slurm, "n2").reason == "RMA ticket 42"
    subprocess.run(["scontrol", "update", "NodeName=n2", "State=RESUME"], env=slurm, check=True, timeout=30)


def test_slurm_preflight_drains_and_resumes_its_node(slurm, capsys, monkeypatch, tmp_path):
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    root = str(tmp_path)   # an empty host: nothing to check fails, unless GPUs are expected
    rc, out, err = cli(capsys, "preflight", "--root", root, "--expect-gpus", "4", "--node", "n1",
                       "--on-fail", "drain", "--apply")
    assert rc == 1, err
    n1 = _node(slurm, "n1")
    assert n1.drained and n1.reason.startswith("clusterbench: preflight gpu_count: ")
    rc, out, err = cli(capsys, "preflight", "--root", root, "--node", "n1", "--on-fail", "drain", "--apply",
                       "--undrain")
    assert rc == 0, err
    assert not _node(slurm, "n1").drained


def test_sweep_drains_its_suspect_and_writes_junit(capsys, db, tmp_path, monkeypatch):
    """The sweep's verdicts (subset runs replaced by recorded values: node c is degraded) turn
    into a drain of c only, and one JUnit test case per node."""
    from xml.etree import ElementTree as ET

    from clusterbench.sweep import run as sweep_run
    from clusterbench.sweep.analyze import SubsetResult

    def fake(cfg, hosts, stage, index):
        slow = "c" in hosts
        return SubsetResult(tuple(hosts), stage, 20.0 if slow else 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    xml = tmp_path / "sweep.xml"
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "drain", "--junit", str(xml),
                       "--", "coll", "all_reduce")
    assert rc == 1, err
    drains = [shlex.split(line) for line in out.splitlines() if line.startswith("scontrol ")]
    assert [d[2] for d in drains] == ["NodeName=c"]
    assert drains[0][4].startswith("Reason=clusterbench: sweep single score is an outlier")
    cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase")}
    assert set(cases) == {"a", "b", "c", "d"}
    assert cases["c"].find("failure") is not None and cases["a"].find("failure") is None
