"""The README and docs stay true: every command is documented, every example in them parses, and
every list of ops, dtypes, kernels, tools, commands and profiles they write by hand is whole."""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
import shlex
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from paths import ROOT

from clusterbench.cli import all_commands, cli
from clusterbench.cli.argv_check import check_argv
from clusterbench.cli.commands.qualify import LAUNCH_ENGINES
from clusterbench.errors import UsageError
from clusterbench.families.collectives import spec as coll_spec
from clusterbench.families.gemm import spec as gemm_spec
from clusterbench.families.stream import spec as stream_spec
from clusterbench.ingest import IMPORTERS, TOOLS
from clusterbench.judge.profiles import builtin_profiles, load_profile

README = (ROOT / "README.md").read_text()


def _command_paths(cmd: click.Command, prefix: list[str]) -> list[list[str]]:
    if isinstance(cmd, click.Group):
        out = [prefix] if prefix else []
        for name, sub in (all_commands() if cmd is cli else cmd.commands).items():
            out += _command_paths(sub, prefix + [name])
        return out
    return [prefix]


def _shell_blocks(text: str) -> list[str]:
    """The code blocks of a Markdown text that hold shell commands (bash, sh, console or unlabelled)."""
    blocks: list[str] = []
    lang: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if lang is None:
                lang, lines = line[3:].strip(), []
            else:
                if lang in ("", "bash", "sh", "console"):
                    blocks.append("\n".join(lines))
                lang = None
        elif lang is not None:
            lines.append(line)
    return blocks


def _examples(text: str = README) -> list[list[str]]:
    """Every `clusterbench ...` invocation in a Markdown text's shell code blocks, as argument
    lists (continued lines joined; synopses, whose [OPTIONAL] and A|B forms are not commands, left out)."""
    examples = []
    for block in _shell_blocks(text):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            for part in re.split(r";|\|(?![^\[]*\])", line.removeprefix("$ ")):
                part = part.split(" #", 1)[0].split(" > ", 1)[0].split(" 2>", 1)[0].strip()
                part = part.split("&&")[-1].strip()
                if part.startswith("clusterbench ") and "[" not in part and "..." not in part:
                    examples.append(shlex.split(part)[1:])
    return examples


DOC_EXAMPLES = [(doc.name, args) for doc in sorted((ROOT / "docs").glob("*.md")) for args in _examples(doc.read_text())]


@pytest.mark.parametrize("path", [" ".join(p) for p in _command_paths(cli, [])])
def test_every_command_is_in_the_readme(path):
    assert f"clusterbench {path}" in README, f"README shows no example of `clusterbench {path}`"


def _rest(ctx: click.Context) -> list[str]:
    with warnings.catch_warnings():  # click 8.2 keeps the subcommand in protected_args
        warnings.simplefilter("ignore", DeprecationWarning)
        return list(getattr(ctx, "protected_args", [])) + list(ctx.args)


@pytest.mark.parametrize("args", _examples(), ids=lambda a: " ".join(a)[:60])
def test_readme_examples_parse(args, monkeypatch):
    """Parse each example with the real CLI parser (types, choices, unknown options), without running it."""
    _parse(args, monkeypatch)


def test_the_docs_show_examples():
    assert len(DOC_EXAMPLES) >= 60, "the docs' examples are no longer found: check _examples"


@pytest.mark.parametrize(("doc", "args"), DOC_EXAMPLES, ids=lambda a: " ".join(a)[:60] if isinstance(a, list) else a)
def test_docs_examples_parse(doc, args, monkeypatch):
    """The commands shown in docs/*.md parse too: an option renamed or removed fails here. A file
    named by its absolute path (/etc/slurm/topology.conf) is the reader's, not this checkout's."""
    try:
        _parse(args, monkeypatch)
    except UsageError as e:
        if not re.search(r"'[/~][^']*' does not exist", str(e)):
            raise


