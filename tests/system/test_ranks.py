"""System tests (ranks): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
import rankfns
from paths import TESTS
from rankfns import run_rows

from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import Rows
from clusterbench.runner import run_job
from clusterbench.store import Store


def _steps(rows) -> list[int]:
    return [m.params["step"] for r in rows for m in r.measurements]


class _BrokenPrinter:
    def on_event(self, event) -> None:
        if isinstance(event, Rows):
            raise ValueError("cannot show this row")

    def finish(self, run, measurements) -> None:
        pass


def test_rows_rank0_recorded_before_it_exits_are_kept():
    outcome, rows = run_rows(rankfns.exit_after_rows, {"rank": 0, "rows": 2})
    assert outcome.status == "incomplete" and outcome.exit_code == 1
    assert outcome.errors[0].startswith("rank 0 on ") and "exited with code 3" in outcome.errors[0]
    assert _steps(rows) == [0, 1]


def test_a_rank_that_exits_with_code_0_early_is_said_so():
    outcome, _ = run_rows(rankfns.exit_after_rows, {"rank": 1, "rows": 1, "code": 0})
    assert outcome.status == "incomplete"
    assert outcome.errors == [outcome.errors[0]] and "rank 1 on " in outcome.errors[0]
    assert "before it finished" in outcome.errors[0]


def test_an_exception_whose_text_fails_is_still_named():
    outcome, _ = run_rows(rankfns.raise_unprintable, {"rank": 1})
    assert outcome.errors[0].startswith("rank 1 on ") and "UnprintableError" in outcome.errors[0]


def test_an_event_that_cannot_be_sent_fails_the_rank_that_sent_it():
    outcome, rows = run_rows(rankfns.send_unpicklable, {})
    assert outcome.status == "incomplete" and outcome.errors[0].startswith("rank 0 on ")
    assert "pickle" in outcome.errors[0].lower()
    assert rows == []


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_an_infinite_value_is_refused_in_the_rank_and_the_run_stored(tmp_path, value):
    db = str(tmp_path / "r.db")
    options = RankOptions(device="cpu", timeout=20.0, telemetry_interval=0)
    from clusterbench.report.terminal import TablePrinter

    res = run_job(Job(rankfns.record_value, {"value": value}, options, np=2), "selftest", ["t"],
                  TablePrinter(out=io.StringIO()), db=db)
    assert res.exit_code == 1 and res.run is not None and res.run.status == "incomplete"
    assert "rank 0 on " in res.run.errors[0] and "not a measurement" in res.run.errors[0]
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "incomplete" and [m.value for m in store.measurements(int(run.id))] == [1.0]


def test_a_printer_that_fails_does_not_lose_the_run(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    options = RankOptions(device="cpu", timeout=20.0, telemetry_interval=0)
    res = run_job(Job(rankfns.sum_ranks, {"steps": 2}, options, np=2), "selftest", ["t"], _BrokenPrinter(), db=db)
    assert res.exit_code == 1
    assert "internal error while printing: ValueError: cannot show this row" in capsys.readouterr().err
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "complete" and len(store.measurements(int(run.id))) == 2


def test_what_a_rank_prints_never_reaches_the_commands_stdout():
    code = ("from clusterbench.ranks.context import RankOptions\n"
            "from clusterbench.ranks.driver import Job, execute\n"
            "import rankfns\n"
            "o = execute(Job(rankfns.print_to_stdout, {}, RankOptions(device='cpu', timeout=20, "
            "telemetry_interval=0), np=2), lambda e: None)\n"
            "assert o.status == 'complete', o\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "helpers"), str(TESTS.parent / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "RANK-STDOUT-LINE" not in proc.stdout
    assert proc.stderr.count("RANK-STDOUT-LINE") == 2


def test_ranks_start_under_a_temporary_directory_too_deep_for_a_socket(tmp_path):
    """A TMPDIR deep enough that the fork server's socket path would pass the 107 bytes a Unix
    socket holds (a CI workspace): the ranks still start (was: internal error, AF_UNIX path too
    long), and nothing is left in that TMPDIR."""
    from clusterbench.ranks.local import SUN_PATH_MAX

    deep = tmp_path / ("d" * max(1, SUN_PATH_MAX - len(str(tmp_path)) - 10))
    deep.mkdir()
    env = {**os.environ, "TMPDIR": str(deep),
           "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    db = tmp_path / "r.db"
    p = subprocess.run([sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "8",
                        "-n", "2", "-w", "1", "--np", "2", "--device", "cpu", "--db", str(db)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "(complete) stored" in p.stderr and "AF_UNIX" not in p.stderr
    assert list(deep.iterdir()) == []
