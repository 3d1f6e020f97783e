"""Fuzzing every launcher option that reaches a generated artifact with hostile values.

``launch slurm|mpi|torchrun|k8s|dstack`` (through the real CLI entry) gets, for each option that
flows into its script, command line or manifest, a seeded sample of hostile values: quotes,
backquotes, ``$()``/``${}``, ``;``, control characters (C0 and C1), leading dashes, white space,
unicode, YAML specials and words YAML would retype (``yes``, ``~``, ``0x1F``, ``1e3``, ``y``,
``08``), very long and empty values. For each, the launcher either refuses it (exit 2, one line
on stderr, nothing on stdout) or prints an artifact that carries it exactly:

- shell text passes ``bash -n`` and, run with recorders for srun/mpirun/torchrun/ssh/pip/
  clusterbench on PATH, hands the value over as exactly one intact argument (or environment
  value); ``#SBATCH`` lines hold only characters sbatch reads as one word;
- YAML loads back (PyYAML) to the exact strings, and no plain scalar is one that kubectl's YAML
  reader (go-yaml: YAML 1.1 and 1.2) would take for a boolean, null or number;
- environment variable names are identifiers, and a database password never shows.

Deterministic (a fixed seed) and quick: most hostile values are refused in-process, and only
accepted artifacts are run.
"""

from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from judge_helpers import run_cli
from k8s_schemas import (
    check,
    check_cronjob,
    mpijob_schema,
    pytorchjob_schema,
)
from launch_rows import TAIL, _strings

SEED = 20240611

FIXED = [
    "'", '"', "`touch P`", "$(touch P)", "${HOME}", "$HOME", "x; touch P", "a b", " lead", "trail ",
    "-x", "--help", "é", "日本語", "\u202eevil", ":", "#", "a #b", "- a", "? x", "{a: 1}", "[a]", ",", "&a",
    "*a", "!a", "|", ">", "%", "@x", "`", "yes", "no", "null", "Null", "0x1F", "1e3", "1.0e3", "~", "y", "N",
    "08", "0o17", "on", "=", "<<", "", "\n", "x\ny", "\r", "x\x00y", "\x85", "\x9b31m", "\x1b[2J", "a\tb",
    "\u2028", "$$", "a$$b", "${{ run.args }}", "$(CLUSTERBENCH_DB)", "'\"`$\\", "\\", "x" * 5000,
]
ALPHABET = "ab09 '\"`$(){}[];:#-?,&*!|>%@~\\=\t\né\u2028\x85_./+"


ALWAYS = ["", "$(touch P)", "x; touch P", "'", "yes", "1e3", "y", "\n", "\x85", "${{ run.args }}", "x" * 5000]


def _values(rng: random.Random, n_fixed: int, n_random: int) -> list[str]:
    """The values every row gets, a seeded sample of the others, and a few random strings."""
    rand = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12))) for _ in range(n_random)]
    return [*ALWAYS, *rng.sample([v for v in FIXED if v not in ALWAYS], n_fixed), *rand]


# -- recorders ----------------------------------------------------------------------------

# argv, then NCCL_X from the environment, NUL-separated; a \x01 field ends the record (no value
# holding a control character is ever accepted, so neither separator can occur in one)
RECORDER = r"""#!/bin/sh
printf '%s\0' "${0##*/}" "$@" "NCCL_X=${NCCL_X-<unset>}" "$(printf '\001')" >> "$CB_ARGS"
"""
FAKE_SSH = """#!/bin/sh
while [ "$1" = "-o" ]; do shift 2; done
shift
exec sh -c "$*"
"""
TOOLS = ("srun", "mpirun", "torchrun", "pip", "scontrol", "clusterbench")


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bin")
    for tool in TOOLS:
        (d / tool).write_text(RECORDER)
    (d / "ssh").write_text(FAKE_SSH)
    for f in d.iterdir():
        f.chmod(0o755)
    return d


