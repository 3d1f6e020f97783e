"""Shared fixtures, and the line between the two tiers.

``tests/system/`` holds the tests that start processes (ranks, the CLI as a child, mpirun, Slurm,
servers, network namespaces); everything else is a unit test and may not start a process: a unit
test that does fails, naming what it started, so the fast tier (``make check``, ``-m "not system"``)
stays fast and needs no root, no server and no ranks.
"""

import multiprocessing.process
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HELPERS = Path(__file__).resolve().parent / "helpers"
sys.path.insert(0, str(HELPERS))
# the shared helpers' asserts say what they compared, as a test's own do
pytest.register_assert_rewrite(*sorted(p.stem for p in HELPERS.glob("*.py")))

from host_doubles import H100, MI300X  # noqa: E402
from judge_helpers import coll_rows, save, save_seed_logs  # noqa: E402
from pg_fixtures import pg_server_or_skip  # noqa: E402
from stored_runs import save_selector_runs  # noqa: E402

import clusterbench.store.store as store_module  # noqa: E402
from clusterbench.ingest import jsonl_parallel, nccl_parallel  # noqa: E402

SYSTEM = Path(__file__).resolve().parent / "system"

# A suite started in the background of a script (`cmd &`: SIGINT and SIGQUIT ignored) or under
# nohup (SIGHUP ignored) passes those dispositions to every process it starts, and a test that
# signals a command would wait on one that cannot hear the signal: the dispositions a terminal
# gives are restored (a handler here is the default again in each command it starts).
for _sig, _handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL),
                       (signal.SIGHUP, signal.SIG_DFL)):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, _handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SYSTEM in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.system)


class _ProcessGuard:
    """Refuses to start a process while a unit test runs (and remembers it, in case the code under
    test catches the refusal)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.active = False

    def refuse(self, what: str) -> None:
        if self.active and os.getpid() == self.pid:
            self.started.append(what)
            raise ProcessInUnitTest(f"a unit test started a process ({what}): it belongs in tests/system/")

    def install(self) -> None:
        guard = self
        execute_child = subprocess.Popen._execute_child
        fork, start = os.fork, multiprocessing.process.BaseProcess.start
        system = os.system
        spawns = {n: getattr(os, n) for n in ("posix_spawn", "posix_spawnp") if hasattr(os, n)}

        def _execute_child(self, args, *a, **k):
            program = str(args[0] if isinstance(args, (list, tuple)) else args)
            if os.path.basename(program.split()[0]) not in _LOOKUPS:
                guard.refuse(program)
            return execute_child(self, args, *a, **k)

        def _fork():
            guard.refuse("os.fork")
            return fork()

        def _start(self):
            guard.refuse(f"multiprocessing {self.name}")
            return start(self)

        def _system(command):
            guard.refuse(f"os.system {command}")
            return system(command)

        subprocess.Popen._execute_child = _execute_child
        os.fork = _fork
        os.system = _system
        multiprocessing.process.BaseProcess.start = _start
        for name, fn in spawns.items():
            def _spawn(path, *a, _fn=fn, **k):
                guard.refuse(f"{_fn.__name__} {path}")
                return _fn(path, *a, **k)
            setattr(os, name, _spawn)


# what ctypes.util.find_library runs to find a shared library (torch and NVML loaders ask it):
# a lookup in the linker cache, not a process a test depends on; and dmesg, which preflight's
# kernel log runs where /dev/kmsg cannot be read (a user who is not root): a read of the log;
# and fc-list, which matplotlib runs once to build its font cache where fontconfig is installed
# (a fresh machine's first plot)
_LOOKUPS = {"ldconfig", "dmesg", "fc-list"}


class ProcessInUnitTest(RuntimeError):
    pass


_GUARD = _ProcessGuard()
_GUARD.install()


@pytest.fixture(autouse=True)
def _no_process_in_a_unit_test(request):
    if request.node.get_closest_marker("system") or request.node.get_closest_marker("gpu"):
        yield
        return
    _GUARD.started, _GUARD.active, _GUARD.pid = [], True, os.getpid()
    try:
        yield
    finally:
        _GUARD.active = False
    if _GUARD.started:
        pytest.fail(f"a unit test started a process ({_GUARD.started[0]}): move it to tests/system/",
                    pytrace=False)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "results.db")


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the session (skips with the reason where none can run)."""
    yield from pg_server_or_skip()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.system)])
def any_db(request, tmp_path):
    """A fresh, empty results database on each backend: an SQLite path or a PostgreSQL URL (a
    system test: it needs the server)."""
    if request.param == "sqlite":
        yield str(tmp_path / "results.db")
        return
    server = request.getfixturevalue("pg_server")
    name = server.create_db()
    try:
        yield server.url(name)
    finally:
        server.drop_db(name)


@pytest.fixture
def seed_db(db):
    """The MI300X guide's own tool outputs (tests/data), imported into ``db`` with tag seed=mi300x."""
    return save_seed_logs(db)


@pytest.fixture
def stored(db):
    save(db, coll_rows(1.0, random.Random(5)), tags={"env": "a"})
    return db


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A copy of the H100 tree to change: the RoCE port of mlx5_1 is ens1f0np0 (100 Gb/s)."""
    root = tmp_path / "node"
    shutil.copytree(H100, root, symlinks=True)
    return root


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the stores opened from now on run (SQLite's trace callback)."""
    seen: list[str] = []
    real = store_module.connect

    def traced(where, readonly=False):
        backend = real(where, readonly)
        backend.conn.set_trace_callback(seen.append)
        return backend

    monkeypatch.setattr(store_module, "connect", traced)
    return seen


@pytest.fixture
def no_gpu_torch(monkeypatch):
    """A torch that sees no GPU, built for CUDA (PyPI's default wheel), on an MI300X node."""
    import torch

    from clusterbench.envinfo import torchcheck

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.version, "cuda", "12.6")
    monkeypatch.setattr(torch.version, "hip", None)
    real = torchcheck.evidence
    monkeypatch.setattr(torchcheck, "evidence", lambda root="/", use_libraries=True:
                        real(MI300X, use_libraries=False))
    monkeypatch.setattr(torchcheck, "rocm_version", lambda root="/": "6.2")
    for var in torchcheck.VISIBILITY_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def db_store_selectors(any_db):
    return any_db


@pytest.fixture
def store_store_selectors(db_store_selectors):
    """A store on each backend holding stored_runs.RUNS, which the selector tests pick from."""
    from clusterbench.store import Store

    with Store.open(db_store_selectors) as s:
        save_selector_runs(s)
        yield s


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(nccl_parallel, "PART_BYTES", 64 << 10)
    monkeypatch.setattr(nccl_parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(jsonl_parallel, "PART_BYTES", 2 << 10)
    monkeypatch.setattr(jsonl_parallel, "MIN_BYTES", 0)
