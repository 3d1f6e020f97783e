"""`results export --csv` read as a spreadsheet or a CSV reader would, and `export openmetrics`
read by the Prometheus text parser, an OpenMetrics parser and promtool: cells a reader would split
or a spreadsheet would evaluate, label names Prometheus gives a meaning, rows that differ only in
their rank, and the end of the file."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess

import pytest
from judge_helpers import cli

from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store

prom_text = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")
prom_om = pytest.importorskip("prometheus_client.openmetrics.parser", reason="prometheus-client (the metrics extra)")

BUSBW = "clusterbench_collectives_busbw_bytes_per_second"
TRANSFER = "clusterbench_transfer_bandwidth_bytes_per_second"


def _store(db: str, params: list[dict], benchmark: str = "all_reduce", metric: str = "busbw",
           hosts: tuple[str, ...] = ("gpu01",)) -> int:
    with Store.open(db) as s:
        return s.save_run(Run(benchmark, hosts=list(hosts), started_at="2026-03-01T02:00:00.000Z",
                              status="complete"),
                          [Measurement(benchmark, metric, 10.0 * (i + 1), "GB/s", p) for i, p in enumerate(params)])


def _csv_rows(out: str) -> list[dict[str, str]]:
    # newline="": the reader, not the text layer, decides where a row ends (as a file opened for csv)
    return list(csv.DictReader(io.StringIO(out, newline="")))


# -- CSV ----------------------------------------------------------------------------------------

def test_csv_quotes_a_carriage_return_so_the_row_stays_whole(capsys, db):
    rid = _store(db, [{"bytes": 8, "name": "left\rright"}, {"bytes": 16, "name": "plain"}])
    rc, out, err = cli(capsys, "results", "export", str(rid), "--csv", "--db", db)
    assert rc == 0, err
    rows = _csv_rows(out)
    assert [r["name"] for r in rows] == ["left\rright", "plain"]
    assert [r["bytes"] for r in rows] == ["8", "16"]
    assert out.endswith("\n") and "\r\n" not in out   # rows still end in a line feed


@pytest.mark.parametrize("text", ["=1+2", "+SUM(A1:A9)", "-2+3", "@cmd", "\t=x", "\r=y",
                                  '=HYPERLINK("http://x","y")', "-", "+"])
def test_csv_text_a_spreadsheet_would_evaluate_is_inert(capsys, db, text):
    rid = _store(db, [{"bytes": 8, "model": text, "root": -1, "sign": "-5", "exp": "+1.5e3"}])
    rc, out, err = cli(capsys, "results", "export", str(rid), "--csv", "--db", db)
    assert rc == 0, err
    (row,) = _csv_rows(out)
    assert row["model"] == "'" + text
    # numbers, and text that is a plain number, are numbers to a spreadsheet too: left alone
    assert (row["root"], row["sign"], row["exp"], row["value"]) == ("-1", "-5", "+1.5e3", "10.0")


def test_csv_header_from_a_param_name_is_inert_and_columns_follow_first_appearance(capsys, db):
    rid = _store(db, [{"bytes": 8, "=cmd|' /C calc'!A0": "x"}, {"bytes": 16, "dtype": "float"}])
    rc, out, err = cli(capsys, "results", "export", str(rid), "--csv", "--db", db)
    assert rc == 0, err
    header = next(csv.reader(io.StringIO(out, newline="")))
    assert header == ["run", "status", "benchmark", "metric", "value", "unit", "bytes",
                      "'=cmd|' /C calc'!A0", "dtype"]


def test_json_lines_keep_the_text_as_stored(capsys, db):
    rid = _store(db, [{"bytes": 8, "model": "=1+2", "name": "a\rb"}])
    rc, out, err = cli(capsys, "results", "export", str(rid), "--db", db)
    assert rc == 0, err
    first = json.loads(out.splitlines()[0])
    assert first["params"]["model"] == "=1+2" and first["params"]["name"] == "a\rb"


# -- OpenMetrics --------------------------------------------------------------------------------

def _om_families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_om.text_string_to_metric_families(text)}


def _text_families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_text.text_string_to_metric_families(text)}


def test_export_ends_with_eof_and_both_parsers_read_it(capsys, db):
    _store(db, [{"bytes": 8, "dtype": "float", "note": 'a "q"\\b\nc'}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    assert out.endswith("\n# EOF\n") and out.count("# EOF") == 1
    (om,) = _om_families(out)[BUSBW]
    (text,) = _text_families(out)[BUSBW]
    assert om.labels == text.labels and om.labels["note"] == 'a "q"\\b\nc' and om.value == 10e9


def test_export_of_nothing_is_eof_alone(capsys, db):
    _store(db, [{"bytes": 8}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--since", "2099-01-01", "--db", db)
    assert rc == 0, err
    assert out == "# EOF\n"
    assert _om_families(out) == {} and _text_families(out) == {}


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if os.path.exists(p)), None)


def test_le_and_quantile_params_are_not_gauge_labels(capsys, db):
    _store(db, [{"bytes": 8, "le": "0.5", "quantile": "p99"}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    (s,) = _text_families(out)[BUSBW]
    assert "le" not in s.labels and "quantile" not in s.labels
    assert (s.labels["param_le"], s.labels["param_quantile"]) == ("0.5", "p99")
    promtool = _which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    r = subprocess.run([promtool, "check", "metrics"], input=out, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_rows_that_differ_only_in_rank_are_series_of_their_own(capsys, db):
    base = {"test": "p2p", "bytes": 1024, "executor": "G0", "method": "gpu", "stat": "executor"}
    _store(db, [{**base, "rank": 0}, {**base, "rank": 1}], benchmark="transfer", metric="bandwidth",
           hosts=("gpu01", "gpu02"))
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    samples = _text_families(out)[TRANSFER]
    got = sorted((s.labels["host"], s.labels["rank"], s.value) for s in samples)
    assert got == [("gpu01", "0", 10e9), ("gpu01", "1", 20e9), ("gpu02", "0", 10e9), ("gpu02", "1", 20e9)]
    series = [tuple(sorted(s.labels.items())) for s in samples]
    assert len(series) == len(set(series))


def test_only_headline_rows_are_kept_without_a_profile_and_the_gauges_agree():
    run = Run("all_reduce", hosts=["gpu01"], started_at="2026-03-01T02:00:00.000Z", id=1)
    p = {"bytes": 8, "dtype": "float"}
    ms = [Measurement("all_reduce", "busbw", 1.0, "GB/s", p), Measurement("all_reduce", "algbw", 2.0, "GB/s", p),
          Measurement("all_reduce", "time_us", 3.0, "us", p)]
    kept = openmetrics.latest_rows([(run, ms)], openmetrics.is_headline)
    assert [r.row.m.metric for r in kept] == ["busbw"]
    every = openmetrics.latest_rows([(run, ms)])
    assert len(every) == 3
    (g,) = [g for g in openmetrics.collect([(run, ms)]) if g.name == BUSBW]
    assert list(g.samples.values()) == [1e9]