@dataclass
class Seen:
    calls: list[list[str]] = field(default_factory=list)      # each tool's argv, tool name first
    env: list[str] = field(default_factory=list)               # NCCL_X as each tool saw it
    strings: list[str] = field(default_factory=list)           # every string of a manifest


def _run_shell(text: str, bindir: Path, cwd: Path) -> Seen:
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
    assert syntax.returncode == 0, f"bash -n rejects:\n{text[:2000]}\n{syntax.stderr}"
    return _run(["bash", "-c", text], bindir, cwd)


def _run(argv: list[str], bindir: Path, cwd: Path) -> Seen:
    record = cwd / "args"
    record.unlink(missing_ok=True)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(cwd), "CB_ARGS": str(record), "SLURM_JOB_NODELIST": "n1",
           "DSTACK_GPUS_PER_NODE": "8", "DSTACK_NODE_RANK": "0", "DSTACK_MASTER_NODE_IP": "10.0.0.1"}
    subprocess.run(argv, capture_output=True, timeout=20, env=env, cwd=cwd)
    assert not (cwd / "P").exists(), "a payload ran"
    seen = Seen()
    fields = record.read_bytes().decode().split("\0") if record.exists() else []
    call: list[str] = []
    for f in fields:
        if f == "\x01":
            seen.env.append(call.pop().removeprefix("NCCL_X="))
            seen.calls.append(call)
            call = []
        else:
            call.append(f)
    return seen


# -- what each artifact must look like ------------------------------------------------------

