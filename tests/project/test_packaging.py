"""Every module the tests and the package import is declared: the standard library, clusterbench,
a helper of the test tree, or a distribution that ``pip install -e '.[test]'`` brings (directly or
as a dependency of one). An undeclared import (scipy once) passes on a machine that happens to
have it and fails on a fresh one, so it is caught here, from the source, on any machine.

Imports guarded where they are made (``pytest.importorskip``, ``try: import x except ImportError``)
are optional by construction and need no declaration.
"""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from paths import HELPERS, ROOT, SRC, TESTS


def _project() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _declared(extra: str | None) -> set[str]:
    """Distribution names (normalised) that installing clusterbench[extra] brings, transitively,
    read from pyproject.toml (the installed metadata may be older than the file)."""
    project = _project()
    direct = list(project["dependencies"]) + (project["optional-dependencies"].get(extra, []) if extra else [])
    todo = [(Requirement(r), None) for r in direct]
    seen: set[str] = set()
    while todo:
        req, ext = todo.pop()
        env = {"extra": ext or ""}
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = _norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for r in requires:
            for e in [None, *req.extras]:
                todo.append((Requirement(r), e))
    return seen


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _guarded(tree: ast.AST) -> set[int]:
    """Line numbers of imports inside ``try`` blocks that catch ImportError."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if any("ImportError" in c or "ModuleNotFoundError" in c or c == "Exception" for c in caught):
                for inner in node.body:
                    for n in ast.walk(inner):
                        if isinstance(n, (ast.Import, ast.ImportFrom)):
                            lines.add(n.lineno)
    return lines


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    guarded = _guarded(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and node.lineno not in guarded:
            out += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.lineno not in guarded:
            out.append(((node.module or "").split(".")[0], node.lineno))
    return out


def _local_modules() -> set[str]:
    names = {"clusterbench", "tests", "conftest"}
    for base in (TESTS, HELPERS, ROOT / "benchmarks"):
        names |= {p.stem for p in base.glob("*.py")}
    return names


def _undeclared(files: list[Path], allowed: set[str]) -> list[str]:
    provides = metadata.packages_distributions()
    local = _local_modules()
    missing = []
    for path in files:
        for top, line in _imports(path):
            if not top or top in sys.stdlib_module_names or top in local:
                continue
            dists = {_norm(d) for d in provides.get(top, [])}
            if not dists & allowed:
                missing.append(f"{path.relative_to(ROOT)}:{line}: {top} "
                               f"({', '.join(sorted(dists)) or 'not installed here'})")
    return missing


def test_every_import_of_the_tests_is_declared_in_the_test_extra():
    files = [p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts]
    assert not _undeclared(files, _declared("test")), "add to [project.optional-dependencies] test"


def test_every_import_of_the_package_is_declared():
    """What clusterbench imports at module level is a dependency or comes with one of its extras
    (torch for the benchmark modules); the rest it imports where it is used, guarded."""
    files = list((SRC / "clusterbench").rglob("*.py"))
    top_level = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:   # module level only: lazy imports are each command's own
            if isinstance(node, ast.Import):
                top_level += [(path, a.name.split(".")[0], node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                top_level.append((path, (node.module or "").split(".")[0], node.lineno))
    provides = metadata.packages_distributions()
    base = set().union(*(_declared(e) for e in [None, *_project()["optional-dependencies"]]))
    bad = [f"{p.relative_to(ROOT)}:{line}: {top}" for p, top, line in top_level
           if top and top not in sys.stdlib_module_names and top != "clusterbench"
           and not {_norm(d) for d in provides.get(top, [])} & base]
    assert not bad