def _parse(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``args`` parsed as qualify and sweep parse a step: the real CLI's types, choices and
    unknown options, the command after a launch's ``--``, and the values a command checks without
    hardware (``check_params``: `coll -b 1X`, `stream --float --dtype double`). A group that runs
    without a subcommand (`clusterbench env`) is a whole command line."""
    monkeypatch.chdir(ROOT)
    try:
        check_argv(args, "example", values=True)
    except UsageError as e:
        group = _resolve(args)[0]
        if not (str(e).endswith(" needs a command") and isinstance(group, click.Group)
                and group.invoke_without_command):
            raise


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "```bash\nmake test\n```" in README
    assert re.search(r"^make test$", ci, re.M)


def test_test_data_sources_name_tests_that_exist():
    """Every test file a SOURCES.md or README under tests/data names exists, and so does every
    test function it names."""
    for doc in sorted((ROOT / "tests" / "data").rglob("*.md")):
        text = doc.read_text()
        for path in sorted(set(re.findall(r"tests/(test_[a-z0-9_]+\.py)", text))):
            test_file = ROOT / "tests" / path
            assert test_file.is_file(), f"{doc.relative_to(ROOT)} names tests/{path}, which does not exist"
            for name in re.findall(rf"tests/{re.escape(path)}` \(([^)]*)\)", text):
                for fn in re.findall(r"`(test_[a-z0-9_]+)`", name):
                    assert f"def {fn}(" in test_file.read_text(), f"{doc.relative_to(ROOT)}: {path} has no {fn}"


# -- commands and options named in prose ------------------------------------------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _resolve(args: list[str]) -> tuple[click.Command, int]:
    """The command that ``args`` name (deepest group or command) and how many words name it."""
    cmd: click.Command = cli
    i = 0
    while isinstance(cmd, click.Group) and i < len(args):
        sub = (all_commands() if cmd is cli else cmd.commands).get(args[i])
        if sub is None:
            break
        cmd, i = sub, i + 1
    return cmd, i


def _prose(text: str) -> str:
    """A Markdown text without its fenced code blocks."""
    return re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)


# Placeholders and elisions: `clusterbench coll OP`, `launch ENGINE [options] -- <command>`, `gpu07,...`
_SYNOPSIS = re.compile(r"\.\.\.|[<\[|]|(?<![\w-])[A-Z][A-Z_]+\b")


def _inline_commands(text: str) -> list[tuple[str, list[str]]]:
    """Every `clusterbench ...` span of a Markdown text's prose, as (span, words). A span whose
    next word is a version (`clusterbench 0.1.0, imported from stdin`) is output, not a command."""
    out = []
    for span in re.findall(r"`(clusterbench [^`]+)`", _prose(text)):
        if not re.match(r"clusterbench \d", span):
            out.append((span, shlex.split(span)[1:]))
    return out


INLINE = [(doc.name, span, args) for doc in DOCS for span, args in _inline_commands(doc.read_text())]


def _check_span(span: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cmd, named = _resolve(args)
    assert named, f"`{span}`: {args[0]!r} is not a clusterbench command"
    rest = args[named:]
    if _SYNOPSIS.search(span) or not rest:
        # A synopsis, or a command named in passing (`clusterbench import`): its options must exist
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        words = rest[:rest.index("--")] if "--" in rest else rest
        for w in words:
            if w.startswith("--") and len(w) > 2:
                assert w.split("=", 1)[0] in opts, f"`{span}`: {cmd.name} has no option {w.split('=', 1)[0]}"
        return
    _parse(args, monkeypatch)


@pytest.mark.parametrize(("doc", "span", "args"), INLINE, ids=lambda a: a[:60] if isinstance(a, str) else "")
def test_docs_inline_commands_parse(doc, span, args, monkeypatch):
    """A command line written in the prose (`clusterbench results show 12`) parses as a code block's
    does; a command only named (`clusterbench import`) or a synopsis (`clusterbench coll OP`)
    names a command that exists, and every option it shows is one that command takes."""
    _check_span(span, args, monkeypatch)


def test_the_docs_show_inline_commands():
    assert len(INLINE) >= 40, "the docs' inline commands are no longer found: check _inline_commands"


# Options of other tools that the docs name in passing (nccl-tests, perftest, iperf3, vLLM,
# torchrun, Slurm (sbatch's own name of --procs-per-node), Open MPI, kubectl, BabelStream, rocblas-bench, pytest-benchmark, pip,
# systemctl, OSU, rccl-tests)
FOREIGN_OPTIONS = {
    "--a_type", "--append-result", "--benchmark-compare-fail", "--bidir", "--full", "--get-server-output",
    "--json-stream", "--label", "--local_addr", "--no-cache-dir", "--now", "--ntasks-per-node", "--out_json",
    "--parsable", "--prefix", "--quiet", "--rdzv_conf", "--report_gbits", "--save-result", "--tag-output", "--tail",
    "--timestamps", "--transA", "--transB", "--triad-only", "--output_format", "--validation",
}


def _all_options() -> set[str]:
    found: set[str] = set()

    def walk(cmd: click.Command) -> None:
        found.update(o for p in cmd.params for o in (*p.opts, *p.secondary_opts))
        if isinstance(cmd, click.Group):
            for sub in (all_commands() if cmd is cli else cmd.commands).values():
                walk(sub)
    walk(cli)
    return found


def _prose_options(text: str) -> set[str]:
    return {o for span in re.findall(r"`([^`]+)`", _prose(text))
            for o in re.findall(r"(?<![\w-])--[A-Za-z][\w-]*", span)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_options_named_in_prose_exist(doc):
    """An option the prose names (`--link-rate`) is one some clusterbench command takes, or another
    tool's that the docs name on purpose (FOREIGN_OPTIONS): a renamed option fails here."""
    unknown = sorted(_prose_options(doc.read_text()) - _all_options() - FOREIGN_OPTIONS)
    assert not unknown, f"{doc.name} names options no command takes: {unknown}"


def test_a_broken_example_fails(monkeypatch):
    """The checks above fail on what they exist to catch."""
    for bad in ("clusterbench coll all_reduce -b 1X", "clusterbench stream --float --dtype double",
                "clusterbench results show 12 --no-such-option", "clusterbench launch slurm -- coll nope"):
        with pytest.raises(UsageError):
            _check_span(bad, shlex.split(bad)[1:], monkeypatch)
    with pytest.raises(AssertionError, match="no option --no-such"):
        _check_span("clusterbench sweep --hosts a,... --no-such", ["sweep", "--hosts", "a,...", "--no-such"],
                    monkeypatch)
    with pytest.raises(AssertionError, match="not a clusterbench command"):
        _check_span("clusterbench resuls list", ["resuls", "list"], monkeypatch)
    with pytest.raises(UsageError, match="No such command 'shwo'"):
        _check_span("clusterbench results shwo 12", ["results", "shwo", "12"], monkeypatch)
    assert _prose_options("use `--no-such-option` here") - _all_options() == {"--no-such-option"}


# -- metrics: docs/metrics.md and the families ------------------------------------------------

METRICS_DOC = (ROOT / "docs" / "metrics.md").read_text()


def _unit_text(unit: str) -> str:
    return unit or '""'


def _metric_lines(text: str, name: str) -> list[str]:
    pat = re.compile(rf"`{re.escape(name)}`|\*\*{re.escape(name)}\*\*")
    return [line for line in text.splitlines() if pat.search(line)]


def _family_metrics() -> list[tuple[str, str, str]]:
    from clusterbench.families import FAMILIES
    return [(f.name, m.name, m.unit) for f in FAMILIES for m in f.metrics]


# The sweep family's records carry the unit of the test they rank nodes by (families/sweep.py)
_UNIT_OF_THE_TEST = {("sweep", "single"), ("sweep", "pair"), ("sweep", "node_score")}


def _metric_documented(text: str, family: str, name: str, unit: str) -> bool:
    units = [_unit_text(unit)] + (["the test's"] if (family, name) in _UNIT_OF_THE_TEST else [])
    return any(u in line for line in _metric_lines(text, name) for u in units)


@pytest.mark.parametrize(("family", "name", "unit"), _family_metrics(), ids=lambda a: a)
def test_every_metric_is_in_metrics_md_with_its_unit(family, name, unit):
    """Every metric a family declares is named in docs/metrics.md on a line that gives its unit
    (a table row, a definition bullet, an import row's `name` (unit))."""
    assert _metric_documented(METRICS_DOC, family, name, unit), \
        f"docs/metrics.md does not define {family} metric `{name}` with its unit {_unit_text(unit)}"


def _named_metrics(text: str) -> list[str]:
    """The metrics docs/metrics.md defines: first cells of tables headed `| metric |`, and
    definition bullets that give a unit (`- **busbw** (GB/s)`, `` - `bandwidth` (GB/s) ``)."""
    units = {_unit_text(unit) for _, _, unit in _family_metrics()}
    units |= {f"`{u}`" for u in units}
    names: list[str] = []
    in_table = False
    for line in text.splitlines():
        if line.startswith("| metric |"):
            in_table = True
            continue
        if in_table and line.startswith("|"):
            names += re.findall(r"`([a-z][a-z0-9_]*)`", line.split("|")[1])
            continue
        in_table = False
        m = re.match(r"- (?:\*\*|`)([a-z][a-z0-9_]*)(?:\*\*|`) \(([^);,]+)", line)
        if m and m.group(2) in units:   # `- **margin** (validate)` is a printed figure, not a record
            names.append(m.group(1))
    return names


def _telemetry_metrics() -> set[str]:
    """The metric names the telemetry samplers write (their string literals)."""
    src = ROOT / "src" / "clusterbench"
    text = "".join(p.read_text() for p in [*(src / "telemetry").glob("*.py"), src / "envinfo" / "gpulib.py"])
    return set(re.findall(r"\"((?:gpu|cpu|host)_[a-z_]+)\"", text))


def test_every_metric_metrics_md_defines_exists():
    known = {name for _, name, _ in _family_metrics()} | _telemetry_metrics()
    named = _named_metrics(METRICS_DOC)
    assert len(named) >= 40, "docs/metrics.md's definitions are no longer found: check _named_metrics"
    unknown = sorted(set(named) - known)
    assert not unknown, f"docs/metrics.md defines metrics no family or sampler records: {unknown}"


def test_the_metric_checks_fail_on_a_broken_doc():
    assert not _metric_documented("- **busbw**: algbw x factor", "collectives", "busbw", "GB/s")
    assert _metric_documented("- **busbw** (GB/s): algbw x factor", "collectives", "busbw", "GB/s")
    assert _named_metrics("| metric | unit |\n| --- | --- |\n| `bogus_metric` | GB/s |\n") == ["bogus_metric"]


# -- JSON lines: docs/json.md, the schema and report/jsonl.py ----------------------------------

JSON_DOC = (ROOT / "docs" / "json.md").read_text()


def _documented_kinds(text: str) -> set[str]:
    return set(re.findall(r"^### `([a-z_]+)`$", text, re.M))


def test_every_json_kind_is_in_json_md():
    from clusterbench.report.jsonl import KINDS, SCHEMA_PATH
    schema = json.loads(SCHEMA_PATH.read_text())
    assert set(schema["properties"]["kind"]["enum"]) == set(KINDS) == set(schema["$defs"])
    assert _documented_kinds(JSON_DOC) == set(KINDS), \
        f"docs/json.md's kinds differ: missing {set(KINDS) - _documented_kinds(JSON_DOC)}, " \
        f"unknown {_documented_kinds(JSON_DOC) - set(KINDS)}"
    assert _documented_kinds(JSON_DOC.replace("### `drain`", "### drain")) != set(KINDS)


def _json_commands() -> list[str]:
    out: list[str] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if path and any("--json" in p.opts for p in cmd.params):
            out.append(" ".join(path))
        if isinstance(cmd, click.Group):
            for name, sub in (all_commands() if cmd is cli else cmd.commands).items():
                walk(sub, [*path, name])
    walk(cli, [])
    return out


def test_every_json_command_is_in_json_md():
    """Every command that takes --json has a row in docs/json.md's "What each command prints"."""
    table = JSON_DOC.split("## What each command prints", 1)[1].split("\n## ", 1)[0]
    rows = {c.split(" --")[0] for row in table.splitlines() if row.startswith("| `")
            for c in re.findall(r"`([^`]+)`", row.split("|")[1])}
    missing = [c for c in _json_commands() if c not in rows]
    assert not missing, f"docs/json.md does not say what these print with --json: {missing}"


# -- links between the docs ------------------------------------------------------------------

def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in _prose(path.read_text()).splitlines() if line.startswith("#")]


