"""Take failing nodes out of service, and put them back when they pass again: Slurm drain and
resume, Kubernetes taints (``--on-fail drain|taint``, ``--undrain`` on validate, preflight, sweep).

Every action is an argument list, never a shell line: a reason holding quotes, ``;`` or ``$()``
reaches ``scontrol`` and ``kubectl`` as one literal argument. A node name must be a plain name
(no ``,`` or ``[``: Slurm would read a list or a hostlist and act on other nodes). Reasons start
with ``clusterbench:`` and that prefix is how a node drained by clusterbench is told from one a
person drained for maintenance: ``--undrain`` resumes only the former, after reading the node's
current reason from ``scontrol show node``. On Kubernetes the marks are clusterbench's own (a
taint key, a label, an annotation with the reason), and only those are ever removed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.errors import ClusterbenchError, UsageError

PREFIX = "clusterbench:"
MAX_REASON = 240                        # Slurm keeps any length; people read it in sinfo -R
ON_FAIL = ("drain", "taint")
TAINT_KEY = "clusterbench.io/failed"
TAINT_EFFECT = "NoSchedule"
HEALTH_LABEL = "clusterbench.io/health"
REASON_ANNOTATION = "clusterbench.io/reason"
_NODE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,252})")
# What must not reach a reason: C0 and C1 controls (CSI \x9b would drive the terminal of whoever
# reads sinfo -R or our dry run), bidi controls, line separators, lone surrogates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]+")

DRAIN, RESUME, TAINT, UNTAINT, KEEP = "drain", "resume", "taint", "untaint", "keep"


def check_node(name: str) -> str:
    if not _NODE.fullmatch(name):
        raise UsageError(f"invalid node name {name!r} for --on-fail: a plain host name (letters, digits, "
                         "'.', '-', '_'); a list or hostlist would act on other nodes")
    return name


def reason_text(problems: Sequence[str]) -> str:
    """``clusterbench: <criterion> <measured> <op> <threshold>; ...`` on one line, shortened."""
    parts = [_CONTROL.sub(" ", p).strip() for p in problems if p.strip()]
    text = f"{PREFIX} " + "; ".join(parts)
    if len(text) > MAX_REASON:
        first = f"{PREFIX} {parts[0]}"
        more = f" (+{len(parts) - 1} more)" if len(parts) > 1 else ""
        text = first[:MAX_REASON - len(more) - 3] + "..." + more if len(first) + len(more) > MAX_REASON \
            else first + more
    return text


@dataclass(frozen=True)
class Verdict:
    """What a check says about one node: failed with these problems, or passed."""

    node: str
    problems: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.problems)


@dataclass
class Action:
    node: str
    action: str                                   # drain, resume, taint, untaint, keep
    commands: list[list[str]] = field(default_factory=list)
    reason: str = ""
    note: str = ""                                # why nothing is done, or what was found
    applied: bool = False
    error: str = ""

    def to_dict(self, dry_run: bool) -> dict[str, Any]:
        return {"kind": "drain", "node": self.node, "action": self.action, "commands": self.commands,
                "reason": self.reason, "note": self.note, "dry_run": dry_run, "applied": self.applied,
                "error": self.error}


# -- Slurm ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str          # e.g. IDLE+DRAIN
    reason: str         # without Slurm's "[user@time]" suffix; "" when none

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state.upper()

    @property
    def ours(self) -> bool:
        return self.reason.startswith(PREFIX)


_REASON_LINE = re.compile(r"^\s*Reason=(.*?)(?:\s+\[[^\]@]*@[^\]]*\])?\s*$")


def parse_scontrol_node(text: str, name: str) -> SlurmNode:
    """``scontrol show node NAME`` output (multi-line form: Reason= is a line of its own)."""
    state, reason = "", ""
    for line in text.splitlines():
        m = _REASON_LINE.match(line)
        if m:
            reason = m.group(1)
            continue
        s = re.search(r"(?:^|\s)State=(\S+)", line)
        if s:
            state = s.group(1)
    if not state:
        raise ClusterbenchError(f"scontrol show node {name}: no State= in its output")
    return SlurmNode(name, state, reason)


def drain_argv(node: str, reason: str, scontrol: str = "scontrol") -> list[str]:
    return [scontrol, "update", f"NodeName={check_node(node)}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(node: str, scontrol: str = "scontrol") -> list[str]:
    return [scontrol, "update", f"NodeName={check_node(node)}", "State=RESUME"]


def show_argv(node: str, scontrol: str = "scontrol") -> list[str]:
    return [scontrol, "show", "node", check_node(node)]


def slurm_plan(verdicts: Sequence[Verdict], undrain: bool,
               lookup: Callable[[str], SlurmNode | None], scontrol: str = "scontrol") -> list[Action]:
    """Drain every failed node, except one someone else drained already (their reason stays, so
    clusterbench never later resumes a node it did not drain); with ``undrain``, resume passing
    nodes drained by clusterbench. ``lookup`` reads a node's state (None when it cannot be read:
    a failed node is drained then, nothing is resumed)."""
    out = []
    for v in verdicts:
        if v.failed:
            reason = reason_text(v.problems)
            try:
                node = lookup(v.node)
            except ClusterbenchError as e:   # draining a failed node is the safe side
                node, note = None, f"state not read ({e})"
            else:
                note = ""
            if node is not None and node.drained and not node.ours:
                out.append(Action(v.node, KEEP, note=f"fails, but drained by someone else "
                                                     f"({node.reason or 'no reason'}): left with their reason"))
            else:
                out.append(Action(v.node, DRAIN, [drain_argv(v.node, reason, scontrol)], reason, note=note))
        elif undrain:
            try:
                node = lookup(v.node)
            except ClusterbenchError as e:
                out.append(Action(v.node, KEEP, note=f"not resumed: {e}"))
                continue
            if node is None:
                out.append(Action(v.node, KEEP, note="state unknown (scontrol not available): not resumed"))
            elif not node.drained:
                out.append(Action(v.node, KEEP, note=f"passes; not drained (state {node.state})"))
            elif not node.ours:
                out.append(Action(v.node, KEEP, note=f"passes, but drained by someone else "
                                                     f"({node.reason or 'no reason'}): left drained"))
            else:
                out.append(Action(v.node, RESUME, [resume_argv(v.node, scontrol)], node.reason,
                                  note="passes again; drained by clusterbench"))
    return out


# -- Kubernetes -----------------------------------------------------------------------------------

def taint_argv(node: str, reason: str, kubectl: str = "kubectl") -> list[list[str]]:
    """Taint the Node so nothing new is scheduled there, and label and annotate it with the reason
    (a taint value cannot hold free text; an annotation can). A JSON merge patch touches only
    clusterbench's own label and annotation."""
    node = check_node(node)
    patch = {"metadata": {"labels": {HEALTH_LABEL: "failed"}, "annotations": {REASON_ANNOTATION: reason}}}
    return [[kubectl, "taint", "nodes", node, f"{TAINT_KEY}=true:{TAINT_EFFECT}", "--overwrite"],
            [kubectl, "patch", "node", node, "--type", "merge", "-p", json.dumps(patch)]]


