"""Tests of clusterbench.cli: the ``clusterbench`` command."""

from __future__ import annotations

import ast

import click
import pytest
from json_cases import BENCHMARKS, _cases
from judge_helpers import cli as run
from launch_rows import ROWS
from paths import ROOT

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.suite import SUITE
from clusterbench.cli import all_commands, cli
from clusterbench.families import FAMILIES, by_command
from clusterbench.families.collectives.spec import OPS

# Commands that need a cluster (Slurm, several hosts) check their lines where they run.
ELSEWHERE = {
    "sweep": "tests/system/test_coll.py::test_sweep_names_the_host_behind_a_shaped_link",
    "trend": "tests/cli/commands/test_trend.py::test_step_in_a_real_history_is_named_at_its_run",
    "qualify": "tests/system/test_qualify.py::test_cpu_smoke_end_to_end",
    "launch slurm": "tests/system/test_launch.py::test_submit_runs_end_to_end_and_imports_the_run",
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


@pytest.mark.parametrize("argv,line", [
    (["colll"], "clusterbench: error: No such command 'colll'. Did you mean 'coll'?"),
    (["resuls", "list"], "clusterbench: error: No such command 'resuls'. Did you mean 'results'?"),
    (["xyzzy"], "clusterbench: error: No such command 'xyzzy'."),
    (["coll", "all_reduc"], "clusterbench: error: unknown collective 'all_reduc': expected "
     f"{', '.join(OPS)} or all. Did you mean 'all_reduce'?"),
])
def test_a_mistyped_command_or_op_names_the_closest_in_the_same_words(capsys, argv, line):
    """Commands load only when they run, so click, which suggests among those loaded, had none
    to offer; an op is suggested in click's words too."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.splitlines() == [line]


def test_help_lists_every_command_once_by_workflow_after_where_to_start():
    """As `git help`: the commands by workflow (measure, judge, fleet, results), each in one
    group, after a "start here" for the three workflows; before, 25 commands alphabetically."""
    from click.testing import CliRunner

    from clusterbench.cli import START_HERE, WORKFLOWS

    grouped = [name for _, rows in WORKFLOWS for name, _ in rows]
    assert sorted(grouped) == sorted(all_commands()), "put each command in one group of WORKFLOWS"
    assert [t.split(" ")[0] for t, _ in WORKFLOWS] == ["Measure", "Judge", "Fleet", "Results"]
    text = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    assert "Other:" not in text
    assert text.index("Start here:") < text.index("Measure (") < text.index("Judge (") < \
        text.index("Fleet (") < text.index("Results (") < text.index("Options:")
    assert [w for w, _ in START_HERE] == ["qualify a new node", "find a slow node", "A/B two setups"]
    for line in text.splitlines():
        assert len(line) <= 80, line
    for name, _ in (row for _, rows in WORKFLOWS for row in rows):   # one line each, never cut
        entry = next(line for line in text.splitlines() if line.strip().split(" ")[0] == name)
        assert not entry.endswith("...")


def test_the_start_here_commands_are_what_the_cli_accepts():
    import shlex

    from clusterbench.cli import START_HERE
    from clusterbench.cli.argv_check import check_argv

    for what, lines in START_HERE:
        for line in lines:
            typed = line.split("   (", 1)[0]   # what follows three spaces is a comment
            for command in typed.split("&&"):
                argv = shlex.split(command)
                assert argv[0] == "clusterbench", (what, line)
                check_argv(argv[1:], f"start here: {what}")
