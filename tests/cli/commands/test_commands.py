"""The CLI parses only (docs/architecture.md): no command module (nor the CLI's shared modules)
starts a process, manages a process group, opens a database or hashes and spools its input itself. Each module is read as
Python source (``ast``), so a way back in (an import, a call) fails here, naming file and line."""

import ast
from pathlib import Path

import pytest

import clusterbench.cli.commands as commands_pkg

COMMANDS = sorted(p for p in Path(commands_pkg.__file__).parent.glob("*.py") if p.name != "__init__.py")
# the CLI's own shared modules (entry point, option bundles, the benchmark tail, --on-fail) too
SHARED = sorted(Path(commands_pkg.__file__).parent.parent.glob("*.py"))

# Modules a command may not import: starting processes, database drivers, hashing an input.
FORBIDDEN_MODULES = {"subprocess", "multiprocessing", "pty", "concurrent", "sqlite3", "psycopg",
                     "psycopg2", "hashlib", "zlib", "gzip"}
# clusterbench's own modules that only the library below the CLI uses
FORBIDDEN_OWN = {"clusterbench.store.backend", "clusterbench.store.sqlite", "clusterbench.store.postgres"}
# Names of clusterbench.store a command must not import: the Store opens a database, connect() too.
FORBIDDEN_STORE_NAMES = {"Store", "connect"}
# os functions that start, signal or group processes
FORBIDDEN_OS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "setsid", "setpgid", "getpgid",
                "setpgrp", "waitpid", "wait", "posix_spawn", "posix_spawnp"}
FORBIDDEN_OS_PREFIXES = ("exec", "spawn")


def _os_forbidden(name: str) -> bool:
    return name in FORBIDDEN_OS or name.startswith(FORBIDDEN_OS_PREFIXES)


def violations(source: str, filename: str = "<source>") -> list[str]:
    """What in ``source`` does library work a command must leave to the library, one line each."""
    found: list[str] = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES or alias.name in FORBIDDEN_OWN:
                    found.append(f"{where}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            names = {a.name for a in node.names}
            if top in FORBIDDEN_MODULES or node.module in FORBIDDEN_OWN:
                found.append(f"{where}: from {node.module} import ...")
            elif node.module == "clusterbench.store" and names & FORBIDDEN_STORE_NAMES:
                found.append(f"{where}: from clusterbench.store import {', '.join(sorted(names & FORBIDDEN_STORE_NAMES))}")
            elif node.module == "os" and any(_os_forbidden(n) for n in names):
                found.append(f"{where}: from os import {', '.join(sorted(n for n in names if _os_forbidden(n)))}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "Store":
                found.append(f"{where}: Store.{node.attr}")
            elif node.value.id == "os" and _os_forbidden(node.attr):
                found.append(f"{where}: os.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "connect":
            found.append(f"{where}: connect(...)")
    return found


@pytest.mark.parametrize("path", COMMANDS + SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cli_module_leaves_processes_databases_and_hashing_to_the_library(path):
    assert violations(path.read_text(encoding="utf-8"), path.name) == []


def test_there_are_command_modules_to_check():
    """The modules read here are the ones every command of the CLI runs from."""
    from clusterbench.cli import all_commands
    ran_from = {cmd.callback.__module__ for cmd in all_commands().values() if cmd.callback is not None}
    assert ran_from and ran_from <= {f"{commands_pkg.__name__}.{p.stem}" for p in COMMANDS}
    assert {"__init__", "bench", "fleet", "options"} <= {p.stem for p in SHARED}


@pytest.mark.parametrize("source, what", [
    ("import subprocess\n", "import subprocess"),
    ("import multiprocessing.pool\n", "import multiprocessing.pool"),
    ("from subprocess import Popen\n", "from subprocess import ..."),
    ("import hashlib\n", "import hashlib"),
    ("from clusterbench.store import Store, describe\n", "from clusterbench.store import Store"),
    ("from clusterbench.store import connect\n", "from clusterbench.store import connect"),
    ("from clusterbench.store.sqlite import SqliteBackend\n", "from clusterbench.store.sqlite import ..."),
    ("with Store.open_to_read(db) as s:\n    pass\n", "Store.open_to_read"),
    ("Store.open(db).close()\n", "Store.open"),
    ("import os\nos.killpg(pid, 9)\n", "os.killpg"),
    ("import os\nos.execvp('x', ['x'])\n", "os.execvp"),
    ("from os import setsid\n", "from os import setsid"),
    ("db = connect(where)\n", "connect(...)"),
])
def test_each_way_back_in_is_caught(source, what):
    found = violations(source)
    assert len(found) == 1 and found[0].endswith(what), found


def test_what_a_command_may_do_is_not_caught():
    ok = ("import os\nimport sys\nimport tempfile\n"
          "from clusterbench.store import describe, default_db_path\n"
          "from clusterbench.store.runs import read_runs\n"
          "loaded = read_runs(db, ['last'])\n"
          "name = os.path.basename(path)\nmode = os.stat(path).st_mode\n")
    assert violations(ok) == []


def test_every_command_module_holds_the_command_named_after_it():
    # the CLI imports a module only when its command runs, finding it by this name
    import importlib
    import pkgutil

    from clusterbench.cli import commands

    for info in pkgutil.iter_modules(commands.__path__):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        expected = "import" if info.name == "importcmd" else info.name.replace("_", "-")
        assert [c.name for c in module.commands] == [expected], info.name
