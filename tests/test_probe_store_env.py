"""Probe of run copying, CSV export, the selector grammar and ``env diff``: each bad input is one
line and a non-zero exit, and what is written reads back as it was stored."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.selectors import parse_since


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _one_line_error(rc: int, err: str) -> None:
    assert rc == 2 and err.startswith("clusterbench: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("selector, shown", [
    ("last~99999999999999999999", "last~99999999999999999999 is out of range"),
    ("1-99999999999999999999", "run id 99999999999999999999 is out of range"),
    ("2,last~099999999999999999999", "last~099999999999999999999 is out of range"),
])
def test_an_out_of_range_number_is_named_with_its_whole_selector(capsys, db, selector, shown):
    with Store.open(db) as s:
        s.save_run(Run(benchmark="all_reduce"), [])
    rc, out, err = cli(capsys, "results", "show", selector, "--db", db)
    _one_line_error(rc, err)
    assert out == "" and f"invalid selector {selector!r}: {shown}" in err


@pytest.mark.parametrize("since, expected", [
    ("0001-01-01T00:00:00+05:00", "0001-01-01T00:00:00.000Z"),   # before the first day in UTC
    ("9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59.999Z"),   # after the last
])
def test_since_past_the_calendar_in_utc_is_its_edge_not_a_crash(capsys, db, since, expected):
    assert parse_since(since) == expected
    with Store.open(db) as s:
        s.save_run(Run(benchmark="all_reduce", hosts=["h"]),
                   [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
    everything = expected.startswith("0001")
    rc, out, err = cli(capsys, "results", "list", "--json", "--since", since, "--db", db)
    assert rc == 0 and err == "" and len(out.splitlines()) == (1 if everything else 0)
    rc, out, err = cli(capsys, "export", "openmetrics", "--since", since, "--db", db)
    assert rc == 0 and err == "" and ("busbw" in out) == everything


def test_csv_params_named_as_columns_or_not_text_read_back(capsys, db):
    params = {"bytes": 8, "value": "param's", "status": "s", "param.status": "taken",
              "ranks": [0, 1], "opts": {"a": "b"}, "ok": True, "none": None, "host": 'h,"x"\ny'}
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="all_reduce"), [
            Measurement("all_reduce", "busbw", 41.5, "GB/s", params),
            Measurement("all_reduce", "busbw", 2.0, "GB/s", {"bytes": 16})])
    rc, out, err = cli(capsys, "results", "export", str(rid), "--csv", "--db", db)
    assert rc == 0 and err == ""
    header = next(csv.reader(io.StringIO(out)))
    assert len(header) == len(set(header))   # a reader by name sees every column
    first, second = csv.DictReader(io.StringIO(out))
    assert (first["value"], first["status"]) == ("41.5", "complete")   # the measurement's, not the param's
    assert (first["param.value"], first["param.param.status"], first["param.status"]) == ("param's", "s", "taken")
    assert json.loads(first["ranks"]) == [0, 1] and json.loads(first["opts"]) == {"a": "b"}
    assert first["ok"] == "True" and first["none"] == "" and first["host"] == 'h,"x"\ny'
    assert (second["value"], second["bytes"], second["ranks"]) == ("2.0", "16", "")


def test_env_diff_shows_values_that_print_alike_as_json(capsys, db):
    with Store.open(db) as s:
        a = s.save_run(Run(benchmark="x", hosts=["h"], meta={"inventory": {"h": {
            "nics": [{"name": "e", "mtu": "9000"}], "env": {"NCCL_A": "(unset)"}}}}), [])
        b = s.save_run(Run(benchmark="x", hosts=["h"], meta={"inventory": {"h": {
            "nics": [{"name": "e", "mtu": 9000}]}}}), [])
    rc, out, err = cli(capsys, "env", "diff", a, b, "--db", db)
    assert rc == 0 and err == ""
    lines = {line.split()[1]: line.split(None, 2)[2] for line in out.splitlines()[1:]}
    assert lines == {"env.NCCL_A": '"(unset)"  ->  null', "nics.e.mtu": '"9000"  ->  9000'}
    rc, out, _ = cli(capsys, "env", "diff", a, a, "--db", db, "--exit-code")
    assert rc == 0 and "0 difference(s)" in out


@pytest.mark.parametrize("spelling", ["same", "link", "dotted", "url"])
def test_a_copy_from_a_database_into_itself_is_refused(capsys, tmp_path, spelling):
    src = tmp_path / "a.db"
    with Store.open(src) as s:
        s.save_run(Run(benchmark="all_reduce"), [])
    dest = {"same": str(src), "link": str(tmp_path / "link.db"), "dotted": f"{tmp_path}/../{tmp_path.name}/a.db",
            "url": f"sqlite:///{src}"}[spelling]
    if spelling == "link":
        os.symlink(src, dest)
    before = src.read_bytes()
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    _one_line_error(rc, err)
    assert out == "" and "--from and --to are the same database" in err
    assert src.read_bytes() == before
    other = tmp_path / "b.db"   # another file is copied into as before
    rc, out, _ = cli(capsys, "results", "copy", "--from", src, "--to", other, "--json")
    assert rc == 0 and json.loads(out)["copied"] == 1


@pytest.mark.parametrize("argv", [["results", "list"], ["results", "show", "last"], ["export", "openmetrics"],
                                  ["env", "show", "last"]])
def test_a_read_command_never_makes_the_database_it_is_given(capsys, tmp_path, argv):
    missing = tmp_path / "typo.db"
    rc, _out, err = cli(capsys, *argv, "--db", str(missing))
    _one_line_error(rc, err)
    assert "no results database at" in err and not missing.exists()


@pytest.mark.parametrize("argv", [["results", "tag", "1", "a=b"], ["results", "delete", "1"]])
def test_tag_and_delete_never_make_the_database_they_are_given(capsys, tmp_path, argv):
    missing = tmp_path / "typo.db"
    rc, _out, err = cli(capsys, *argv, "--db", str(missing))
    _one_line_error(rc, err)
    assert "no results database at" in err and not missing.exists()