_SBATCH_LINE = re.compile(r"#SBATCH --[a-z][a-z-]*(=[!%&(-+,-/0-9:;<=>?@A-Z\[\]^_a-z{|}~]+)?")
# plain scalars that go-yaml (kubectl) resolves to something other than a string
_GO_NOT_STR = re.compile(
    r"(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~|)"
    r"|[-+]?(\.[0-9_]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?0[xXoObB][0-9a-fA-F_]+"
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|<<")


def _slurm(out: str, bindir: Path, cwd: Path) -> Seen:
    head = out.split("\n\n", 1)[0].splitlines()
    assert head[0] == "#!/bin/bash"
    for line in head[1:]:  # sbatch reads these unquoted: one ASCII word per directive
        assert _SBATCH_LINE.fullmatch(line), line
    assert [line for line in out.splitlines() if line.startswith("#SBATCH")] == head[1:]
    seen = _run_shell(out, bindir, cwd)
    assert [c[0] for c in seen.calls if c[0] != "scontrol"] == ["srun"]
    seen.strings = head[1:]
    return seen


def _cmdline(out: str, bindir: Path, cwd: Path) -> Seen:
    seen = _run_shell(out, bindir, cwd)
    seen.strings = [w for line in out.split("\n") if not line.startswith("#") for w in shlex.split(line)]
    return seen


def _yaml_strict(out: str) -> None:
    """Every plain (unquoted) scalar that PyYAML loads as a string is one for go-yaml too."""
    def walk(node) -> None:
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.tag == "tag:yaml.org,2002:str":
                assert not _GO_NOT_STR.fullmatch(node.value), f"{node.value!r} is unquoted"
        elif isinstance(node, yaml.SequenceNode):
            for n in node.value:
                walk(n)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(k)
                walk(v)
    walk(yaml.compose(out))


def _k8s(out: str, bindir: Path, cwd: Path) -> Seen:
    _yaml_strict(out)
    doc = yaml.safe_load(out)
    if doc["kind"] == "PyTorchJob":
        check(pytorchjob_schema(), doc)
        main = doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    elif doc["kind"] == "CronJob":
        check_cronjob(doc)
        main = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    else:
        check(mpijob_schema(), doc)
        main = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    for e in main.get("env") or []:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", e["name"]), e["name"]
        if "value" in e:  # the kubelet: $$ is $, and every $ of ours is doubled
            assert "$(" not in e["value"].replace("$$", ""), e["value"]
    command = [w.replace("$$", "$") for w in main["command"]]
    assert all("$(" not in w.replace("$$", "") for w in main["command"])
    env = {e["name"]: e["value"].replace("$$", "$") for e in main.get("env") or [] if "value" in e}
    # the container runtime runs the command as an argument list, with the pod's environment
    seen = _run(["env", *[f"{k}={v}" for k, v in env.items()], *command], bindir, cwd)
    seen.strings = [*_strings(doc), *command, *env.values()]
    return seen


def _dstack(out: str, bindir: Path, cwd: Path, setup: int = 0) -> Seen:
    _yaml_strict(out)
    doc = yaml.safe_load(out)
    for item in doc.get("env", []):
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", item, re.S), item
        if not item.startswith("CLUSTERBENCH_DB="):  # dstack interpolates env values: none of ours
            assert "${{" not in item and "$$" not in item, item
    for command in doc["commands"][setup:]:   # and the commands (--setup lines are the user's)
        assert "${{" not in command and "$$" not in command, command
    env = [item for item in doc.get("env", [])]
    seen = _run_shell("\n".join(f"export {shlex.quote(e)}" for e in env) + "\n"
                      + "\n".join(doc["commands"][setup:]), bindir, cwd)
    seen.strings = _strings(doc)
    return seen


ARTIFACT = {"slurm": _slurm, "mpi": _cmdline, "torchrun": _cmdline, "k8s": _k8s, "dstack": _dstack}

BASE = {
    "slurm": ["launch", "slurm", "--nodes", "2", "--gpus-per-node", "8"],
    "mpi": ["launch", "mpi", "--hosts", "node[1-2]", "--procs-per-node", "8", "--print"],
    "mpi-hostfile": ["launch", "mpi", "--hostfile", "{hostfile}", "--print"],
    "torchrun": ["launch", "torchrun", "--nodes", "2", "--rdzv-endpoint", "node1:29400", "--print"],
    "torchrun-hosts": ["launch", "torchrun", "--hosts", "node1,node2", "--print"],
    "k8s": ["launch", "k8s", "--nodes", "2", "--gpus-per-node", "2"],
    "k8s-mpijob": ["launch", "k8s", "--kind", "mpijob", "--image", "registry.example/cb:1", "--nodes", "2",
                   "--gpus-per-node", "1"],
    "k8s-cron": ["launch", "k8s", "--schedule", "0 3 * * *", "--nodes", "2", "--gpus-per-node", "2"],
    "dstack": ["launch", "dstack", "--nodes", "2", "--gpus-per-node", "8"],
}

# (launcher, option words with {v}, kind): "word": the benchmark gets exactly this argument;
# "env": the ranks see NCCL_X exactly; "field": the value shows whole in the artifact
ROWS: list[tuple[str, tuple[str, ...], str]] = []
for _l in BASE:
    ROWS += [(_l, ("--env", "NCCL_X={v}"), "env"), (_l, ("--tag", "t={v}"), "word"),
             (_l, ("--env", "{v}=1"), "name")]
ROWS += [("slurm", (o, "{v}"), "field") for o in ("--partition", "--time", "--job-name", "--account", "--output",
                                                  "--nodelist", "--sbatch-opt")]
ROWS += [("slurm", ("--db", "{v}"), "db"), ("mpi", ("--db", "{v}"), "db"),
         ("mpi", ("--hosts", "{v}"), "field"), ("mpi", ("--mca", "btl_tcp_if_include={v}"), "field"),
         ("mpi", ("--agent", "{v}"), "field"), ("mpi", ("--mpirun", "{v}"), "field"),
         ("mpi-hostfile", ("{v}",), "hostfile"), ("mpi-hostfile", ("node1:{v}",), "hostfile")]
for _l in ("torchrun", "torchrun-hosts"):
    ROWS += [(_l, ("--rdzv-id", "{v}"), "field"), (_l, ("--rdzv-endpoint", "{v}:29400"), "field")]
ROWS += [("torchrun", ("--local-addr", "{v}"), "field"), ("torchrun-hosts", ("--hosts", "{v}"), "field"),
         ("torchrun-hosts", ("--agent", "{v}"), "field")]
for _l in ("k8s", "k8s-mpijob", "k8s-cron"):
    ROWS += [(_l, (o, "{v}"), "field") for o in ("--name", "--namespace", "--image", "--db-secret", "--shm-size",
                                                 "--network", "--gpu-resource")]
    ROWS += [(_l, ("--resource", "rdma/x={v}"), "field"), (_l, ("--resource", "{v}=1"), "field")]
ROWS += [("k8s", ("--install", "{v}"), "field"), ("k8s-cron", ("--schedule", "{v}"), "field"),
         ("k8s-cron", ("--time-zone", "{v}"), "field"), ("k8s-cron", ("--service-account", "{v}"), "field")]
ROWS += [("dstack", (o, "{v}"), "field") for o in ("--name", "--image", "--gpu", "--db-secret", "--install")]


def _argv(launcher: str, words: tuple[str, ...], value: str, cwd: Path) -> list[str]:
    hostfile = cwd / "hosts"
    hostfile.write_text("node1 slots=8\nnode2 slots=8\n")
    if launcher == "mpi-hostfile" and words:   # the value is the first line's host (or its slot count)
        hostfile.write_text(words[0].replace("{v}", value) + " slots=8\nnode2 slots=8\n")
        words = ()
    base = [w.replace("{hostfile}", str(hostfile)) for w in BASE[launcher]]
    opts = [w.replace("{v}", value) for w in words if words[:1] != ("--tag",)]
    tail = [*TAIL, "--tag", f"t={value}"] if words[:1] == ("--tag",) else TAIL
    return [*base, *opts, *tail]


def _check_row(launcher: str, words: tuple[str, ...], kind: str, value: str, cwd: Path, bindir: Path) -> None:
    code, out, err = run_cli(*_argv(launcher, words, value, cwd))
    if code != 0:
        assert code == 2, f"exit {code}: {err}"
        assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
        assert out == ""
        return
    if kind != "hostfile":   # (where a newline is just the next line of the file)
        assert not re.search(r"[\x00-\x1f\x7f-\x9f]", value), f"a control character was accepted:\n{out}"
    seen = ARTIFACT[launcher.split("-")[0]](out, bindir, cwd)
    if kind == "word":     # the benchmark got the tag as one argument, exactly
        bench = [c for c in seen.calls if c[0] in ("srun", "mpirun", "torchrun", "clusterbench")]
        assert bench and all(f"t={value}" in c for c in bench), (value, seen.calls)
    elif kind == "env":
        if launcher.startswith("mpi"):   # mpirun -x NCCL_X=VALUE forwards it
            assert f"NCCL_X={value}" in seen.calls[-1], seen.calls
        else:
            assert seen.env and seen.env[-1] == value, (value, seen.env)
    elif kind == "name":
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value.split("=")[0]), value
    elif kind == "db":     # made absolute, or the URL without a password
        from clusterbench.store.location import for_other_hosts

        assert value and [c for c in seen.calls if for_other_hosts(value) in c], (value, seen.calls)
    elif kind == "field":  # refused, or whole in one string of the artifact
        assert value != "", f"an empty {words[0]} was taken for none:\n{out}"
        strings = [*seen.strings, *(w for c in seen.calls for w in c)]
        for part in _parts(launcher, words[0], value):
            assert any(part in s for s in strings), f"{part!r} of {value!r} not in the artifact:\n{out[:3000]}"


