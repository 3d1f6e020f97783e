"""What importing a clusterbench module loads, read from the source without importing anything:
the statements that run at import time (module level, class bodies, ``if``/``try``/``with``
blocks; not function bodies, not ``if TYPE_CHECKING:``), followed through clusterbench's own
modules and their packages' ``__init__``. The test process has long imported torch and the
rest, so ``sys.modules`` cannot say what one command's start-up needs; the source can.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from paths import SRC

PACKAGE = "clusterbench"


def _file(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(body: list[ast.stmt]):
    """The statements of ``body`` that run when it runs, nested blocks included."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        if isinstance(node, ast.If):
            if not _type_checking(node.test):
                yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _statements(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _statements(node.body)


@cache
def direct_imports(module: str) -> frozenset[str]:
    """The modules ``module`` imports when it is imported (full dotted names)."""
    path = _file(module)
    if path is None:
        return frozenset()
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _statements(ast.parse(path.read_text()).body):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base == "__future__":
                continue
            out.add(base)
            for a in node.names:   # `from clusterbench.report import junit`: a module itself
                if _file(f"{base}.{a.name}") is not None:
                    out.add(f"{base}.{a.name}")
    return frozenset(out)


def loaded_by(*modules: str) -> set[str]:
    """Every module importing ``modules`` loads: clusterbench's by their full names, the others
    (the standard library, third-party packages) by their top-level name."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):   # a module's packages are imported first
            mod = ".".join(parts[:i])
            if mod in seen:
                continue
            if parts[0] != PACKAGE:
                seen.add(parts[0])
                break
            seen.add(mod)
            todo.extend(direct_imports(mod))
    return seen
