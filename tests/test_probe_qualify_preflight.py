"""Probing ``qualify`` and ``preflight`` as an operator running acceptance tests does: a suite
stopped by a signal, a suite whose every step fails, the JUnit a CI system reads, kernel logs
given as a named pipe, as gigabytes of one line, or with non-fatal uncorrected AER reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path
from xml.etree import ElementTree as ET

import psutil
import pytest
from json_schema import check_lines
from judge_helpers import cli
from process_helpers import assert_all_gone, process_family, wait_until

from clusterbench.cli import all_commands
from clusterbench.errors import ClusterbenchError
from clusterbench.preflight import Expectations, kernel_log, run_checks
from clusterbench.preflight import checks as c
from clusterbench.ranks.signals import Interrupted
from clusterbench.records import INTERRUPTED
from clusterbench.store import Store

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")
DATA = Path(__file__).parent / "data"
SCHEMA = xmlschema.XMLSchema(str(DATA / "schemas" / "junit-10.xsd"))
H100 = DATA / "sysfs" / "h100-node"
STREAM_FLOOR = {"name": "stream floor", "benchmark": "stream", "metric": "bandwidth",
                "params": {"kernel": "Triad"}, "op": ">=", "value": 0.001, "unit": "GB/s"}
GEMM_FLOOR = {"name": "gemm floor", "benchmark": "gemm", "metric": "tflops", "op": ">=", "value": 1e-9}
SMALL_STREAM = ["stream", "--device", "cpu", "-s", "1K", "-n", "2"]


def _profile(tmp_path: Path, suite: list[dict], criteria: list[dict]) -> Path:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "suite": suite, "criteria": criteria}))
    return p


# -- qualify -------------------------------------------------------------------------------------

def test_sigterm_during_a_step_stops_the_suite(tmp_path):
    """A SIGTERM (a scheduler's time limit, systemd's stop, `timeout`) in a step stored that step
    as interrupted, and then the suite went on with every later step, ignoring further signals,
    and ended exit 1 as if a step had failed."""
    db = str(tmp_path / "q.db")
    profile = _profile(tmp_path, [
        {"name": "long", "command": ["stream", "--device", "cpu", "-s", "8M", "-n", "100000"]},
        {"name": "after", "command": SMALL_STREAM},
    ], [STREAM_FLOOR])
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "qualify", "--profile", str(profile),
                             "--db", db, "--no-preflight", "--json", "-o", str(tmp_path / "q.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the step's ranks run once the command has children (the fork server and its rank)
        wait_until(lambda: psutil.Process(proc.pid).children() or proc.poll() is not None, 120,
                   "the step's ranks started")
        assert proc.poll() is None and psutil.Process(proc.pid).children()
        family = process_family(proc)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:   # a test that fails, not one that leaves a suite running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 143, err
    assert "step 2/2" not in err and "Traceback" not in err, err
    assert "qualify interrupted by SIGTERM in step 1 of 2" in err.splitlines()[-1]
    steps = [d for d in check_lines(out) if d["kind"] == "step"]
    assert [(d["name"], d["exit"]) for d in steps] == [("long", 143)]
    with Store.open(db) as s:
        runs = s.list_runs()
    assert [r.status for r in runs] == [INTERRUPTED]
    assert_all_gone(family)


def _replace_callback(monkeypatch, command: str, fn) -> None:
    monkeypatch.setattr(all_commands()[command], "callback", fn)


def test_an_interrupt_outside_a_steps_run_stops_the_suite(capsys, db, tmp_path, monkeypatch):
    """A signal that reaches a step before its run handles signals (parsing, opening the store)
    became click's Abort, which qualify took for a failed step ("internal error: Abort") and went
    on with the suite."""
    def interrupted(**_kwargs):
        raise Interrupted(signal.SIGTERM)

    _replace_callback(monkeypatch, "gemm", interrupted)
    profile = _profile(tmp_path, [{"name": "g", "command": ["gemm", "--device", "cpu"]},
                                  {"name": "s", "command": SMALL_STREAM}], [STREAM_FLOOR])
    rc, _, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight",
                     "-o", tmp_path / "q.html")
    assert rc == 143, err
    assert "step 2/2" not in err and "internal error" not in err, err
    with Store.open(db) as s:
        assert s.list_runs() == []


def test_criteria_of_a_suite_whose_every_step_failed_are_reported_skipped(capsys, db, tmp_path, monkeypatch):
    """Every step failed, nothing was measured: the criteria vanished from the JSON lines and the
    JUnit (an empty `validate` suite), where a CI page must show each one as not judged."""
    def broken(**_kwargs):
        raise ClusterbenchError("the benchmark broke")

    _replace_callback(monkeypatch, "stream", broken)
    xml = tmp_path / "q.xml"
    profile = _profile(tmp_path, [{"name": "s", "command": SMALL_STREAM}], [STREAM_FLOOR, GEMM_FLOOR])
    rc, out, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight", "--json",
                       "--junit", xml, "-o", tmp_path / "q.html")
    assert rc == 1, err
    lines = check_lines(out)
    crit = [d for d in lines if d["kind"] == "criterion"]
    assert [(d["criterion"], d["status"]) for d in crit] == [("stream floor", "skipped"), ("gemm floor", "skipped")]
    assert lines[-1]["counts"]["skipped"] == 2 and lines[-1]["failed_steps"] == 1
    SCHEMA.validate(str(xml))
    suites = {s.get("name"): s for s in ET.parse(xml).getroot().findall("testsuite")}
    validate = suites["validate probe"]
    assert validate.get("tests") == "2" and validate.get("skipped") == "2"
    assert suites["qualify probe steps"].get("errors") == "1"


def test_the_junit_steps_suite_has_the_time_its_steps_took(capsys, db, tmp_path):
    """The steps' suite said time="0.000" however long the steps ran."""
    xml = tmp_path / "q.xml"
    profile = _profile(tmp_path, [{"name": "s1", "command": SMALL_STREAM},
                                  {"name": "s2", "command": SMALL_STREAM}], [STREAM_FLOOR])
    rc, _, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight",
                     "--junit", xml, "-o", tmp_path / "q.html")
    assert rc == 0, err
    SCHEMA.validate(str(xml))
    steps = next(s for s in ET.parse(xml).getroot().findall("testsuite") if s.get("name") == "qualify probe steps")
    cases = [float(tc.get("time")) for tc in steps.findall("testcase")]
    assert len(cases) == 2 and all(t > 0 for t in cases)
    assert float(steps.get("time")) == pytest.approx(sum(cases), abs=0.002)