def untaint_argv(node: str, kubectl: str = "kubectl") -> list[list[str]]:
    node = check_node(node)
    patch = {"metadata": {"labels": {HEALTH_LABEL: None}, "annotations": {REASON_ANNOTATION: None}}}
    return [[kubectl, "taint", "nodes", node, f"{TAINT_KEY}:{TAINT_EFFECT}-"],
            [kubectl, "patch", "node", node, "--type", "merge", "-p", json.dumps(patch)]]


def get_node_argv(node: str, kubectl: str = "kubectl") -> list[str]:
    return [kubectl, "get", "node", check_node(node), "-o", "json"]


def k8s_tainted_by_us(node_json: dict[str, Any]) -> bool:
    taints = (node_json.get("spec") or {}).get("taints") or []
    return any(t.get("key") == TAINT_KEY for t in taints if isinstance(t, dict))


def k8s_plan(verdicts: Sequence[Verdict], undrain: bool,
             lookup: Callable[[str], dict[str, Any] | None], kubectl: str = "kubectl") -> list[Action]:
    out = []
    for v in verdicts:
        if v.failed:
            reason = reason_text(v.problems)
            out.append(Action(v.node, TAINT, taint_argv(v.node, reason, kubectl), reason))
        elif undrain:
            try:
                node = lookup(v.node)
            except ClusterbenchError as e:
                out.append(Action(v.node, KEEP, note=f"not untainted: {e}"))
                continue
            if node is None:
                out.append(Action(v.node, KEEP, note="state unknown (kubectl not available): not untainted"))
            elif not k8s_tainted_by_us(node):
                out.append(Action(v.node, KEEP, note=f"passes; no {TAINT_KEY} taint"))
            else:
                out.append(Action(v.node, UNTAINT, untaint_argv(v.node, kubectl),
                                  note=f"passes again; removing clusterbench's {TAINT_KEY} taint only"))
    return out


