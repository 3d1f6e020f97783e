"""The launchers' options as rows (each option a hostile value reaches), their minimal command
lines, and how Kubernetes expands a container's command."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from judge_helpers import run_cli
from k8s_schemas import check, check_cronjob, mpijob_schema, pytorchjob_schema

BASE = {
    "slurm": ["launch", "slurm", "--nodes", "2", "--gpus-per-node", "8"],
    "mpi": ["launch", "mpi", "--hostfile", "{hostfile}", "--print"],
    "mpi-hosts": ["launch", "mpi", "--hosts", "node[1-2]", "--procs-per-node", "8", "--print"],
    "torchrun": ["launch", "torchrun", "--nodes", "2", "--rdzv-endpoint", "node1:29400", "--print"],
    "torchrun-hosts": ["launch", "torchrun", "--hosts", "node1,node2", "--print"],
    "k8s": ["launch", "k8s", "--nodes", "2", "--gpus-per-node", "2"],
    "k8s-mpijob": ["launch", "k8s", "--kind", "mpijob", "--image", "registry.example/cb:1", "--nodes", "2"],
    "k8s-cron": ["launch", "k8s", "--schedule", "0 3 * * *", "--nodes", "2", "--gpus-per-node", "2"],
    "dstack": ["launch", "dstack", "--nodes", "2", "--gpus-per-node", "8"],
}


def launch_cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI in this process (no re-import per call): exit code, stdout, stderr."""
    code, out, err = run_cli(*args)
    return subprocess.CompletedProcess(list(args), code, out, err)