def _broken_links(doc: Path, text: str) -> list[str]:
    """Relative links ([text](path#anchor)) that name no file or heading, repository paths in
    backticks or prose (`docs/store.md`, `tests/project/test_docs.py`) that do not exist, and section
    references (README, "Exit codes"; docs/metrics.md, section "Workloads") that name no heading."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path) if path else doc
        if not file.exists():
            broken.append(target)
        elif anchor and anchor not in {_anchor(h) for h in _headings(file)}:
            broken.append(target)
    # (src/ of another project, nccl-tests' src/common.cu, is not a path of this one)
    for path in re.findall(r"(?<![\w/.-])((?:docs|tests|src/clusterbench)/[\w./-]*\w|[A-Z]+\.md)\b", text):
        if not (ROOT / path).exists():
            broken.append(path)
    for name, section in re.findall(r"(README|[\w/-]+\.md)`?,? (?:section )?\"([^\"]+)\"", text):
        file = ROOT / ("README.md" if name == "README" else name)
        if not file.exists():
            file = ROOT / "docs" / name
        section = " ".join(section.split())
        if not file.exists() or not any(h == section or h.startswith(f"{section}:") for h in _headings(file)):
            broken.append(f'{name} "{section}"')
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_links_between_docs_resolve(doc):
    broken = _broken_links(doc, doc.read_text())
    assert not broken, f"{doc.name}: links to nothing: {broken}"


def test_a_broken_link_is_found():
    doc = ROOT / "docs" / "collectives.md"
    assert _broken_links(doc, "[x](metrics.md#no-such-section) [y](nope.md)") == [
        "metrics.md#no-such-section", "nope.md"]
    assert _broken_links(doc, "see `docs/nope.md` and README, \"No such part\"") == [
        "docs/nope.md", 'README "No such part"']
    assert not _broken_links(doc, "[x](metrics.md#collectives), README, \"Exit codes\"")


# -- lists of names: ops, dtypes, kernels, tools, commands, profiles -----------------------------
#
# A list the docs or a help text write out by hand names every op (tool, command, profile) the
# table holds and nothing else. Each list is found by the words around it; a list that is no
# longer found fails too, so an edit that rewords one is checked again, not skipped.

def _fold(text: str) -> str:
    return " ".join(text.split())


def _help_text(path: str) -> str:
    """What `clusterbench PATH --help` says, as written (before click wraps it): the command's
    help, its epilog and every option's help."""
    cmd, _ = _resolve(path.split())
    return "\n".join(t for t in (cmd.help, cmd.epilog, *(getattr(p, "help", None) for p in cmd.params)) if t)