# -- running --------------------------------------------------------------------------------------

def _run(argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def _last_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = (r.stderr or r.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit {r.returncode}"


def slurm_lookup(scontrol: str | None) -> Callable[[str], SlurmNode | None]:
    def lookup(node: str) -> SlurmNode | None:
        if scontrol is None:
            return None
        try:
            r = _run(show_argv(node, scontrol))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ClusterbenchError(f"scontrol show node {node}: {e}") from None
        if r.returncode != 0:
            raise ClusterbenchError(f"scontrol show node {node} failed: {_last_line(r)}")
        return parse_scontrol_node(r.stdout, node)
    return lookup


def k8s_lookup(kubectl: str | None) -> Callable[[str], dict[str, Any] | None]:
    def lookup(node: str) -> dict[str, Any] | None:
        if kubectl is None:
            return None
        try:
            r = _run(get_node_argv(node, kubectl))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ClusterbenchError(f"kubectl get node {node}: {e}") from None
        if r.returncode != 0:
            raise ClusterbenchError(f"kubectl get node {node} failed: {_last_line(r)}")
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError:
            raise ClusterbenchError(f"kubectl get node {node}: output is not JSON") from None
    return lookup


def plan(on_fail: str, verdicts: Sequence[Verdict], undrain: bool, need_tool: bool) -> list[Action]:
    """The actions for ``--on-fail drain|taint``. ``need_tool``: the scheduler's command must be
    on PATH (``--apply``); without it a dry run still prints every command it can decide."""
    for v in verdicts:
        check_node(v.node)
    tool = "scontrol" if on_fail == "drain" else "kubectl"
    found = shutil.which(tool)
    if need_tool and found is None:
        raise UsageError(f"--on-fail {on_fail} --apply: {tool} not found on PATH")
    if on_fail == "drain":
        return slurm_plan(verdicts, undrain, slurm_lookup(found))
    if on_fail == "taint":
        return k8s_plan(verdicts, undrain, k8s_lookup(found))
    raise UsageError(f"--on-fail must be one of {', '.join(ON_FAIL)}")


def apply(actions: Sequence[Action]) -> list[Action]:
    """Run every action's commands in order; an action stops at its first failing command."""
    for a in actions:
        for argv in a.commands:
            try:
                r = _run(argv)
            except (OSError, subprocess.TimeoutExpired) as e:
                a.error = f"{argv[0]}: {e}"
                break
            if r.returncode != 0:
                a.error = f"{' '.join(argv[:3])} exited {r.returncode}: {_last_line(r)}"
                break
        else:
            a.applied = bool(a.commands)
    return list(actions)
