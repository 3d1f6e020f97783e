"""The README and docs stay true: every command is documented, and every example in them parses."""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from clusterbench.cli import all_commands, cli

ROOT = Path(__file__).resolve().parent.parent
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
    except click.BadParameter as e:
        if not re.search(r"'[/~][^']*' does not exist", e.format_message()):
            raise


def _parse(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    ctx = cli.make_context("clusterbench", list(args))
    cmd: click.Command = cli
    rest = _rest(ctx)
    while isinstance(cmd, click.Group) and rest:
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None, f"unknown command {name}"
        ctx = sub.make_context(name, list(rest), parent=ctx)
        cmd = sub
        rest = _rest(ctx) if isinstance(sub, click.Group) else []


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
