"""Tests of clusterbench.launch.drain: take failing nodes out of service, and put them back when they pass again."""

from __future__ import annotations

import json

import pytest
from drain_profiles import EVIL

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch import drain

# `scontrol show node n1` of Slurm 22.05 (this machine), a node drained with a reason.
SHOW_NODE = """NodeName=n1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=1.05
   NodeAddr=127.0.0.1 NodeHostName=vm Port=23091 Version=22.05.8
   RealMemory=4000 AllocMem=0 FreeMem=20658 Sockets=1 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug
   Reason=clusterbench: a "quoted" 'single' ; $(touch /x) 1.5 GB/s >= 2 GB/s [root@2026-11-23T19:02:19]
"""


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


def test_a_drain_reason_holds_no_terminal_control() -> None:
    """C1 controls (CSI \\x9b), bidi overrides and line separators went into the Slurm reason,
    Kubernetes annotation and the printed dry run."""
    reason = drain.reason_text(["busbw \x9b2J low\x85x", "a\u2028b \u202eevil"])
    assert reason.isprintable(), reason
    assert reason.startswith("clusterbench: busbw")
    for argv in drain.taint_argv("node1", reason):
        assert all(w.isprintable() for w in argv)