def _kubelet(word: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of a container command word (k8s.io/kubernetes third_party
    expansion): ``$$`` is ``$``, ``$(NAME)`` of a defined variable its value, anything else kept."""
    out, i = [], 0
    while i < len(word):
        if word[i] == "$" and i + 1 < len(word) and word[i + 1] == "$":
            out.append("$")
            i += 2
        elif word[i] == "$" and i + 1 < len(word) and word[i + 1] == "(":
            end = word.find(")", i + 2)
            name = word[i + 2:end] if end > 0 else None
            if name is not None and name in env:
                out.append(env[name])
                i = end + 1
            else:
                out.append(word[i])
                i += 1
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


def _main_container(doc: dict) -> list[dict]:
    """The containers of the pod that runs the command, as the kubelet hands them to the
    runtime: ``$(VAR)`` of the container's env expanded, ``$$`` -> ``$``, in the command and in
    each env value (a Secret's value stands as ``SECRET``)."""
    if doc["kind"] == "PyTorchJob":
        check(pytorchjob_schema(), doc)
        replicas = doc["spec"]["pytorchReplicaSpecs"]
        assert set(replicas) == {"Master", "Worker"} and replicas["Worker"]["replicas"] == 1
        main = replicas["Master"]["template"]["spec"]["containers"]
    elif doc["kind"] == "CronJob":
        check_cronjob(doc)
        assert doc["spec"]["jobTemplate"]["spec"]["completions"] == 2
        main = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    else:
        check(mpijob_schema(), doc)
        main = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    defined: dict[str, str] = {}
    for e in main[0].get("env") or []:  # in order: a value sees the variables defined before it
        defined[e["name"]] = _kubelet(e["value"], defined) if "value" in e else "SECRET"
        if "value" in e:
            e["value"] = defined[e["name"]]
    main[0]["command"] = [_kubelet(w, defined) for w in main[0]["command"]]
    return main


def _master(doc: dict) -> dict:
    return doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]


TAIL = ["--", "coll", "all_reduce"]


@dataclass(frozen=True)
class Row:
    launcher: str
    args: tuple[str, ...]          # '{p}' is the payload
    data: bool = False             # a data value: must be accepted and arrive literally
    reaches_tool: bool = True      # the generated text still reaches the fake benchmark tool
    tail: tuple[str, ...] = tuple(TAIL)


def _rows() -> list[Row]:
    common = [("--nodes", "{p}"), ("--procs-per-node", "{p}"), ("--gpus-per-node", "{p}"),
              ("--env", "{p}=1"), ("--sys-root", "{p}")]
    rows: list[Row] = []
    for launcher in BASE:
        for args in common:
            rows.append(Row(launcher, args))
        rows.append(Row(launcher, ("--env", "NCCL_X={p}"), data=True))
        rows.append(Row(launcher, (), data=True, tail=(*TAIL, "--tag", "t={p}")))
        rows.append(Row(launcher, (), tail=("--", "coll", "{p}")))  # no op: refused before launching
    rows += [Row("slurm", (opt, "{p}")) for opt in
             ("--partition", "--time", "--job-name", "--account", "--output", "--sbatch-opt", "--wait-timeout")]
    rows += [Row("slurm", ("--nodelist", "{p}")), Row("slurm", ("--nodelist", "node[1-2],{p}")),
             Row("mpi-hosts", ("--hosts", "{p}")), Row("mpi-hosts", ("--hosts", "node[1-2],{p}"))]
    rows += [Row("slurm", ("--sbatch-opt", "--constraint={p}")), Row("slurm", ("--script", "{p}")),
             Row("slurm", ("--db", "{p}"), data=True)]
    rows += [Row("mpi", ("--hostfile", "{p}")), Row("mpi", ("--hostfile", "{hostfile_with_payload}")),
             Row("mpi", ("--mca", "btl_tcp_if_include={p}")), Row("mpi", ("--mca", "{p}=1")),
             Row("mpi", ("--agent", "{p}")), Row("mpi", ("--wall-timeout", "{p}")),
             Row("mpi", ("--mpirun", "{p}"), data=True, reaches_tool=False),
             Row("mpi", ("--db", "{p}"), data=True)]
    for launcher in ("torchrun", "torchrun-hosts"):
        rows += [Row(launcher, ("--rdzv-endpoint", "{p}:29400")), Row(launcher, ("--rdzv-endpoint", "node1:{p}")),
                 Row(launcher, ("--rdzv-id", "{p}"), data=True), Row(launcher, ("--join-timeout", "{p}")),
                 Row(launcher, ("--wall-timeout", "{p}"))]
    rows += [Row("torchrun", ("--node-rank", "{p}")), Row("torchrun", ("--local-addr", "{p}")),
             Row("torchrun-hosts", ("--hosts", "{p}")), Row("torchrun-hosts", ("--hosts", "node1,{p}")),
             Row("torchrun-hosts", ("--agent", "{p}"), reaches_tool=False)]
    for launcher in ("k8s", "k8s-mpijob"):
        rows += [Row(launcher, (opt, "{p}")) for opt in ("--name", "--namespace", "--image", "--db-secret",
                                                         "--shm-size", "--network", "--gpu-resource")]
        rows += [Row(launcher, ("--db-secret", "cb-db:{p}")), Row(launcher, ("--resource", "{p}=1")),
                 Row(launcher, ("--resource", "rdma/x={p}")), Row(launcher, ("--kind", "{p}"))]
    rows += [Row("k8s", ("--install", "{p}"), data=True),
             # a wheel's path is any text (data); an index is a URL, a payload with a space is refused
             Row("k8s", ("--install-from", "/w/{p}.whl"), data=True),
             Row("k8s", ("--install-from", "https://idx.example/{p}")),
             Row("k8s", ("--vendor", "{p}")), Row("k8s", ("--supplemental-groups", "{p}"))]
    rows += [Row("k8s-cron", ("--schedule", "{p}")), Row("k8s-cron", ("--schedule", "0 3 * * {p}")),
             Row("k8s-cron", ("--time-zone", "{p}")), Row("k8s-cron", ("--name", "{p}")),
             Row("k8s-cron", ("--service-account", "{p}"))]
    rows += [Row("dstack", (opt, "{p}")) for opt in ("--name", "--image", "--gpu", "--startup-order",
                                                     "--stop-criteria", "--db-secret")]
    rows += [Row("dstack", ("--install", "{p}"), data=True),
             Row("dstack", ("--setup", "{p}"))]  # shell text by design: run as given, never run here
    return rows


ROWS = _rows()


EVIL = "x=$(touch /tmp/cb6-evil); `touch /tmp/cb6-evil` | rm -rf / ; 'q\""


def _strings(doc) -> list[str]:
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return [doc] if isinstance(doc, str) else []
