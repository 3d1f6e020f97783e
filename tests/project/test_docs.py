"""The README and docs stay true: every command is documented, and every example in them parses."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path

import click
import pytest
from paths import ROOT

from clusterbench.cli import all_commands, cli
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError

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