def _text(where: str) -> str:
    if where == "clusterbench --help":   # the commands by workflow, each with its line
        from click.testing import CliRunner
        return CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    if where.startswith("clusterbench "):
        return _help_text(where.removeprefix("clusterbench ").removesuffix(" --help"))
    return (ROOT / where).read_text()


def _items(span: str, canon: Callable[[str], str | None]) -> list[str]:
    """The items of a written list: `a`, `b` and `c`; a, b or c; a/b/c; `a b c`. Asides in
    parentheses are left out; an item of several words is one name or a list of names."""
    span = re.sub(r"\([^()]*\)", "", span.replace("`", ""))
    items: list[str] = []
    for part in re.split(r"[,;/]|\band\b|\bor\b", span):
        part = part.strip().rstrip(".").strip()
        if not part:
            continue
        words = part.split()
        items += words if canon(part) is None and len(words) > 1 and all(canon(w) for w in words) else [part]
    return items


def _exact(names: Iterable[str]) -> Callable[[str], str | None]:
    known = set(names)
    return lambda item: item if item in known else None


def _importer_of(item: str) -> str | None:
    """The importer a list's item names: its tool or --tool alias, in any case, spaces for dashes
    (`TransferBench`, `vLLM serving results`, `iperf3 -J`); clusterbench's own --json lines are
    the clusterbench-jsonl importer's."""
    key = "-".join(item.lower().split())
    if key.startswith("clusterbench's-own"):
        key = "clusterbench-jsonl"
    for imp in IMPORTERS:
        if any(key == name or key.startswith(f"{name}-") for name in (imp.tool, *imp.aliases)):
            return imp.tool
    # the tool's first word alone, where it names one importer (`vLLM bench serve`)
    first = {imp.tool.split("-")[0]: imp.tool for imp in IMPORTERS}
    return first.get(key.split("-")[0]) if key.split("-")[0] != "clusterbench" else None


