"""report.csvout: stored measurements as CSV, read back by the csv module, cells inert."""

import csv
import io

from clusterbench.records import Measurement, Run
from clusterbench.report.csvout import csv_cell, csv_param_columns, inert, write_csv


def test_columns_cells_and_rows_read_back():
    run = Run("import", id=3, status="failed")
    ms = [Measurement("all_reduce", "busbw", 1.5, "GB/s", {"bytes": 8, "value": "x", "note": "a\rb"}),
          Measurement("=cmd", "busbw", 2.0, "GB/s", {"hosts": ["a", None]})]
    out = io.StringIO()
    write_csv([(run, ms)], out)
    text = out.getvalue()
    assert "\r\n" not in text and text.endswith("\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["run", "status", "benchmark", "metric", "value", "unit", "bytes", "param.value", "note", "hosts"]
    assert rows[1] == ["3", "failed", "all_reduce", "busbw", "1.5", "GB/s", "8", "x", "a\rb", ""]
    assert rows[2] == ["3", "failed", "'=cmd", "busbw", "2.0", "GB/s", "", "", "", '["a",null]']


def test_inert_and_names():
    assert inert("=HYPERLINK(1)") == "'=HYPERLINK(1)" and inert("-1") == "-1" and inert("+3.5e2") == "+3.5e2"
    assert inert("@x") == "'@x" and inert("ok") == "ok"
    assert csv_cell(None) is None and csv_cell(True) is True and csv_cell({"a": 1}) == '{"a":1}'
    assert csv_param_columns(["run", "param.run", "bytes"]) == ["param.param.run", "param.run", "bytes"]
