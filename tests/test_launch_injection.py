"""Issue 18: generated scripts never run what the user did not ask for.

Every option of every launcher (``launch slurm|mpi|torchrun|k8s|dstack``, through the real CLI
entry) gets each injection payload: a newline, ``$(...)``, backquotes, single and double quotes,
``;``, ``#`` and NUL. For each the launcher must either refuse with one line and exit 2, or print
an output that its target reads as intended: ``bash -n`` accepts scripts and command lines, the
YAML loads into the expected structure (and the CRD schemas), ``#SBATCH`` lines hold no character
sbatch would misread. Then the generated shell text runs with the benchmark replaced by a
recorder (fake srun, mpirun, torchrun, pip, ssh), and the payload's ``touch`` must not have run.
Where a value is data (an environment value, a tag, a requirement), it must be accepted and
reach the recorder literally: quoting, not refusing, is what keeps it safe there.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
import yaml
from judge_helpers import run_cli
from k8s_schemas import (
    DSTACK_SCHEMA,
    check,
    check_cronjob,
    mpijob_schema,
    pytorchjob_schema,
)

PAYLOADS = {
    "newline": "x\ntouch {m}",
    "subst": "$(touch {m})",
    "backquote": "`touch {m}`",
    "squote": "x'; touch {m}; '",
    "dquote": 'x"; touch {m}; "',
    "semicolon": "x; touch {m}",
    "hash": "x #; touch {m}",
    "nul": "x\x00touch {m}",
}
REFUSED_EVERYWHERE = ("newline", "nul")   # a control character is refused by every option

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
    rows += [Row("k8s", ("--install", "{p}"), data=True)]
    rows += [Row("k8s-cron", ("--schedule", "{p}")), Row("k8s-cron", ("--schedule", "0 3 * * {p}")),
             Row("k8s-cron", ("--time-zone", "{p}")), Row("k8s-cron", ("--name", "{p}")),
             Row("k8s-cron", ("--service-account", "{p}"))]
    rows += [Row("dstack", (opt, "{p}")) for opt in ("--name", "--image", "--gpu", "--startup-order",
                                                     "--stop-criteria", "--db-secret")]
    rows += [Row("dstack", ("--install", "{p}"), data=True),
             Row("dstack", ("--setup", "{p}"))]  # shell text by design: run as given, never run here
    return rows


ROWS = _rows()


# -- the harmless stand-ins for the benchmark and its launchers -------------------------------

RECORDER = """#!/bin/sh
echo "$0" >> "$CB_RAN"
printf '%s\\n' "$@" >> "$CB_ARGS"
printf 'NCCL_X=%s\\n' "${NCCL_X:-}" >> "$CB_ARGS"
"""
FAKE_SSH = """#!/bin/sh
# like ssh: options, the host, then the rest joined into one line for the remote shell
while [ "$1" = "-o" ]; do shift 2; done
shift
exec sh -c "$*"
"""


@pytest.fixture
def fakes(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("srun", "mpirun", "torchrun", "pip", "scontrol", "clusterbench"):
        (bindir / tool).write_text(RECORDER)
    (bindir / "ssh").write_text(FAKE_SSH)
    for f in bindir.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "CB_RAN": str(tmp_path / "ran"),
            "CB_ARGS": str(tmp_path / "args"), "SLURM_JOB_NODELIST": "n1",
            "DSTACK_GPUS_PER_NODE": "8", "DSTACK_NODE_RANK": "0", "DSTACK_MASTER_NODE_IP": "10.0.0.1"}


def _bash(text: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
    assert syntax.returncode == 0, f"bash -n rejects:\n{text}\n{syntax.stderr}"
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=20, env=env, cwd=cwd)


# -- what each target must look like ------------------------------------------------------------

_SBATCH_LINE = re.compile(r"#SBATCH --[a-z][a-z-]*(=[^\s'\"#\\$`]+)?")


def _check_slurm(out: str, env: dict[str, str], cwd: Path) -> None:
    head = out.split("\n\n", 1)[0].splitlines()
    assert head[0] == "#!/bin/bash"
    for line in head[1:]:  # sbatch reads these unquoted: one word per directive, nothing to misread
        assert _SBATCH_LINE.fullmatch(line), line
    directives = [line for line in out.splitlines() if line.startswith("#SBATCH")]
    assert directives == head[1:], "an #SBATCH line after the script started"
    _bash(out, env, cwd)


def _check_cmdline(out: str, env: dict[str, str], cwd: Path) -> None:
    _bash(out, env, cwd)


def _strings(doc) -> list[str]:
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return [doc] if isinstance(doc, str) else []


def _check_k8s(out: str, env: dict[str, str], cwd: Path) -> None:
    doc = yaml.safe_load(out)
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
    main = _main_container(doc)
    assert len(main) == 1 and all(isinstance(w, str) for w in main[0]["command"])
    # the master's command, as the container runtime runs it: an argument list
    subprocess.run(main[0]["command"], capture_output=True, text=True, timeout=20, env=env, cwd=cwd)


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


def _check_dstack(out: str, env: dict[str, str], cwd: Path, setup: int = 0) -> None:
    doc = yaml.safe_load(out)
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["commands"][-1].startswith("torchrun --nnodes=2 ")
    # dstack runs the commands in a shell; --setup lines are the user's own shell text, skipped
    _bash("\n".join(doc["commands"][setup:]), env, cwd)


TARGET = {"slurm": _check_slurm, "mpi": _check_cmdline, "mpi-hosts": _check_cmdline, "torchrun": _check_cmdline,
          "torchrun-hosts": _check_cmdline, "k8s": _check_k8s, "k8s-mpijob": _check_k8s, "k8s-cron": _check_k8s,
          "dstack": _check_dstack}


def _argv(row: Row, payload: str, tmp_path: Path) -> list[str]:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=8\nnode2 slots=8\n")
    bad_hostfile = tmp_path / "hosts-bad"
    bad_hostfile.write_text(f"node1 slots=8\n{payload} slots=8\n")
    subs = {"{p}": payload, "{hostfile}": str(hostfile), "{hostfile_with_payload}": str(bad_hostfile)}

    def fill(word: str) -> str:
        for k, v in subs.items():
            word = word.replace(k, v)
        return word

    return [fill(w) for w in (*BASE[row.launcher], *row.args, *row.tail)]


@pytest.mark.parametrize("name", PAYLOADS)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.launcher}:{' '.join(r.args) or ' '.join(r.tail[3:]) or r.tail[2]}")
def test_injection(row: Row, name: str, tmp_path: Path, fakes: dict[str, str], monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "P"
    payload = PAYLOADS[name].format(m=marker)
    code, out, err = run_cli(*_argv(row, payload, tmp_path))
    if code != 0:
        assert code == 2, err
        assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
        assert out == ""
        assert not (row.data and name not in REFUSED_EVERYWHERE), f"a data value was refused: {err}"
        return
    assert name not in REFUSED_EVERYWHERE, f"a control character was accepted:\n{out}"
    setup = 1 if "--setup" in row.args else 0
    if row.launcher == "dstack":
        _check_dstack(out, fakes, tmp_path, setup)
    else:
        TARGET[row.launcher](out, fakes, tmp_path)
    assert not marker.exists(), f"the payload ran:\n{out}"
    if row.reaches_tool:
        assert Path(fakes["CB_RAN"]).exists(), f"the generated text never reached the benchmark:\n{out}"
    if row.data:
        _arrived(row, payload, out, fakes)


def _arrived(row: Row, payload: str, out: str, fakes: dict[str, str]) -> None:
    """The data value reached its consumer as one literal string."""
    if row.args[:1] == ("--mpirun",):
        assert shlex.split(out.splitlines()[0])[0] == payload
        return
    if row.launcher in ("k8s", "k8s-mpijob", "k8s-cron") and row.args[:1] == ("--env",):
        doc = yaml.safe_load(out)
        text = "\n".join(_strings(_main_container(doc)))  # the pod's environment, as the kubelet sets it
    elif row.launcher == "dstack" and row.args[:1] == ("--env",):
        text = "\n".join(_strings(yaml.safe_load(out)))  # the pod's environment is the manifest's
    else:  # what the fake tools were given; a --db path arrives made absolute
        text = Path(fakes["CB_ARGS"]).read_text()
    assert payload in text, f"{payload!r} did not arrive literally:\n{text}\n{out}"


K8S_KINDS = ("k8s", "k8s-mpijob", "k8s-cron")


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


def test_the_harness_sees_an_injection(tmp_path: Path, fakes: dict[str, str]) -> None:
    """The checks above can fail: unquoted text with a payload does touch the marker."""
    marker = tmp_path / "P"
    naive = {"subst": "t={}", "backquote": "t={}", "semicolon": "t={}",
             "squote": "'t={}'", "dquote": '"t={}"'}   # how a string-formatting generator would write it
    for name, form in naive.items():
        _bash("srun clusterbench coll --tag " + form.format(PAYLOADS[name].format(m=marker)), fakes, tmp_path)
        assert marker.exists(), name
        marker.unlink()


def test_every_launcher_option_is_in_the_table() -> None:
    """A new option must get its row here."""
    from clusterbench.cli import all_commands

    tried = {(r.launcher.split("-")[0], a) for r in ROWS for a in r.args if a.startswith("--")}
    flags_without_value = {"--print", "--auto-net-env", "--exclusive", "--submit", "--wait", "--no-wait",
                           "--json", "--oversubscribe", "--no-preflight", "--is-host", "--not-host",
                           "--apply", "--no-install", "--help", "--quiet"}
    for engine, cmd in all_commands()["launch"].commands.items():
        for p in cmd.params:
            for opt in p.opts:
                if opt.startswith("--") and opt not in flags_without_value:
                    assert (engine, opt) in tried, f"launch {engine} {opt} has no injection row"