def _importers() -> set[str]:
    return {imp.tool for imp in IMPORTERS}


def _ops() -> tuple[str, ...]:
    return coll_spec.OPS


def _gather_type(split: bool) -> set[str]:
    return {op for op in coll_spec.OPS if coll_spec.SPECS[op].splits_count is split}


def _subcommands(group: str) -> list[str]:
    return list(all_commands()[group].commands)   # type: ignore[attr-defined]


def _profiles_with_a_suite() -> list[str]:
    return [name for name in builtin_profiles() if load_profile(name).suite]


@dataclass(frozen=True)
class NameList:
    where: str                            # a file of this checkout, or `clusterbench CMD --help`
    pattern: str                          # its group `list` is the list, in the text, white space folded
    names: Callable[[], Iterable[str]]    # every name the list must hold, and no other
    canon: Callable[[str], str | None] | None = None   # an item -> the name it is (None: no such name)
    start: bool = False                   # the list is the first names, in order, then "..."
    table: bool = False                   # `pattern` is a table's header row: the list, its first column

    @property
    def id(self) -> str:
        return f"{self.where}: {self.pattern[:40]}"


def _all_ops() -> tuple[str, ...]:
    return coll_spec.ALL_OPS


NAME_LISTS = [
    # ops clusterbench runs (families/collectives/spec.py OPS), and those it only imports
    NameList("README.md", r"\bOps: (?P<list>[^.]+)\.", _ops),
    NameList("docs/collectives.md", r"`OP` is (?P<list>.+?), a comma list of them", _ops),
    NameList("docs/metrics.md", r"Benchmark name = the op \((?P<list>[^)]+)\)", _ops),
    NameList("docs/metrics.md", r"rounded down; for (?P<list>[a-z_, ]+?) it is the per-rank count",
             lambda: _gather_type(True)),
    NameList("docs/metrics.md", r"`count x w` for (?P<list>[^;]+);", lambda: _gather_type(False)),
    NameList("docs/metrics.md", r"`count x n x w` for (?P<list>[^.]+)\.", lambda: _gather_type(True)),
    NameList("docs/collectives.md", r"rounded down; for (?P<list>[a-z_, ]+?) the per-rank count",
             lambda: _gather_type(True)),
    NameList("docs/import.md", r"the ops that split their buffer over n ranks: (?P<list>[^)]+)\)",
             lambda: [op for op in _all_ops() if coll_spec.SPECS[op].splits_count]),
    NameList("docs/architecture.md", r"\| collectives \| (?P<list>[^(|]+?) \(nccl-tests' others", _ops),
    NameList("docs/architecture.md", r"\(nccl-tests' others, (?P<list>[^|]+?), when imported\)",
             lambda: sorted(set(_all_ops()) - set(_ops())), canon=lambda item: item if item in _all_ops() else None),
    NameList("clusterbench coll --help", r"\bOps: (?P<list>[^.]+)\.", _ops),
    NameList("clusterbench run --help", r"every collective op \((?P<list>[^)]+)\)", _ops),
    # collective dtypes and reductions (DTYPES, DTYPE_SIZES, REDOPS)
    NameList("docs/collectives.md", r"\| `-d/--datatype` \| `(?P<list>[^`]+)`", lambda: coll_spec.DTYPES),
    NameList("docs/collectives.md", r"\| `-o/--op` \| reduction: `(?P<list>[^`]+)`", lambda: coll_spec.REDOPS),
    NameList("docs/architecture.md", r"`dtype` \(nccl-tests names: (?P<list>[^);]+)[);]",
             lambda: [t for t in coll_spec.DTYPE_SIZES if t not in coll_spec.DTYPE_ALIASES]),
    NameList("docs/architecture.md", r"`redop` \((?P<list>[^;]+);", lambda: coll_spec.REDOPS),
    NameList("clusterbench coll --help", r"^(?P<list>[^.]+?), or all \(comma lists", lambda: coll_spec.DTYPES),
    NameList("clusterbench coll --help", r"Reduction: (?P<list>[^.]+?), or all\.", lambda: coll_spec.REDOPS),
    # stream kernels (families/stream/spec.py) and GEMM dtypes (families/gemm/spec.py)
    NameList("README.md", r"clusterbench stream +# (?P<list>[^;]+);", lambda: stream_spec.NAMES),
    NameList("docs/architecture.md", r"`kernel` \((?P<list>[^)]+)\)", lambda: stream_spec.NAMES),
    NameList("clusterbench stream --help", r"BabelStream's (?P<list>.+?) kernels", lambda: stream_spec.NAMES),
    NameList("clusterbench stream --help", r"Comma list of (?P<list>.+?), or all\.", lambda: stream_spec.NAMES),
    NameList("clusterbench run --help", r"stream \(BabelStream's (?P<list>[^)]+)\)", lambda: stream_spec.NAMES),
    NameList("docs/architecture.md", r"`array_size` \(elements\), `dtype` \((?P<list>[^)]+)\)",
             lambda: stream_spec.DTYPES),
    NameList("docs/metrics.md", r"`array_size` in elements, `dtype` (?P<list>[^,]+),", lambda: stream_spec.DTYPES),
    NameList("docs/architecture.md", r"`dtype` \((?P<list>fp64[^)]+)\)", lambda: gemm_spec.DTYPES),
    NameList("docs/node-benchmarks.md", r"`baddbmm`\), dtypes (?P<list>.+?)\. A dtype the device",
             lambda: gemm_spec.DTYPES),
    NameList("docs/metrics.md", r"`dtype` (?P<list>fp64/[^,]+),", lambda: gemm_spec.DTYPES),
    NameList("clusterbench gemm --help", r"^(?P<list>fp64[^.]+?), a comma list", lambda: gemm_spec.DTYPES),
    # importers (ingest/*.py IMPORTERS) and the names --tool takes (ingest.TOOLS)
    NameList("docs/import.md", r"^\| tool \| what is read \|$", lambda: TOOLS, table=True),
    NameList("docs/import.md", r"unknown format: not the output of (?P<list>[^(]+?), \.\.\. \(use --tool",
             lambda: TOOLS, start=True),
    NameList("README.md", r"``` (?P<list>nccl-tests/rccl-tests .+? lines) \(`-` reads standard input\)", _importers,
             canon=_importer_of),
    NameList("clusterbench import --help", r"^Import (?P<list>.+? lines) \(PATH '-'", _importers, canon=_importer_of),
    # commands: a group's subcommands, the engines qualify --launch takes
    NameList("clusterbench results --help", r"^Stored runs: (?P<list>[^.]+)\.", lambda: _subcommands("results")),
    NameList("clusterbench launch --help", r"across nodes: (?P<list>[^.]+)\.", lambda: _subcommands("launch")),
    NameList("clusterbench --help", r"^  launch +A command across nodes: (?P<list>.+)$", lambda: _subcommands("launch")),
    NameList("clusterbench --help", r"^  results +Stored runs: (?P<list>.+)$", lambda: _subcommands("results")),
    NameList("docs/fleet.md", r"runs each step through `clusterbench launch` \((?P<list>[^)]+)\)",
             lambda: LAUNCH_ENGINES),
    NameList("clusterbench qualify --help", r"\(engines: (?P<list>[^)]+)\)",
             lambda: LAUNCH_ENGINES),
    # built-in profiles (data/profiles)
    NameList("docs/fleet.md", r"^\| profile \| suite \| time \|$", _profiles_with_a_suite, table=True),
    NameList("clusterbench validate --help", r"Built-in profile name \((?P<list>[^)]+)\)",
             builtin_profiles),
    NameList("clusterbench qualify --help", r"A profile with a suite: \((?P<list>[^)]+)\)", _profiles_with_a_suite),
]


