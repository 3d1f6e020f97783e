"""Tests of clusterbench.cli.commands.transfer: ``clusterbench transfer``."""

from __future__ import annotations

import json
import math

import pytest
from bench_cli import cli
from cli_errors import one_error
from stored_runs import SWEEP

import clusterbench.ingest as ingest
from clusterbench.ingest.common import ImportedRun, new_run
from clusterbench.ingest.registry import Importer
from clusterbench.records import Measurement


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_an_infinite_value_from_a_parser_is_refused_by_name_before_the_store(capsys, tmp_path, monkeypatch, value):
    """The store refuses a value that is not finite; the import refuses the file first."""
    def parse(lines, name, head):
        yield ImportedRun(new_run("transferbench", name), [Measurement("transfer", "bandwidth", value, "GB/s")])

    db = tmp_path / "cb.db"
    monkeypatch.setitem(ingest._BY_TOOL, "transferbench", Importer("transferbench", None, parse))
    assert one_error(capsys, SWEEP, db) == f"malformed transferbench log: transfer bandwidth {value!r} is not a finite number"


@pytest.mark.parametrize("args,words", [
    (["--bytes", "0"], "positive multiple of 4"),
    (["--bytes", "-8"], "must be positive"),
    (["--bytes", "6"], "multiple of 4"),
    (["--test", "G0->G1"], "GPU 0 does not exist"),
    (["--test", "C0->Q0->C0"], "invalid executor"),
    (["--matrix", "p2p"], "needs GPUs"),
    (["--matrix", "x2y"], "unknown --matrix"),
    (["--config", "/nonexistent/x.cfg"], "cannot read --config"),
    (["--method", "magic"], "unknown --method"),
    (["--devices", "3"], "out of range"),
])
def test_bad_input(capsys, db, args, words):
    if "needs GPUs" in words and __import__("torch").cuda.is_available():
        pytest.skip("this host has GPUs")
    if "GPU 0 does not exist" in words and __import__("torch").cuda.is_available():
        pytest.skip("this host has GPUs")
    code, out, err = cli(capsys, "transfer", *args, "--db", db)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), err
    assert words in err and "Traceback" not in out + err


def test_a_config_that_is_not_utf8_is_one_line(capsys, db, tmp_path):
    cfg = tmp_path / "latin1.cfg"
    cfg.write_bytes(b"# caf\xe9\n1 1 (C0->C0->C0)\n")
    code, _, err = cli(capsys, "transfer", "--config", str(cfg), "--db", db)
    assert code == 2 and err == f"clusterbench: error: --config {cfg}: not UTF-8 text (byte 5)\n"


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_gpu_host_device_matrices(capsys, db):
    code, out, err = cli(capsys, "transfer", "--matrix", "h2d,d2h,p2p", "--method", "all",
                         "--bytes", "4M", "--iterations", "2", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["host_memory"] for r in rows if r["params"]["test"] == "h2d"} == {"pinned", "pageable"}