def _parts(launcher: str, option: str, value: str) -> list[str]:
    """What of a field's value the artifact must show: the value, or the pieces it stands for."""
    from clusterbench.launch.common import parse_hosts

    if option == "--nodelist":           # written with commas between the items
        return [w for w in re.split(r"[\s,]+", value) if w]
    if option == "--hosts":
        return parse_hosts(value)
    if option in ("--local-addr", "--rdzv-endpoint"):   # a host name, without white space around it
        return [value.strip()]
    if option == "--agent":              # a command line of its own
        return shlex.split(value)
    if option == "--schedule":           # its fields, one space apart
        return value.split()
    if option == "--db-secret" and launcher.startswith("k8s"):   # NAME[:KEY]
        return [p for p in value.partition(":")[::2] if p]
    return [value]


def _id(row) -> str:
    launcher, words, _ = row
    return f"{launcher}:{' '.join(words)}"


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_hostile_values_are_refused_or_carried_exactly(row, tmp_path: Path, bindir: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rng = random.Random(f"{SEED}:{_id(row)}")
    launcher, words, kind = row
    for value in _values(rng, 8 if kind in ("env", "word") else 30, 4):   # those run every artifact
        _check_row(launcher, words, kind, value, tmp_path, bindir)


# -- the bugs this found, one by one ---------------------------------------------------------

REFUSED = [
    # digits other than ASCII ones (\d, str.isdigit) passed checks meant for sbatch, cron, Kubernetes
    ("slurm", ["--time", "٠١:٠٠"]), ("k8s", ["--shm-size", "١Gi"]),
    ("k8s-cron", ["--schedule", "٣ * * * *"]), ("k8s-cron", ["--schedule", "*/١ * * * *"]),
    # an empty value was taken for "not given": the default database, image, no schedule or secret
    ("slurm", ["--db", ""]), ("mpi", ["--db", ""]), ("mpi", ["--agent", ""]), ("k8s-mpijob", ["--image", ""]),
    ("k8s", ["--schedule", ""]), ("k8s", ["--db-secret", ""]), ("torchrun", ["--local-addr", ""]),
    ("torchrun", ["--rdzv-id", ""]), ("torchrun-hosts", ["--agent", ""]),
    # C1 control characters (NEL, CSI) are control characters too
    ("slurm", ["--env", "NCCL_X=a\x85b"]), ("k8s", ["--env", "NCCL_X=\x9b31m"]),
    # bash will not export its read-only variables: the script would stop there
    ("slurm", ["--env", "UID=1000"]), ("slurm", ["--env", "SHELLOPTS=x"]),
    # brackets are for [IPv6]:PORT only
    ("torchrun", ["--rdzv-endpoint", "]a[:29400"]),
    # names Kubernetes refuses: Services need a letter first; a CronJob's name has 52 characters
    ("k8s", ["--name", "1abc"]), ("k8s-mpijob", ["--name", "a" * 60]), ("k8s-cron", ["--name", "a" * 53]),
    ("k8s", ["--namespace", "a" * 64]),
    # the CronJob sets CLUSTERBENCH_NODE itself: two entries, the user's one lost
    ("k8s-cron", ["--env", "CLUSTERBENCH_NODE=x"]),
    # dstack interpolates ${{ }} and unescapes $$ in commands and env values, before any quote counts
    ("dstack", ["--env", "NCCL_X=${{ secrets.other }}"]), ("dstack", ["--env", "NCCL_X=a$$b"]),
    ("dstack", ["--install", "clusterbench==0.1; x=$${{"]),
]


@pytest.mark.parametrize("launcher,opts", REFUSED, ids=lambda x: x if isinstance(x, str) else " ".join(x)[:40])
def test_refused_with_one_line(launcher: str, opts: list[str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts").write_text("node1 slots=8\n")
    code, out, err = run_cli(*_argv(launcher, (), "", tmp_path)[:-len(TAIL)], *opts, *TAIL)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)


def test_dstack_refuses_its_interpolation_in_the_command() -> None:
    code, out, err = run_cli(*BASE["dstack"], *TAIL, "--tag", "t=${{ run.args }}")
    assert code == 2 and "interpolation" in err, err


@pytest.mark.parametrize("content", ["node1:²\n", "node1 slots=٣\n", "node1 slots=1\x0bnode2 slots=1\n",
                                     "node1\u00a0slots=2\n"])
def test_hostfile_is_read_as_open_mpi_reads_it(content: str, tmp_path: Path) -> None:
    """A superscript digit crashed the parser; other digits, a vertical tab (a line break to
    Python, not to Open MPI) and a no-break space made us check other hosts than mpirun reads."""
    (tmp_path / "hosts").write_text(content)
    code, out, err = run_cli("launch", "mpi", "--hostfile", str(tmp_path / "hosts"), "--print", *TAIL)
    assert code == 2 and err.count("\n") == 1 and "line 1" in err, (code, err)
    (tmp_path / "hosts").write_text("node1 slots=2\r\n\tnode2\tslots=2 # a comment\r\n")   # CRLF and tabs: fine
    assert run_cli("launch", "mpi", "--hostfile", str(tmp_path / "hosts"), "--print", *TAIL)[0] == 0


@pytest.mark.parametrize("launcher", ["k8s", "k8s-mpijob", "k8s-cron", "dstack"])
def test_yaml_quotes_what_kubectl_would_retype(launcher: str) -> None:
    """PyYAML writes 1e3, y, 08, 0o17 bare; kubectl's reader takes them for numbers and booleans."""
    words = ["1e3", "y", "N", "08", "0o17", "1.0e3", "+.5"]
    args = [a for w in words for a in ("--env", f"NCCL_{len(w)}{ord(w[0])}={w}")]
    # a bare word of the command: an RDMA device name may be 1e3 (launch checks the values after --)
    code, out, err = run_cli(*BASE[launcher], *args, "--", "net", "--rdma", "--rdma-device", "1e3")
    assert code == 0, err
    _yaml_strict(out)
    strings = _strings(yaml.safe_load(out))
    for w in words:
        assert any(s == w or s.endswith(f"={w}") for s in strings), w


def test_nodelist_items_are_joined_with_one_comma() -> None:
    code, out, err = run_cli("launch", "slurm", "--nodelist", " gpu01, gpu02 ,gpu[03-04] ", "--print", *TAIL)
    assert code == 0, err
    assert "#SBATCH --nodelist=gpu01,gpu02,gpu[03-04]\n" in out


def test_a_database_password_never_shows(tmp_path: Path, bindir: Path, monkeypatch) -> None:
    """The launcher's own --db is stripped of its password; a password in the command after --
    or in --env CLUSTERBENCH_DB is refused rather than printed into every script and manifest."""
    monkeypatch.chdir(tmp_path)
    url = "postgresql://cb:S3cretPW@db1:5432/cb?sslmode=require&password=S3cretPW"
    for launcher in ("slurm", "mpi"):
        code, out, err = run_cli(*BASE[launcher], "--print", "--db", url, *TAIL)
        assert code == 0 and "S3cretPW" not in out + err and "postgresql://cb@db1:5432/cb" in out, out
    for launcher in BASE:
        for extra, tail in ((["--env", f"CLUSTERBENCH_DB={url}"], []), ([], ["--tag", f"db={url}"]),
                            ([], ["--datatype", url])):
            code, out, err = run_cli(*_argv(launcher, (), "", tmp_path)[:-len(TAIL)], *extra, *TAIL, *tail)
            assert code == 2 and out == "" and "S3cretPW" not in err, (launcher, extra, tail, out, err)


def test_the_harness_notices_a_bad_artifact(tmp_path: Path, bindir: Path) -> None:
    """The checks can fail: an unquoted word splits, a bare 1e3 is retyped, a payload runs."""
    seen = _run_shell("srun clusterbench coll --tag t=a b", bindir, tmp_path)
    assert "t=a b" not in seen.calls[0]
    with pytest.raises(AssertionError):
        _yaml_strict("env:\n- value: 1e3\n")
    with pytest.raises(AssertionError):
        _run_shell("srun $(touch P)", bindir, tmp_path)
    os.unlink(tmp_path / "P")