def _table_column(text: str, header: str) -> str | None:
    """The first cells of the rows of the Markdown table whose header row matches ``header``, as
    a list; None when there is no such table."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(header, line)), None)
    if start is None:
        return None
    rows = [line for line in itertools.takewhile(lambda ln: ln.startswith("|"), lines[start + 2:])]
    return ", ".join(row.split("|")[1] for row in rows)


def _list_problems(check: NameList, text: str) -> list[str]:
    """What is wrong with the list ``check`` finds in ``text``: not found, a name it lacks, a name
    that does not exist."""
    if check.table:
        span = _table_column(text, check.pattern)
    else:
        m = re.search(check.pattern, text, re.M) or re.search(check.pattern, _fold(text))
        span = m and m.group("list")
    if span is None:
        return [f"{check.where}: the list /{check.pattern}/ is no longer found"]
    want = list(check.names())
    canon = check.canon or _exact(want)
    items = _items(span, canon)
    named = [canon(item) for item in items]
    problems = [f"{check.where}: {item!r} names none of {', '.join(want)}" for item, n in zip(items, named)
                if n not in want]
    if check.start:
        if [n for n in named if n] != want[:len(items)]:
            problems.append(f"{check.where}: {items} are not the first of {want}, in order")
    else:
        problems += [f"{check.where}: the list lacks {name}" for name in want if name not in named]
    return problems


@pytest.mark.parametrize("check", NAME_LISTS, ids=lambda c: c.id)
def test_every_list_of_names_in_the_docs_is_whole(check):
    """Each list of ops, dtypes, kernels, tools, commands or profiles that the docs and the help
    texts write by hand names every one the code's table holds, and only those."""
    assert _list_problems(check, _text(check.where)) == []


