"""Every command's ``--json``: one JSON object per line, each with a ``kind``, each valid against
the published schema; run on a small database built from real logs (tests/data) and a tiny CPU
collective run. Every command that has ``--json`` is in the table below or named with the test
that runs it elsewhere (the ones that need a cluster)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import click
import pytest
from json_schema import SCHEMA, check_lines
from judge_helpers import run_cli

from clusterbench.cli import all_commands, cli
from clusterbench.report import jsonl

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
SYSFS = DATA / "sysfs"

# (file, tags): real logs of the standard tools
LOGS = [
    ("nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt", ["seed=mi300x"]),
    ("transferbench/seed-mi300x-p2p.txt", ["seed=mi300x"]),
    ("transferbench/seed-mi300x-example-cfg.txt", ["seed=mi300x"]),   # Test 2 fails its threshold
    ("rocblas-bench/seed-mi300x-sgemm-4000.txt", ["seed=mi300x"]),
    ("babelstream/seed-mi300x-hip-8gpu-mpi.txt", ["seed=mi300x"]),
    ("nccl-tests/superbench-nccl_allreduce.log", ["env=a"]),
    ("nccl-tests/superbench-nccl_allreduce.log", ["env=b"]),
    ("nccl-tests/issue322-16G-test-nccl-failure-truncated.txt", ["env=broken"]),
]
TINY_COLL = ["coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
             "--telemetry-interval", "0"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The database every command reads: imported real logs and one tiny CPU run."""
    tmp = tmp_path_factory.mktemp("jsonl")
    db = str(tmp / "cb.db")
    for name, tags in LOGS:
        code, _, err = run_cli("import", DATA / name, "--db", db, *[a for t in tags for a in ("--tag", t)])
        assert code in (0, 1), err
    # a run judged against a link: tagged as if it spanned 2 nodes of a 100 Gbps network
    code, _, err = run_cli(*TINY_COLL, "--tag", "env=cpu", "--tag", "nodes=2", "--tag", "link_speed=100Gbps",
                           "--db", db)
    assert code == 0, err
    return {"db": db, "tmp": tmp}


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


CASE_IDS = [c[0] for c in _cases({"db": "x", "tmp": "/nonexistent"})]


@pytest.mark.parametrize("case", CASE_IDS)
def test_every_line_is_valid(store, case):
    (Path(store["tmp"]) / "notes.txt").write_text("a meeting note\n")
    name, argv, want_code, kinds = next(c for c in _cases(store) if c[0] == case)
    code, out, err = run_cli(*argv, "--json")
    assert code == want_code, f"{name}: exit {code}\n{err}"
    objs = check_lines(out)
    assert kinds <= {o["kind"] for o in objs}, f"{name}: kinds {sorted({o['kind'] for o in objs})}"
    summaries = [o for o in objs if o["kind"] == "summary"]
    if summaries and "exit_code" in summaries[-1]:
        assert summaries[-1]["exit_code"] == code  # the summary tells the truth about the exit code


# Commands that need a cluster (Slurm, several hosts) check their lines where they run.
ELSEWHERE = {
    "sweep": "tests/test_cluster_emulated.py::test_sweep_names_the_host_behind_a_shaped_link",
    "trend": "tests/test_fleet_trend.py::test_step_in_a_real_history_is_named_at_its_run",
    "qualify": "tests/test_fleet_qualify.py::test_cpu_smoke_end_to_end",
    "launch slurm": "tests/test_cluster_slurm.py::test_submit_runs_end_to_end_and_imports_the_run",
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


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, argv in BENCHMARKS.items() if argv])
def test_benchmark_command_lines(tmp_path, name):
    code, out, err = run_cli(*BENCHMARKS[name], "--json", "--telemetry-interval", "0",
                             "--db", tmp_path / "b.db")
    assert code == 0, err
    objs = check_lines(out)
    assert objs[-1]["kind"] in ("run", "warning", "efficiency") and any(o["kind"] == "run" for o in objs)
    if name == "net":  # judged at once against the --link-rate it was given
        assert any(o["kind"] == "efficiency" for o in objs)


def test_scaling_lines(tmp_path):
    from clusterbench.records import Measurement, Run
    from clusterbench.store import Store

    db = str(tmp_path / "s.db")
    with Store.open(db) as s:
        for nodes, value in ((1, 2.0), (2, 3.5), (4, 6.0)):
            s.save_run(Run(benchmark="train", hosts=[f"n{i}" for i in range(nodes)], ranks=nodes,
                           tags={"net": "x"}),
                       [Measurement("train", "samples_per_s", value, "samples/s", {"stat": "avg"})])
    code, out, err = run_cli("scaling", "net=x", "--json", "--db", db)
    assert code == 0, err
    objs = check_lines(out)
    assert {o["kind"] for o in objs} == {"measurement"} and {o["run"] for o in objs} == {None}


def test_schema_covers_exactly_the_kinds_and_docs_name_them():
    assert set(SCHEMA["$defs"]) == set(jsonl.KINDS)
    assert [r["$ref"].rsplit("/", 1)[1] for r in SCHEMA["oneOf"]] == list(SCHEMA["$defs"])
    doc = (ROOT / "docs" / "json.md").read_text()
    for kind in jsonl.KINDS:
        assert re.search(rf"^### `{kind}`", doc, re.M), f"docs/json.md does not document kind {kind!r}"
    assert "docs/json.md" in (ROOT / "README.md").read_text()
    assert "json.md" in (ROOT / "docs" / "metrics.md").read_text()


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


def test_round_trip_through_import(store, tmp_path):
    """results show --json of the stored runs reads back as the same runs (import -)."""
    code, out, _ = run_cli("results", "show", "seed=mi300x", "--json", "--db", store["db"])
    assert code == 0
    src = tmp_path / "lines.jsonl"
    src.write_text(out)
    code, again, err = run_cli("import", src, "--json", "--db", tmp_path / "again.db")
    assert code == 0, err
    before = [o for o in json.loads("[" + ",".join(out.splitlines()) + "]") if o["kind"] == "run"]
    after = [o for o in check_lines(again) if o["kind"] == "run"]
    assert [(o["status"], o["measurements"]) for o in after] == [(o["status"], len(
        [m for m in json.loads("[" + ",".join(out.splitlines()) + "]")
         if m["kind"] == "measurement" and m["run"] == o["id"]])) for o in before]