# -- preflight -----------------------------------------------------------------------------------

def test_uncorrected_non_fatal_aer_is_not_reported_as_fatal():
    """`Uncorrected (Non-Fatal)` holds the word `Fatal`: the evidence said `Uncorrected (Fatal)`."""
    log = ("[ 31.0] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0\n"
           "[ 31.1] nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
           "Layer, (Requester ID)\n"
           "[ 32.0] pcieport 0000:80:01.0: AER: Uncorrected (Fatal) error received: 0000:81:00.0\n")
    found = [(f.severity, f.device, f.detail) for f in kernel_log.parse(log)]
    assert found == [("fail", "0000:01:00.0", "Uncorrected (Non-Fatal)"),
                     ("fail", "0000:01:00.0", "Uncorrected (Non-Fatal)"),
                     ("fail", "0000:81:00.0", "Uncorrected (Fatal)")]


def test_a_named_pipe_as_kernel_log_is_read_not_waited_on_forever(tmp_path):
    """`mkfifo k; journalctl -k > k & clusterbench preflight --kernel-log k`: the pipe was opened
    once to look at it (taking the writer's data) and again to read it, waiting for a writer that
    never came."""
    fifo = tmp_path / "kmsg.fifo"
    os.mkfifo(fifo)

    def writer() -> None:
        try:
            with open(fifo, "w") as f:   # waits for the reader
                f.write("[ 9.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
        except OSError:   # the reader went away before the write (as the bug did)
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        done = subprocess.run([sys.executable, "-m", "clusterbench", "preflight", "--root", str(H100),
                               "--kernel-log", str(fifo), "--json"],
                              capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "w"):   # let the waiting reader go
            pass
        pytest.fail("preflight waited forever on a named pipe given as --kernel-log")
    kl = next(d for d in check_lines(done.stdout) if d["kind"] == "check" and d["check"] == "kernel_log")
    assert kl["status"] == c.FAIL and "Xid 79" in " ".join(kl["evidence"]), done.stderr


def test_a_huge_kernel_log_is_not_held_in_memory(tmp_path):
    """A saved log was read whole and split into lines: several times its size in memory (a
    200 MB file took 950 MB), so a kern.log of gigabytes ended the node's preflight."""
    big = tmp_path / "kern.log"
    xid = b"[ 9.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    with open(big, "wb") as f:
        f.write(xid)
        f.truncate(64 << 20)   # 64 MiB of NULs, one endless "line" (sparse: no disk)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + xid)
    tracemalloc.start()
    try:
        res = {r.check: r for r in run_checks(Expectations(), root=H100, log_path=big)}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res["kernel_log"].status == c.FAIL and "2 x xid Xid 79 on 0000:18:00" in res["kernel_log"].evidence
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a 64 MiB log"


@pytest.mark.parametrize("option", ["--junit", "--kernel-log"])
def test_an_empty_file_name_is_refused(capsys, option):
    """`--junit "$JUNIT_FILE"` with the variable unset wrote nothing and exited as if it had."""
    rc, out, err = cli(capsys, "preflight", "--root", H100, option, "")
    assert rc == 2 and out == "", err
    assert err.strip() == f"clusterbench: error: {option}: an empty file name"