def _factors(span: str) -> dict[str, str]:
    """`2(n-1)/n` for all_reduce, `(n-1)/n` for all_gather and alltoall -> {op: factor}."""
    out = {}
    for m in re.finditer(r"`?(?P<f>[\dn()+\-/ ]*n[\dn()+\-/ ]*|1)`? for "
                         r"(?P<ops>[a-z_]+(?:(?:, | and )(?![`(\d])[a-z_]+)*)", span):
        for op in _items(m.group("ops"), _exact(_all_ops())):
            out[op] = m.group("f").strip()
    return out


def _arith(expr: str, n: int) -> float:
    """The value of a factor as the docs write it (`2(n-1)/n`) for ``n`` ranks: numbers, n and
    + - * /, nothing else."""
    tree = ast.parse(re.sub(r"(?<=[\dn)])\s*(?=\()", "*", expr.strip("() ") if expr.count("(") != expr.count(")")
                            else expr), mode="eval")

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id == "n":
            return n
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = value(node.left), value(node.right)
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(node.op), a / b if b else math.nan)
        raise ValueError(f"not a factor: {expr!r}")
    return value(tree)


# (where, the span that states bus factors, the ops it must give a factor for)
FACTOR_STATEMENTS = [
    ("docs/metrics.md", r"factor (?P<list>`2\(n-1\)/n` for .+?)\. It is comparable", _ops),
]


def _factor_problems(where: str, pattern: str, ops: Callable[[], Iterable[str]], text: str) -> list[str]:
    m = re.search(pattern, _fold(text))
    if m is None:
        return [f"{where}: the bus factors /{pattern}/ are no longer found"]
    stated = _factors(m.group("list"))
    specs = coll_spec.SPECS
    problems = [f"{where}: no factor for {op}" for op in ops() if op not in stated]
    problems += [f"{where}: {op}'s factor {f} is not the table's" for op, f in stated.items()
                 if any(not math.isclose(_arith(f, n), specs[op].busbw_factor(n)) for n in (2, 3, 8))]
    return problems


@pytest.mark.parametrize(("where", "pattern", "ops"), FACTOR_STATEMENTS, ids=[w for w, _, _ in FACTOR_STATEMENTS])
def test_bus_factors_the_docs_state_are_the_tables(where, pattern, ops):
    assert _factor_problems(where, pattern, ops, _text(where)) == []


# (where, the span that gives each kernel's arrays moved): every kernel, with the table's count
KERNEL_ARRAYS = [
    ("docs/metrics.md", r"arrays = (?P<list>Copy .+?): the arrays the kernel as run"),
    ("docs/node-benchmarks.md", r"as BabelStream: (?P<list>Copy .+?)\. Bandwidth uses"),
]


def _arrays_problems(where: str, pattern: str, text: str) -> list[str]:
    m = re.search(pattern, _fold(text))
    if m is None:
        return [f"{where}: the kernels' arrays /{pattern}/ are no longer found"]
    problems = []
    for kernel in stream_spec.KERNELS:
        stated = re.search(rf"\b{kernel.name}\b(?: `[^`]*`)? \(?(\d+)", m.group("list"))
        if stated is None:
            problems.append(f"{where}: no count of arrays for {kernel.name}")
        elif int(stated.group(1)) != kernel.arrays:
            problems.append(f"{where}: {kernel.name} moves {kernel.arrays} arrays, not {stated.group(1)}")
    return problems


@pytest.mark.parametrize(("where", "pattern"), KERNEL_ARRAYS, ids=[w for w, _ in KERNEL_ARRAYS])
def test_arrays_the_docs_give_each_kernel_are_the_tables(where, pattern):
    assert _arrays_problems(where, pattern, _text(where)) == []


