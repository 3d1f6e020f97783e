"""Tests of clusterbench.cli: the ``clusterbench`` command."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import click
from paths import ROOT, TESTS

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.suite import SUITE
from clusterbench.cli import all_commands, cli
from clusterbench.families import FAMILIES, by_command

DATA = TESTS / "data"


SYSFS = DATA / "sysfs"


TINY_COLL = ["coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
             "--telemetry-interval", "0"]


def _cases(s: dict[str, str]) -> list[tuple[str, list[str], int, set[str]]]:
    """(id, argv without --json, exit code, kinds that must appear)."""
    db, tmp = ["--db", s["db"]], Path(s["tmp"])
    bad = tmp / "notes.txt"
    return [
        ("results list", ["results", "list", *db], 0, {"run"}),
        ("results list --benchmark", ["results", "list", "--benchmark", "collectives", "--since", "1d", *db], 0,
         {"run"}),
        ("results show", ["results", "show", "last", "seed=mi300x", *db], 0, {"measurement", "run", "efficiency"}),
        ("results show last~1", ["results", "show", "last~1", *db], 0, {"measurement", "run"}),
        ("results show bench:", ["results", "show", "bench:babelstream", *db], 0, {"measurement", "run"}),
        ("results export", ["results", "export", "1..3", *db], 0, {"measurement", "run"}),
        ("results copy", ["results", "copy", "--from", s["db"], "--to", str(tmp / "copy.db")], 0, {"summary"}),
        ("validate", ["validate", "seed=mi300x", "--profile", "amd-mi300x-oem", *db], 1,
         {"criterion", "percent_of_peak", "summary"}),
        ("validate efficiency", ["validate", "bench:all_reduce,seed=mi300x", "--profile", "amd-mi300x-oem",
                                 "--link-speed", "100Gbps", "--nodes", "2", *db], 0,
         {"criterion", "efficiency", "summary"}),
        ("validate note", ["validate", "bench:stream", "--profile", "amd-mi300x-oem", "--link-speed", "100Gbps",
                           *db], 0, {"criterion", "note", "summary"}),
        ("compare", ["compare", "env=a", "env=b", "--fail-on", "any", *db], 0, {"comparison", "summary"}),
        ("baseline create", ["baseline", "create", "env=a", "env=b", "-o", str(tmp / "golden.yaml"), *db], 0,
         {"summary"}),
        ("theory", ["theory", "--nodes", "2,4", "--run", "env=cpu", *db], 0, {"measurement", "efficiency"}),
        ("preflight", ["preflight", "--root", str(SYSFS / "h100-node"), "--expect-nic-speed", "400G"], 1,
         {"check", "summary"}),
        ("env", ["env", "--root", str(SYSFS / "mi300x-node")], 0, {"inventory"}),
        ("env show", ["env", "show", "last", "1", *db], 0, {"inventory"}),
        ("env diff", ["env", "diff", "1", "last", *db], 0, {"difference", "summary"}),
        ("report", ["report", "env=a", "env=b", "-o", str(tmp / "ab.html"), *db], 0, {"summary"}),
        ("import", ["import", str(DATA / "osu" / "rocm-blogs-gpu-aware-mpi-osu_bw-rocm-DD-16MiB.txt"), *db], 0,
         {"measurement", "run", "summary"}),
        ("import incomplete", ["import", str(DATA / "nccl-tests" / "issue280-4090-test-nccl-failure-truncated.txt"),
                               *db], 1, {"measurement", "run", "summary"}),
        ("import --dry-run", ["import", "--dry-run", str(DATA / "nccl-tests" / "superbench-nccl_broadcast.log")], 0,
         {"run", "summary"}),
        ("import unreadable", ["import", str(bad), *db], 2, {"summary"}),
        ("coll", [*TINY_COLL, *db], 0, {"measurement", "run"}),
    ]


# Commands that need a cluster (Slurm, several hosts) check their lines where they run.
ELSEWHERE = {
    "sweep": "tests/system/test_coll.py::test_sweep_names_the_host_behind_a_shaped_link",
    "trend": "tests/cli/commands/test_trend.py::test_step_in_a_real_history_is_named_at_its_run",
    "qualify": "tests/system/test_qualify.py::test_cpu_smoke_end_to_end",
    "launch slurm": "tests/system/test_launch.py::test_submit_runs_end_to_end_and_imports_the_run",
    "predict": "tests/cli/commands/test_predict.py::test_predict_json_lines_follow_the_schema",
}


# Benchmark commands share coll's printer; each runs once, tiny, below.
BENCHMARKS = {
    "stream": ["stream", "-s", "64K", "-n", "3"],
    "gemm": ["gemm", "-m", "64", "-n", "64", "-k", "64", "-i", "1", "--samples", "2", "--device", "cpu"],
    "transfer": ["transfer", "--bytes", "256K", "--iterations", "2", "--device", "cpu"],
    "net": ["net", "--np", "2", "--duration", "0.2", "--latency-iters", "10", "--link-rate", "10Gbps"],
    "train": ["train", "--np", "1", "--device", "cpu", "--steps", "2", "--warmup", "0", "--batch", "2",
              "--no-comm-share"],
    "ddp-comm": ["ddp-comm", "--np", "2", "--device", "cpu", "--size", "1M", "--layers", "2", "--steps", "2",
                 "--warmup", "1"],
    "infer-tp": ["infer-tp", "--np", "1", "--device", "cpu", "--hidden", "64", "--layers", "1",
                 "--batch-sizes", "8", "--iters", "1", "--warmup", "0"],
    "run": ["run", "--np", "2", "--device", "cpu", "--no-preflight"],
    "scaling": None,  # reads the train runs stored above: see test_scaling_lines
}


def _json_commands() -> set[str]:
    found = set()

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in (all_commands() if cmd is cli else cmd.commands).items():
                walk(sub, [*path, name])
        if any("--json" in getattr(p, "opts", ()) for p in cmd.params):
            found.add(" ".join(path))

    walk(cli, [])
    return found


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


def test_every_family_command_is_a_cli_command():
    for f in FAMILIES:
        for command in f.commands:
            assert command in all_commands(), (f.name, command)
            assert by_command(command) is f


def test_every_json_command_is_covered():
    json_commands = _json_commands()
    covered = set()
    for _, argv, _, _ in _cases({"db": "x", "tmp": "/x"}):
        words = [w for w in argv if not w.startswith("-")]
        covered.add(" ".join(words[:2]) if " ".join(words[:2]) in json_commands else words[0])
    missing = json_commands - covered - set(ELSEWHERE) - set(BENCHMARKS)
    assert not missing, f"commands with --json that no test checks against the schema: {sorted(missing)}"
    for where in ELSEWHERE.values():
        path, _, test = where.partition("::")
        assert f"def {test}(" in (ROOT / path).read_text() and "check_lines(" in (ROOT / path).read_text()


def test_commands_print_json_only_through_report_jsonl():
    """One way to print a line: no command module dumps JSON to stdout itself."""
    for path in sorted((ROOT / "src" / "clusterbench" / "cli" / "commands").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("print", "echo") and node.args and isinstance(node.args[0], ast.Call):
                    inner = node.args[0].func
                    inner_name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
                    assert inner_name not in ("dumps", "to_json"), \
                        f"{path.name}:{node.lineno} prints JSON itself: use clusterbench.report.jsonl.emit"


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


def test_run_help_says_it_runs_collectives_stream_and_gemm():
    from click.testing import CliRunner

    from clusterbench.bench.collectives import rank as coll_rank
    from clusterbench.cli import cli

    # what the suite runs...
    assert [e.target for e in SUITE] == [coll_rank.main, stream_main.main, gemm_main.main]
    # ...is what the help says, in the command list too
    full = CliRunner().invoke(cli, ["run", "--help"]).output
    assert all(word in full for word in ("collective", "stream", "GEMM", "all_reduce", "Triad"))
    listing = CliRunner().invoke(cli, ["--help"]).output
    line = next(x for x in listing.splitlines() if x.strip().startswith("run "))
    assert "Collectives" in line and "stream" in line and "GEMM" in line
