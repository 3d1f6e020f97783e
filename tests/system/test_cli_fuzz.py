"""Hostile values for every option and argument of every command (tests/helpers/cli_fuzz.py, a seeded
sample here), and the bugs that fuzzing found, one test each: every bad value ends with one
error line and exit 2, never an "internal error", a hang, or a run stored by a failed command.

The whole fuzz: ``python tests/helpers/cli_fuzz.py`` (minutes; ``--only 'results show'`` for one command).
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest
from cli_fuzz import MEASURING, NO_END, Case, build_db, cases, findings, make_files, run_case
from paths import DATA

from clusterbench.errors import UsageError
from clusterbench.textfile import read_user_text

SEED = 20251126
SAMPLE = 150
# Left out of the sample: commands that measure (seconds each), serve or reach other hosts, and
# report, whose module other work changes; each has targeted tests of its own.
SKIP = MEASURING | NO_END | {"report"}


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("fuzz")
    template = work / "template.db"
    build_db(template)
    return template, work


def _run(fuzz: tuple[Path, Path], *argv: str, timeout: float = 20) -> tuple[int | None, str, int]:
    """A command in a forked child with a fresh copy of the database: (exit code or None on a
    hang, its stdout and stderr, runs stored)."""
    template, work = fuzz
    r = run_case(Case(argv[0], "", "", list(argv), False), template, work, timeout)
    bad = [b for b in findings(r, timeout) if not b.startswith("exit 0 for")]
    assert not bad, (argv, bad, r.err)
    return r.rc, r.out + r.err, r.runs_after - r.runs_before


def _refused(fuzz: tuple[Path, Path], *argv: str, words: str = "") -> str:
    rc, err, stored = _run(fuzz, *argv)
    assert rc == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), (argv, rc, err)
    assert "internal error" not in err and words in err, (argv, err)
    assert stored == 0, argv
    return err


def test_a_seeded_sample_of_hostile_values_for_every_command(fuzz):
    template, work = fuzz
    pool = [c for c in cases() if c.command not in SKIP]
    sample = random.Random(SEED).sample(pool, min(SAMPLE, len(pool)))
    bad = []
    for case in sample:
        r = run_case(case, template, work, 20)
        if found := findings(r, 20):
            bad.append(f"{case.command} {case.param}={case.value[:40]!r}: {', '.join(found)}: {r.err[-300:]!r}")
    assert not bad, "\n".join(bad)


def test_every_command_has_a_minimal_invocation():
    missing = sorted({c.command for c in cases() if c.param == "<no base>"})
    assert not missing, f"add these to cli_fuzz.BASE: {missing}"


# -- selectors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("selector", ["9" * 5000, "0" * 5000 + "9" * 20, "1.." + "9" * 5000, "last~" + "9" * 5000])
def test_a_run_id_of_thousands_of_digits_is_out_of_range(fuzz, selector):
    # int() refuses more than 4300 digits with a ValueError of its own
    for argv in (["results", "show", selector], ["compare", selector, "1"], ["env", "diff", selector, "1"]):
        _refused(fuzz, *argv, "--db", "{db}", words="out of range")


def test_leading_zeros_still_name_the_run(fuzz):
    rc, err, _ = _run(fuzz, "results", "show", "0" * 5000 + "1", "--db", "{db}")
    assert rc == 0, err


def test_a_digit_int_cannot_read_is_not_a_run_id(fuzz):
    _refused(fuzz, "results", "show", "²", "--db", "{db}", words="is not a run id")


@pytest.mark.parametrize("argv", [["results", "show", "k=\udcff"], ["results", "show", "bench:\udcff"],
                                  ["results", "list", "--benchmark", "\udcff"],
                                  ["compare", "env=a", "env=\udcff"]])
def test_selectors_with_bytes_that_are_not_utf8_are_refused(fuzz, argv):
    _refused(fuzz, *argv, "--db", "{db}", words="not UTF-8 text")


# -- file names ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["results", "list", "--db", "a\x00b"],
    ["results", "copy", "--from", "{db}", "--to", "a\x00b"],
    ["results", "list", "--db", "{db}", "--db-passfile", "a\x00b"],
    ["baseline", "create", "1", "-o", "a\x00b", "--db", "{db}"],
    ["import", "a\x00b", "--db", "{db}"],
    ["preflight", "--root", str(DATA / "sysfs" / "h100-node"), "--kernel-log", "a\x00b"],
    ["validate", "1", "--profile", "amd-mi300x-oem", "--junit", "a\x00b", "--db", "{db}"],
])
def test_a_nul_in_a_file_name_is_a_usage_error(fuzz, argv):
    _refused(fuzz, *argv, words="NUL character")


@pytest.mark.parametrize("db", ["9" * 5000, "{tmp}/" + "9" * 300 + "/x.db"])
def test_a_database_name_too_long_is_a_usage_error(fuzz, db):
    for argv in (["results", "list", "--db", db], ["results", "copy", "--from", db, "--to", "{tmp}/x.db"],
                 ["results", "copy", "--from", "{db}", "--to", db]):
        _refused(fuzz, *argv, words="File name too long")


@pytest.mark.parametrize("db, kind", [("{tmp}/fifo", "a FIFO"), ("/dev/zero", "a device")])
def test_a_database_that_is_not_a_file_is_refused_before_sqlite_makes_a_journal_beside_it(fuzz, db, kind):
    for argv in (["results", "list"], ["import", str(DATA / "nccl-tests" / "superbench-nccl_allreduce.log")]):
        _refused(fuzz, *argv, "--db", db, words=f"is {kind}, not a database file")


def _hang(signum: int, frame: object) -> None:
    raise TimeoutError("still reading after 10 s")


def test_user_text_from_a_device_or_a_fifo_with_no_writer_never_waits(tmp_path):
    make_files(tmp_path)
    fds = len(os.listdir("/proc/self/fd"))
    old = signal.signal(signal.SIGALRM, _hang)
    try:
        for path, words in (("/dev/zero", "a device"), (tmp_path / "adir", "Is a directory")):
            signal.alarm(10)  # before: read() of /dev/zero went on for ever
            with pytest.raises(UsageError, match=words):
                read_user_text(path, "--topology")
        signal.alarm(10)  # before: open() waited for a writer for ever
        assert read_user_text(tmp_path / "fifo", "--topology") == ""
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert len(os.listdir("/proc/self/fd")) == fds
    assert read_user_text(tmp_path / "bad.yaml", "x").startswith("a: [1, 2")


def test_user_text_from_a_pipe_is_read_to_its_end():
    # --hostfile <(scontrol show hostnames): the shell passes /dev/fd/N, a pipe
    read, write = os.pipe()
    try:
        os.write(write, b"gpu01 slots=8\ngpu02 slots=8\n")
        os.close(write)
        assert read_user_text(f"/dev/fd/{read}", "hostfile") == "gpu01 slots=8\ngpu02 slots=8\n"
    finally:
        os.close(read)


def test_a_fifo_as_topology_or_transfer_config_is_refused(fuzz):
    _refused(fuzz, "sweep", "--hosts", "a,b", "--topology", "{tmp}/fifo", "--db", "{db}", words="no leaf switch")
    _refused(fuzz, "transfer", "--config", "{tmp}/fifo", "--device", "cpu", "--db", "{db}",
             words="no transfer tests")


@pytest.mark.parametrize("log", ["/dev/zero", "/dev/full"])
def test_a_device_as_kernel_log_is_refused_instead_of_read_forever(fuzz, log):
    _refused(fuzz, "preflight", "--root", str(DATA / "sysfs" / "h100-node"), "--kernel-log", log,
             words="a device")


# -- one command each ---------------------------------------------------------------------------

@pytest.mark.parametrize("addr", ["9" * 70, "\udcff", "\u202e"])
def test_serve_metrics_refuses_an_address_no_socket_can_encode(fuzz, addr):
    _refused(fuzz, "serve-metrics", "--port", "1", "--addr", addr, "--db", "{db}",
             words="is not a host name or address")


@pytest.mark.parametrize("n", ["501", "99999999999999999999999"])
def test_trend_min_runs_is_bounded_where_the_p_value_floor_overflows(fuzz, n):
    _refused(fuzz, "trend", "--min-runs", n, "--db", "{db}", words="from 2 to 500")


def test_trend_min_runs_500_still_works(fuzz):
    rc, err, _ = _run(fuzz, "trend", "--min-runs", "500", "--db", "{db}")
    assert rc == 0 and "at least 1000 runs are needed" in err, err


@pytest.mark.parametrize("agent, words", [(" ", "empty"), ('"ssh', "No closing quotation"),
                                          ("ssh\n", "control character")])
def test_sweep_refuses_an_agent_that_is_no_command(fuzz, agent, words):
    _refused(fuzz, "sweep", "--hosts", "a,b", "--agent", agent, "--db", "{db}", words=words)


@pytest.mark.parametrize("junit", ["{tmp}/missing/x.xml", "{tmp}/fifo", "/dev/null"])
def test_an_unwritable_junit_is_refused_before_sweep_or_qualify_runs_anything(fuzz, junit):
    # before: every subset ran (here: failed to reach hosts a and b) and was stored, then exit 2
    _refused(fuzz, "sweep", "--hosts", "a,b", "--junit", junit, "--db", "{db}", words="cannot write --junit")
    _refused(fuzz, "qualify", "--profile", "cpu-smoke", "--no-preflight", "--junit", junit, "--db", "{db}",
             words="cannot write --junit")