def test_imported_tools_table_names_every_importer():
    """docs/metrics.md's table of imported tools has a row for every importer (clusterbench's own
    lines carry canonical units and need none)."""
    column = _table_column(_text("docs/metrics.md"), r"^\| tool \| records \| conversion \|$")
    assert column is not None, "docs/metrics.md's table of imported tools is no longer found"
    named = {_importer_of(item) for item in _items(column, _importer_of)}
    assert _importers() - {"clusterbench-jsonl"} <= named, sorted(_importers() - named)


def test_help_lists_every_command():
    """`clusterbench --help` lists every command module (a module that fails to import would drop
    its command from the list without a word)."""
    from click.testing import CliRunner
    out = CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    listed = re.findall(r"^  ([a-z][a-z-]*)  +\S", out.split("Start here:", 1)[1], re.M)
    modules = {p.stem for p in (ROOT / "src" / "clusterbench" / "cli" / "commands").glob("*.py") if p.stem != "__init__"}
    assert sorted(listed) == sorted("import" if m == "importcmd" else m.replace("_", "-") for m in modules)


def _broken(check: NameList, text: str, edit: Callable[[str], str]) -> list[str]:
    """The problems an edit of a doc brings to ``check``'s list: those of the edited text that the
    text as it is does not have (so the cases below hold while the docs change)."""
    edited = edit(text)
    assert edited != text, "the edit found nothing to change"
    before = _list_problems(check, text)
    return [p for p in _list_problems(check, edited) if p not in before]


def test_a_broken_list_fails():
    """The list checks fail on a doc that lacks a name, names one that does not exist, or no
    longer holds the list."""
    ops = next(c for c in NAME_LISTS if c.where == "README.md" and "Ops" in c.pattern)
    readme = _text("README.md")
    last = f", {_ops()[-1]}."
    assert _broken(ops, readme, lambda t: t.replace(last, ".")) == [f"README.md: the list lacks {_ops()[-1]}"]
    assert _broken(ops, readme, lambda t: t.replace(last, f"{last[:-1]}, allgatherv.")) == [
        "README.md: 'allgatherv' names none of " + ", ".join(_ops())]
    assert _broken(ops, readme, lambda t: t.replace("Ops: ", "The ops: ")) == [
        f"README.md: the list /{ops.pattern}/ is no longer found"]
    others = next(c for c in NAME_LISTS if "when imported" in c.pattern)   # an op, but not one of these
    assert _broken(others, _text("docs/architecture.md"), lambda t: t.replace("others, ", f"others, `{_ops()[0]}`, ")) == [
        f"docs/architecture.md: '{_ops()[0]}' names none of " + ", ".join(others.names())]
    tools = next(c for c in NAME_LISTS if c.where == "docs/import.md" and c.table)
    doc = _text("docs/import.md")
    row = next(line for line in doc.splitlines() if line.startswith("| `osu` |"))
    assert _broken(tools, doc, lambda t: t.replace(row + "\n", "")) == ["docs/import.md: the list lacks osu"]
    (unknown,) = _broken(tools, doc, lambda t: t.replace("| `osu` |", "| `osu`, `mlperf` |"))
    assert unknown.startswith("docs/import.md: 'mlperf' names none of")
    prose = next(c for c in NAME_LISTS if c.where == "README.md" and c.canon is _importer_of)
    assert _broken(prose, readme, lambda t: t.replace("TransferBench, BabelStream,", "BabelStream,")) == [
        "README.md: the list lacks transferbench"]
    profiles = next(c for c in NAME_LISTS if c.where == "docs/fleet.md" and c.table)
    (renamed, lacks) = _broken(profiles, _text("docs/fleet.md"), lambda t: t.replace("| `cpu-smoke` |", "| `cpu-smoke-2` |"))
    assert renamed.startswith("docs/fleet.md: 'cpu-smoke-2' names none of") and lacks.endswith("lacks cpu-smoke")
    subs = next(c for c in NAME_LISTS if c.where == "clusterbench results --help")
    assert _broken(subs, "Stored runs: list, show, export, delete, tag, copy.", lambda t: t.replace(", copy", "")) == [
        "clusterbench results --help: the list lacks copy"]
    factors = FACTOR_STATEMENTS[0]
    metrics = _text("docs/metrics.md")
    assert _factor_problems(*factors, metrics) == []
    wrong = _factor_problems(*factors, metrics.replace("`(n-1)/n` for all_gather", "`n/(n-1)` for all_gather"))
    assert wrong[0] == "docs/metrics.md: all_gather's factor n/(n-1) is not the table's"
    assert all(w.endswith("'s factor n/(n-1) is not the table's") for w in wrong)
    assert _factor_problems(*factors, metrics.replace(", reduce and sendrecv", " and reduce")) == [
        "docs/metrics.md: no factor for sendrecv"]
    assert _arrays_problems(*KERNEL_ARRAYS[0], metrics.replace("Add 3,", "Add 2,")) == [
        "docs/metrics.md: Add moves 3 arrays, not 2"]
