"""Tests of clusterbench.cli.commands.results: ``clusterbench results``."""

import csv
import hashlib
import html
import io
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from string import Template

import pytest
from hostile_text import BAD_TAGS, DEEP, ESC, EVIL, _cb, _clean, cli_store_env
from judge_helpers import cli, run_cli
from paths import TESTS
from stored_runs import (
    AWKWARD,
    GOLDEN,
    NUL,
    STORED,
    WALL,
    _cli,
    _edit,
    _ids,
    _lines,
    _m,
    _ok,
    _one_line_usage_error,
    _run,
    _run_cli,
    _runs,
    _source,
    _store,
    _tag_selectors_run,
    build_probe_db,
    cli_results_cmds,
    cli_store_cli,
    cli_store_location,
    cli_store_options,
)
from synthetic_runs import _fill
from work_helpers import SHAPE

from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS
from clusterbench.store.selectors import parse_selector, parse_since
from clusterbench.store.sqlite import SqliteBackend

GOLDEN_golden_show = TESTS / "data" / "golden"


RUNS = sorted(int(p.stem.split("-")[1]) for p in GOLDEN_golden_show.glob("show-*.txt"))


@pytest.fixture(scope="module")
def old_db(tmp_path_factory):
    # a copy: opening applies newer migrations, and the fixture must stay as it was made
    path = tmp_path_factory.mktemp("golden") / "old.db"
    shutil.copy(GOLDEN_golden_show / "pre-redesign.db", path)
    return str(path)


BAD_PACKS = [
    ("body", '{"k":' + DEEP + ',"p":[],"r":[]}', "nested more than"),
    ("body", "not json", "not JSON"),
    ("body", "[1, 2]", "not a JSON object"),
    ("body", '{"k":[[1]],"p":[],"r":[]}', "keys are not"),          # was copied as benchmark 1
    ("body", '{"k":[["a","b","c"]],"p":[{}],"r":[[0,3,1.0]]}', "records are not"),
    ("body", b"\x00\xff", "bytes, not text"),
    ("format", "zzz", "unknown measurement pack format"),               # was copied as rows
    ("count", "x", "record count is not a number"),
]


# what must never be printed for a ratio: inf, nan, or a zero of a value that is not 0
BAD = re.compile(r"\binf\b|\bnan\b|(?<![\d.])0(\.0+)?%")


def _csv_rows(out: str) -> list[dict[str, str]]:
    # newline="": the reader, not the text layer, decides where a row ends (as a file opened for csv)
    return list(csv.DictReader(io.StringIO(out, newline="")))


def _one_line_error(rc: int, err: str) -> None:
    assert rc == 2 and err.startswith("clusterbench: error: ") and err.count("\n") == 1, err


def _report(agreement_store: dict, *selectors: str) -> tuple[str, str]:
    out = agreement_store["tmp"] / ("r_" + "_".join(re.sub(r"\W", "-", s) for s in selectors) + ".html")
    rc, _, err = _cli("report", *selectors, "--db", agreement_store["db"], "-o", out)
    assert rc == 0, err
    return out.read_text(encoding="utf-8"), out.with_suffix(".md").read_text(encoding="utf-8")


def _table(text: str) -> dict[tuple, list[str]]:
    """The nccl-tests table of ``results show``: (bytes, dtype, redop, root) -> the 8 cells."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 13 and parts[0].isdigit():
            rows[(int(parts[0]), parts[2], parts[3], int(parts[4]))] = parts[5:]
    return rows


def _shows(cell: str, value: float) -> bool:
    """``cell`` is ``value`` at the precision it was printed with."""
    if "e" in cell:
        return float(cell) == float(f"{value:.{max(len(cell.split('e')[0].strip('-').replace('.', '')) - 1, 0)}e}")
    decimals = len(cell.split(".")[1]) if "." in cell else 0
    return abs(float(cell) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


def _text_of(page: str) -> str:
    # a span is inline (it keeps a word with a hyphen on one line): no space where it was
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"</?span[^>]*>", "", page)))


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _migrations(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    finally:
        conn.close()


def _stored(db: Path) -> list[tuple]:
    """Each run's record and measurements, in order, without ids or uids."""
    with Store.open(db) as s:
        return [(r.benchmark, r.started_at, r.status, r.hosts, r.tags, r.meta,
                 [m.to_dict() for m in s.measurements(int(r.id or 0))])
                for r in s.list_runs(oldest_first=True)]


def _pre_uid_database(path: Path) -> None:
    """A database of migrations 0001-0003 only (before runs had uids), with two runs that
    differ in nothing but their id."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for m in MIGRATIONS[:3]:
        assert m.name < "0004"
        for step in m.steps:
            for stmt in Template(step).substitute(SqliteBackend.types).split(";"):
                if stmt.strip():
                    conn.execute(stmt)
        conn.execute("INSERT INTO schema_migrations VALUES (?, '2025-01-01 00:00:00')", (m.name,))
    for rid in (1, 2):
        conn.execute("INSERT INTO runs (id, benchmark, started_at, status) VALUES (?, 'coll', '2025-01-01', 'complete')",
                     (rid,))
        conn.execute("INSERT INTO measurements (run_id, benchmark, metric, value, unit, params) "
                     "VALUES (?, 'all_reduce', 'busbw', 1.5, 'GB/s', '{\"bytes\": 8}')", (rid,))
    conn.commit()
    conn.close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Where the default database would be: it must stay empty."""
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("CLUSTERBENCH_DB", raising=False)
    return data


NCCL_LOG = TESTS / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def _tag_selectors_ids(out: str) -> list[int]:
    return [json.loads(line)["id"] for line in out.splitlines() if line.startswith('{"kind": "run"')]


def _run_line(tags: dict[str, str], run_id: int) -> str:
    return json.dumps({"kind": "run", "id": run_id, "benchmark": "all_reduce", "source": "clusterbench 0.1.0",
                       "command": ["clusterbench", "coll"], "started_at": "2026-11-01T10:00:00.000Z",
                       "ended_at": None, "status": "complete", "hosts": ["h1"], "ranks": 1, "devices": [],
                       "versions": {}, "env": {}, "tags": tags, "errors": [], "meta": {}})


def test_results_show_keeps_every_table_aligned(extreme_db):
    """Each row is as long as the same row of the golden run it copies: every cell kept its width.
    An imported nccl-tests table's cells print so that the importer reads back the values stored
    (a round trip, docs/import.md): where no such form fits its column (1.7e308 us is
    ``1.7e+308`` in the 7 characters of the time column: ``2e+308`` would read back as infinity),
    the cell is as wide as that form, and each number it prints is a stored value."""
    with Store.open(extreme_db) as s:
        imported = {r.id for r in s.list_runs() if r.benchmark == "import"}
    stored = {repr(float(v)) for v in STORED}
    for copy_id in range(1, 51):
        golden_id = (copy_id + 1) // 2
        want = (GOLDEN.parent / f"show-{golden_id}.txt").read_text().splitlines()
        rc, out, err = run_cli("results", "show", copy_id, "--db", extreme_db)
        _ok(rc, out, err)
        assert not WALL.search(out), (copy_id, WALL.search(out))
        rows = [line for line in out.splitlines() if not line.startswith("#")]
        # -1.7e308 in nccl-tests' 5-character #wrong column is the one cell no form fits
        want = [line for line in want if not line.startswith("#")]
        assert len(rows) == len(want), copy_id
        table = "Collective test" in out
        for row, was in zip(rows, want):
            if row.lstrip().startswith(("average ", "aggregate ")):
                continue  # running text, no columns
            if copy_id in imported and table and len(row) != len(was):
                assert len(row) > len(was), (copy_id, row, was)
                # past the lead columns (size, count, type, redop, root): stored values, N/A
                assert all(t == "N/A" or repr(float(t)) in stored for t in row.split()[5:]), (copy_id, row)
                continue
            assert len(row) == len(was), (copy_id, row, was)


def test_exports_keep_the_exact_values(extreme_db):
    with Store.open(extreme_db) as s:
        stored = sorted(repr(m.value) for r in s.list_runs() for m in s.measurements(r.id))
    rc, out, err = run_cli("results", "export", "--csv", "1..99", "--db", extreme_db)
    _ok(rc, out, err)
    assert sorted(repr(float(r["value"])) for r in csv.DictReader(io.StringIO(out))) == stored
    rc, out, err = run_cli("results", "export", "--json", "1..99", "--db", extreme_db)
    _ok(rc, out, err)
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted(repr(d["value"]) for d in lines if d["kind"] == "measurement") == stored


def test_fixture_covers_every_table_family():
    assert len(RUNS) >= 20


@pytest.mark.parametrize("run_id", RUNS)
def test_results_show_is_unchanged(capsys, old_db, run_id):
    with pytest.raises(SystemExit) as e:
        main(["results", "show", str(run_id), "--db", old_db])
    assert e.value.code == 0
    want = (GOLDEN_golden_show / f"show-{run_id}.txt").read_text()
    assert capsys.readouterr().out == want


@pytest.mark.parametrize("column, value, why", BAD_PACKS)
def test_a_copy_of_unreadable_measurements_is_one_line_naming_the_run(capsys, tmp_path, column, value, why):
    src = _source(tmp_path / "src.db")
    _edit(src, f"UPDATE measurement_packs SET {column}=? WHERE run_id=2", value)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 2 and err.count("\n") == 1 and "internal error" not in err, err
    assert f"run 2 of {src} is not copied: unreadable measurements: " in err and why in err, err
    assert out.startswith("run 1: copied as run 1")
    with Store.open(dest) as s:   # the run before is whole, nothing of the bad one
        assert [r.hosts for r in s.list_runs()] == [["h0"]]
        assert s._query("SELECT count(*) FROM measurement_packs")[0][0] == 1
        assert s._query("SELECT count(*) FROM run_benchmarks")[0][0] == 1


def test_results_show_efficiency_line(probe_db):
    rc, out, err = run_cli("results", "show", "1", "3", "--db", probe_db)
    assert rc == 0, err
    lines = [line for line in out.splitlines() if line.startswith("# efficiency")]
    assert lines and not [line for line in lines if BAD.search(line)], lines
    assert "= 1.36e+309% of the optimal 12.5 GB/s" in out and "= 3.95253e-323% of the optimal" in out


def test_train_footer_of_a_stored_run(tmp_path):
    lines = list(run_lines(Run("train", hosts=["h"], ranks=2, id=1),
                           [Measurement("train", "loss", 4.0, "", {**SHAPE, "step": 0}),
                            Measurement("train", "samples_per_s", 300.0, "samples/s", {**SHAPE, "stat": "avg"})]))
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "t.db")
    assert run_cli("import", tmp_path / "t.jsonl", "--db", db)[0] == 0
    rc, out, err = run_cli("results", "show", "1", "--db", db)
    assert rc == 0, err
    assert "3 layers" in out and "sequence length 16 tokens" in out


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


def test_delete_of_several_runs_is_all_or_nothing(capsys, db):
    _runs(db, 5)
    conn = sqlite3.connect(db)   # a run that cannot be deleted (as a lock or a full disk would fail it)
    conn.execute("CREATE TRIGGER keep3 BEFORE DELETE ON runs WHEN old.id = 3 BEGIN SELECT RAISE(ABORT, 'kept'); END")
    conn.commit()
    conn.close()
    rc, out, err = cli_results_cmds(capsys, "results", "delete", "1..5", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "kept" in err, err
    assert out == ""   # nothing said deleted: nothing was
    assert _ids(db) == [1, 2, 3, 4, 5]


def test_delete_prints_each_run_once_it_is_gone(capsys, any_db):
    _runs(any_db, 4)
    rc, out, err = cli_results_cmds(capsys, "results", "delete", "2..3", "4", "--db", any_db)
    assert (rc, err) == (0, "")
    assert out == "deleted run 2\ndeleted run 3\ndeleted run 4\n"
    assert _ids(any_db) == [1]


def test_tag_of_several_runs_is_all_or_nothing(capsys, db):
    _runs(db, 5)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TRIGGER no3 BEFORE INSERT ON run_tags WHEN new.run_id = 3 "
                 "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    conn.commit()
    conn.close()
    rc, _, err = cli_results_cmds(capsys, "results", "tag", "1..5", "env=prod", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "refused" in err, err
    with Store.open(db) as s:
        assert [r.tags for r in s.list_runs()] == [{}] * 5


@pytest.mark.parametrize("value", ["garbage", "100", "-5Gbps", "0Gbps", "nan"])
def test_tag_refuses_a_link_speed_no_judge_can_read(capsys, db, value):
    _runs(db, 1)
    rc, out, err = cli_results_cmds(capsys, "results", "tag", "1", f"link_speed={value}", "--db", db)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "link_speed" in err
    with Store.open(db) as s:
        assert s.get_run(1).tags == {}
    rc, out, err = cli_results_cmds(capsys, "results", "show", "1", "--db", db)   # the run still reads
    assert rc == 0 and "# run 1" in out, err


def test_tag_keeps_a_readable_link_speed_and_overwrites_a_tag(capsys, db):
    _runs(db, 2, {"env": "a"})
    rc, _, err = cli_results_cmds(capsys, "results", "tag", "1..2", "link_speed=100Gbps", "env=b", "note=a=b", "--db", db)
    assert (rc, err) == (0, "")
    with Store.open(db) as s:
        assert [r.tags for r in s.list_runs(oldest_first=True)] == \
            [{"env": "b", "link_speed": "100Gbps", "note": "a=b"}] * 2
    rc, out, err = cli_results_cmds(capsys, "results", "show", "1", "--db", db)
    assert rc == 0 and "# tags: env=b, link_speed=100Gbps, note=a=b" in out, err


def test_chunked_export_is_the_same_output(tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "runs.db")
    _fill(db, 5)
    whole = _run_cli(capsys, ["results", "export", "--csv", "1-15", "--db", db])
    monkeypatch.setattr(Store, "_CHUNK", 2)
    assert _run_cli(capsys, ["results", "export", "--csv", "1-15", "--db", db]) == whole


@pytest.mark.parametrize("selector, shown", [
    ("last~99999999999999999999", "last~99999999999999999999 is out of range"),
    ("1-99999999999999999999", "run id 99999999999999999999 is out of range"),
    ("2,last~099999999999999999999", "last~099999999999999999999 is out of range"),
])
def test_an_out_of_range_number_is_named_with_its_whole_selector(capsys, db, selector, shown):
    with Store.open(db) as s:
        s.save_run(Run(benchmark="all_reduce"), [])
    rc, out, err = cli_store_env(capsys, "results", "show", selector, "--db", db)
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
    rc, out, err = cli_store_env(capsys, "results", "list", "--json", "--since", since, "--db", db)
    assert rc == 0 and err == "" and len(out.splitlines()) == (1 if everything else 0)
    rc, out, err = cli_store_env(capsys, "export", "openmetrics", "--since", since, "--db", db)
    assert rc == 0 and err == "" and ("busbw" in out) == everything


def test_csv_params_named_as_columns_or_not_text_read_back(capsys, db):
    params = {"bytes": 8, "value": "param's", "status": "s", "param.status": "taken",
              "ranks": [0, 1], "opts": {"a": "b"}, "ok": True, "none": None, "host": 'h,"x"\ny'}
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="all_reduce"), [
            Measurement("all_reduce", "busbw", 41.5, "GB/s", params),
            Measurement("all_reduce", "busbw", 2.0, "GB/s", {"bytes": 16})])
    rc, out, err = cli_store_env(capsys, "results", "export", str(rid), "--csv", "--db", db)
    assert rc == 0 and err == ""
    header = next(csv.reader(io.StringIO(out)))
    assert len(header) == len(set(header))   # a reader by name sees every column
    first, second = csv.DictReader(io.StringIO(out))
    assert (first["value"], first["status"]) == ("41.5", "complete")   # the measurement's, not the param's
    assert (first["param.value"], first["param.param.status"], first["param.status"]) == ("param's", "s", "taken")
    assert json.loads(first["ranks"]) == [0, 1] and json.loads(first["opts"]) == {"a": "b"}
    assert first["ok"] == "True" and first["none"] == "" and first["host"] == 'h,"x"\ny'
    assert (second["value"], second["bytes"], second["ranks"]) == ("2.0", "16", "")


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
    rc, out, err = cli_store_env(capsys, "results", "copy", "--from", src, "--to", dest)
    _one_line_error(rc, err)
    assert out == "" and "--from and --to are the same database" in err
    assert src.read_bytes() == before
    other = tmp_path / "b.db"   # another file is copied into as before
    rc, out, _ = cli_store_env(capsys, "results", "copy", "--from", src, "--to", other, "--json")
    assert rc == 0 and json.loads(out)["copied"] == 1


@pytest.mark.parametrize("argv", [["results", "list"], ["results", "show", "last"], ["export", "openmetrics"],
                                  ["env", "show", "last"]])
def test_a_read_command_never_makes_the_database_it_is_given(capsys, tmp_path, argv):
    missing = tmp_path / "typo.db"
    rc, _out, err = cli_store_env(capsys, *argv, "--db", str(missing))
    _one_line_error(rc, err)
    assert "no results database at" in err and not missing.exists()


@pytest.mark.parametrize("argv", [["results", "tag", "1", "a=b"], ["results", "delete", "1"]])
def test_tag_and_delete_never_make_the_database_they_are_given(capsys, tmp_path, argv):
    missing = tmp_path / "typo.db"
    rc, _out, err = cli_store_env(capsys, *argv, "--db", str(missing))
    _one_line_error(rc, err)
    assert "no results database at" in err and not missing.exists()


def test_show_json_export_and_csv_hold_the_same_measurements(agreement_store):
    for rid, listed in agreement_store["runs"].items():
        _, shown, _ = _cli("results", "show", rid, "--db", agreement_store["db"], "--json")
        ms = [o for o in _lines(shown) if o["kind"] == "measurement"]
        assert len(ms) == listed["measurements"], rid
        _, exported, _ = _cli("results", "export", rid, "--db", agreement_store["db"])
        assert [o for o in _lines(exported) if o["kind"] == "measurement"] == ms, rid
        _, text, _ = _cli("results", "export", rid, "--db", agreement_store["db"], "--csv")
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == len(ms), rid
        for m, row in zip(ms, rows):
            assert (row["benchmark"], row["metric"], row["unit"]) == (m["benchmark"], m["metric"], m["unit"])
            assert float(row["value"]) == m["value"]
            # quotes, commas and newlines in a param survive CSV quoting
            assert {k: row[k] for k in m["params"]} == {k: str(v) for k, v in m["params"].items()}


@pytest.mark.parametrize("selector", ["file=0,side=A", "file=2,side=A"])
def test_collective_table_shows_every_json_value(agreement_store, selector):
    column = {"time_us": 0, "algbw": 1, "busbw": 2, "wrong": 3}
    _, text, _ = _cli("results", "show", selector, "--db", agreement_store["db"])
    _, js, _ = _cli("results", "show", selector, "--db", agreement_store["db"], "--json")
    table = _table(text)
    assert table
    filled = set()
    for m in (o for o in _lines(js) if o["kind"] == "measurement"):
        p = m["params"]
        if m["metric"] not in column:
            continue
        key = (p["bytes"], p["dtype"], p["redop"], p["root"])
        j = column[m["metric"]] + (4 if p["placement"] == "in" else 0)
        assert _shows(table[key][j], m["value"]), (key, m["metric"], table[key][j], m["value"])
        filled.add((key, j))
    # every number in the table is a stored value; the rest is N/A (never nan, never inf)
    for key, cells in table.items():
        for j, cell in enumerate(cells):
            assert cell == "N/A" if (key, j) not in filled else cell not in ("nan", "inf"), (key, j, cell)


def test_import_warnings_are_warning_lines_in_show_json(agreement_store):
    run = next(r for r in agreement_store["runs"].values() if r["meta"].get("warnings") and r["tags"].get("side") == "C")
    _, text, _ = _cli("results", "show", run["id"], "--db", agreement_store["db"])
    _, js, _ = _cli("results", "show", run["id"], "--db", agreement_store["db"], "--json")
    for w in run["meta"]["warnings"]:
        assert f"# warning: {w}" in text
        assert {"kind": "warning", "run": run["id"], "text": w} in _lines(js)


def test_report_keeps_errors_warnings_and_notes_and_escapes_them(agreement_store):
    edge = agreement_store["runs"][agreement_store["edge"]]
    page, md = _report(agreement_store, "side=C", str(agreement_store["edge"]))
    # no fetches: figures are data URIs
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    for raw in ("<b>bold", "<w>", "<n>", "<i>", "h<1>", "\x1b", "\x07"):
        assert raw not in page and raw not in md, raw
    shown = _text_of(page)
    mdown = html.unescape(md.replace("\\\\", "\\"))
    for r in (r for r in agreement_store["runs"].values() if r["tags"].get("side") == "C" or r["id"] == agreement_store["edge"]):
        for text in [*r["errors"][:5], *(r["meta"].get("warnings") or [])]:
            expected = text.replace("\x1b", "\\x1b")
            assert expected in shown, (r["id"], text)
            assert expected in mdown, (r["id"], text)
        assert r["status"] in shown and r["status"] in md
    assert "note <n>" in shown and "note <n>" in mdown
    # tags as results show prints them: quoted where needed, control characters escaped
    _, text, _ = _cli("results", "show", agreement_store["edge"], "--db", agreement_store["db"])
    tags = next(x for x in text.splitlines() if x.startswith("# tags: "))[len("# tags: "):]
    assert tags in shown and tags in mdown
    assert edge["measurements"] == 5 and re.search(rf'<td class="n">{agreement_store["edge"]}</td>.*?<td class="n">5</td>',
                                                   page, re.S)


def test_report_size_table_never_prints_inf(agreement_store):
    page, _ = _report(agreement_store, "grp=a", "grp=b")
    cells = re.findall(r'<td class="n">([^<]*)</td>', page)
    assert not [c for c in cells if re.search(r"\b(inf|nan)\b", c)]
    assert "1.7e+308" in cells


def test_report_of_a_run_that_measured_nothing_shows_its_failure(agreement_store):
    page, md = _report(agreement_store, str(agreement_store["failed"]))
    assert "FAIL" in page and "rank 1 died" in page
    assert "**FAIL**" in md and "rank 1 died" in md and "| failed |" in md


def test_copy_refuses_a_missing_source_and_other_schemes(capsys, tmp_path):
    rc, out, err = cli_store_cli(capsys, "results", "copy", "--from", tmp_path / "none.db", "--to", tmp_path / "to.db")
    assert rc == 2 and out == "" and err == f"clusterbench: error: no results database at {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()
    rc, _, err = cli_store_cli(capsys, "results", "copy", "--from", tmp_path / "to.db", "--to", "mongodb://h/db")
    assert rc == 2 and len(err.splitlines()) == 1 and "postgresql://" in err


def test_copy_of_the_pre_redesign_database_copies_every_run_and_leaves_it_as_it_was(capsys, tmp_path):
    src = tmp_path / "old.db"
    shutil.copy(GOLDEN, src)
    before, schema = _md5(src), _migrations(src)
    assert schema[-1] != MIGRATIONS[-1].name   # the fixture is of an older schema
    conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)   # runs an older clusterbench stored without a uid
    assert conn.execute("SELECT count(*) FROM runs WHERE uid IS NULL").fetchone()[0] == 9
    conn.close()
    dest = tmp_path / "copy.db"

    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0, err
    assert out.splitlines()[-1] == f"copied 25 run(s) (1076 measurements), skipped 0 already present: {src} -> {dest}"
    assert _md5(src) == before and _migrations(src) == schema
    migrated = tmp_path / "migrated.db"   # what a migration in place would have made of it
    shutil.copy(GOLDEN, migrated)
    assert _stored(dest) == _stored(migrated)

    # the runs without a uid got the same one again: a second copy, also from a copy of the
    # file under another name, stores nothing twice
    again = tmp_path / "again.db"
    shutil.copy(GOLDEN, again)
    for source in (src, again):
        rc, out, err = cli(capsys, "results", "copy", "--from", source, "--to", dest, "--json")
        summary = json.loads(out)
        assert rc == 0 and (summary["copied"], summary["skipped"]) == (0, 25), err
    assert [t for t in tmp_path.iterdir() if t.name.startswith("clusterbench-")] == []


def test_copy_of_a_database_from_before_uids_is_idempotent(capsys, tmp_path):
    src = tmp_path / "pre-uid.db"
    _pre_uid_database(src)
    before = _md5(src)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0 and out.splitlines()[-1].startswith("copied 2 run(s) (2 measurements), skipped 0"), err
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0 and out.splitlines()[-1].startswith("copied 0 run(s) (0 measurements), skipped 2"), err
    assert _md5(src) == before and _migrations(src) == [m.name for m in MIGRATIONS[:3]]
    with Store.open(dest) as s:
        assert len(set(s.uids())) == 2 and s.measurement_counts() == {1: 1, 2: 1}


@pytest.mark.parametrize("kind", ["empty", "text", "fifo", "missing", "sqlite-not-clusterbench"])
def test_a_source_that_is_not_a_results_database_is_refused_untouched(capsys, tmp_path, kind):
    src = tmp_path / "source"
    if kind == "empty":
        src.write_bytes(b"")
    elif kind == "text":
        src.write_text("hello\n")
    elif kind == "fifo":
        os.mkfifo(src)
    elif kind == "sqlite-not-clusterbench":
        conn = sqlite3.connect(src)
        conn.execute("CREATE TABLE t (x)")
        conn.close()
    before = None if kind in ("missing", "fifo") else _md5(src)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("clusterbench: error: "), err
    assert str(src) in err
    assert not dest.exists()
    if kind == "missing":
        assert not src.exists()
    elif kind == "fifo":
        assert not src.is_file()
    else:
        assert _md5(src) == before
    assert [p.name for p in tmp_path.iterdir()] == ([] if kind == "missing" else ["source"])


def test_a_current_source_is_read_without_a_write(capsys, tmp_path):
    src = tmp_path / "laptop.db"
    with Store.open(src) as s:
        s.save_run(Run(benchmark="coll"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
    before = _md5(src)
    src.chmod(0o444)   # root may still write it: the md5 is what proves nothing was written
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", tmp_path / "dest.db")
    assert rc == 0 and "copied 1 run(s)" in out, err
    assert _md5(src) == before


def test_a_url_never_becomes_a_directory(capsys, tmp_path, monkeypatch):
    """Before: `--db postgresql://...` created ./postgresql:/... as an SQLite file."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli_store_location(capsys, "results", "list", "--db", "mysql://cb@127.0.0.1:1/cb")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "postgresql://" in err and "sqlite:///" in err
    rc, _, err = cli_store_location(capsys, "results", "list", "--db", "postgresql://cb@127.0.0.1:1/cb")
    assert rc == 2 and err.startswith("clusterbench: error: cannot connect to results database "
                                      "postgresql://cb@127.0.0.1:1/cb: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run, m", [
    (_run(hosts=[NUL]), _m()),
    (_run(errors=[f"rank 3: {NUL}"]), _m()),
    (_run(meta={"note": NUL}), _m()),
    (_run(), _m(metric=NUL, unit=NUL, params={"p": NUL})),
])
def test_text_stored_as_json_keeps_its_nul_on_both_backends(any_db, run, m):
    with Store.open(any_db) as s:
        rid = s.save_run(run, [m])
        back = s.get_run(rid)
        assert (back.hosts, back.errors, back.meta) == (run.hosts, run.errors, run.meta)
        assert s.measurements(rid) == [m]
    rc, out, err = run_cli("results", "show", rid, "--db", any_db)
    assert rc == 0 and "\x00" not in out, err   # printed as an escape


def test_tagging_a_run_with_nul_is_refused(any_db):
    with Store.open(any_db) as s:
        s.save_run(_run(), [_m()])
        with pytest.raises(UsageError, match="tag 'k' holds a NUL character"):
            s.tag_runs([1], {"k": NUL})
    # the command line refuses every control character in a tag before it reaches the store
    rc, out, err = run_cli("results", "tag", "1", f"k={NUL}", "--db", any_db)
    assert rc == 2 and err.count("\n") == 1 and "control character" in err, err
    with Store.open(any_db) as s:
        assert s.get_run(1).tags == {"env": "x"}


@pytest.mark.parametrize("selector", [f'k="{NUL}"', f"k={NUL}", f'"{NUL}"=v', f"bench:{NUL}"])
def test_selector_with_nul_matches_no_run(any_db, selector):
    with Store.open(any_db) as s:
        s.save_run(_run(), [_m()])
    for argv in (["results", "show", selector], ["results", "export", "--csv", selector],
                 ["compare", selector, "1"]):
        rc, out, err = run_cli(*argv, "--db", any_db)
        assert rc == 2 and err.count("\n") == 1, (argv, err)
        assert "matches no run" in err and "cannot read" not in err, (argv, err)
    with Store.open(any_db) as s:
        assert s.runs_with_tags({"k": NUL}) == []
        assert s.list_runs(benchmark=NUL) == []


def test_copy_of_an_old_run_with_a_nul_tag_names_the_run(any_db, tmp_path):
    """An SQLite file may hold such a tag from before it was refused: it is still found there by
    its selector, and copying it says which run cannot go."""
    old = str(tmp_path / "old.db")
    with Store.open(old) as s:
        s.save_run(_run(), [_m()])
        rid = s.save_run(_run(), [_m()])
    con = sqlite3.connect(old)
    con.execute("INSERT INTO run_tags (run_id, key, value) VALUES (?, 'k', ?)", (rid, NUL))
    con.commit()
    con.close()
    rc, out, err = run_cli("results", "export", "--csv", f'k="{NUL}"', "--db", old)
    assert rc == 0 and out.count("\n") == 2, err
    rc, out, err = run_cli("results", "copy", "--from", old, "--to", any_db)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"run {rid} of" in err and "tag 'k' holds a NUL character" in err, err


@pytest.mark.parametrize("limit", ["9223372036854775808", str(10**30)])
def test_limit_past_a_database_integer_is_a_usage_error(capsys, stored_store_options, limit):
    _one_line_usage_error(*cli_store_options(capsys, "results", "list", "--limit", limit, "--db", stored_store_options), "--limit")


def test_the_largest_limit_lists_every_run(capsys, stored_store_options):
    rc, out, err = cli_store_options(capsys, "results", "list", "--limit", str(2**63 - 1), "--db", stored_store_options)
    assert rc == 0 and len(out.splitlines()) == 3, err


@pytest.mark.parametrize("argv", [("results", "list"), ("results", "show", "1"), ("stream", "--device", "cpu")])
def test_an_empty_db_option_is_a_usage_error(capsys, home, argv):
    _one_line_usage_error(*cli_store_options(capsys, *argv, "--db", ""), "--db", "empty")
    assert not home.exists()


def test_an_empty_clusterbench_db_is_a_usage_error(capsys, home, monkeypatch):
    monkeypatch.setenv("CLUSTERBENCH_DB", "")
    _one_line_usage_error(*cli_store_options(capsys, "results", "list"), "CLUSTERBENCH_DB", "empty")
    assert not home.exists()


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_benchmark_filter_is_refused_as_the_selector_is(capsys, stored_store_options, name):
    _one_line_usage_error(*cli_store_options(capsys, "results", "list", "--benchmark", name, "--db", stored_store_options), "empty benchmark name")
    _one_line_usage_error(*cli_store_options(capsys, "results", "show", f"bench:{name}", "--db", stored_store_options), "empty benchmark name")


def test_bench_prefix_and_tool_are_case_sensitive_on_sqlite(capsys, tmp_path):
    """SQLite's LIKE ignores ASCII case, PostgreSQL's does not: bench:osu picked OSU_bw (prefix
    osu_) and a run of tool "OSU 7.0" on SQLite only."""
    db = str(tmp_path / "r.db")
    build_probe_db(capsys, db, tmp_path)
    rc, out, _ = cli_store_options(capsys, "results", "list", "--benchmark", "osu", "--json", "--db", db)
    assert rc == 0 and [json.loads(x)["tool"] for x in out.splitlines()] == ["osu"]
    rc, out, _ = cli_store_options(capsys, "results", "list", "--benchmark", "OSU", "--json", "--db", db)
    assert rc == 0 and [json.loads(x)["tool"] for x in out.splitlines()] == ["OSU"]


def test_every_command_takes_the_grammar(store_store_selectors, db_store_selectors, tmp_path):
    """results show last works (it was an error while env show last worked), and the same
    selectors pick the same runs in every command."""
    code, out, _ = run_cli("results", "show", "last", "--json", "--db", db_store_selectors)
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"run"' in x[:20]] == [6]
    code, out, _ = run_cli("results", "show", "bench:collectives", "--since", "2026-11-15", "--json", "--db", db_store_selectors)
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"run"' in x[:20]] == [3, 6]
    code, out, _ = run_cli("results", "export", "2-3", "--csv", "--db", db_store_selectors)
    assert code == 0 and sorted({x.split(",")[0] for x in out.splitlines()[1:]}) == ["2", "3"]
    code, _, _ = run_cli("results", "tag", "bench:osu", "checked=yes", "--db", db_store_selectors)
    assert code == 0 and [r.id for r in store_store_selectors.select("checked=yes")] == [4]
    code, out, _ = run_cli("env", "show", "last~1", "--db", db_store_selectors)
    assert code == 0 and out.startswith("# run 5,")
    code, out, err = run_cli("results", "delete", "env=b,node=n1", "--db", db_store_selectors)
    assert code == 0 and out == "deleted run 5\n"
    code, _, err = run_cli("results", "show", "99999999999999999999", "--db", db_store_selectors)
    assert code == 2 and err == ("clusterbench: error: invalid selector '99999999999999999999': "
                                 "run id 99999999999999999999 is out of range\n")


def test_imported_tags_are_shown_as_the_selectors_that_pick_them(any_db, tmp_path):
    """clusterbench's own JSON lines bring back whatever tags they hold; results list prints each
    run's tags as a selector, and that selector, typed back, picks the run in every command."""
    awkward = dict(AWKWARD)   # one run: the last value of each key
    lines = [_run_line({"team": "a"}, 1), _run_line({"team": "b"}, 2), _run_line(awkward, 3)]
    log = tmp_path / "runs.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert run_cli("import", log, "--db", any_db)[0] == 0
    code, out, _ = run_cli("results", "list", "--db", any_db)
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("3 "))
    shown = row.split("  ")[-1].strip()     # the tags column
    assert parse_selector(shown).tags == awkward
    code, out, _ = run_cli("results", "show", shown, "--json", "--db", any_db)
    assert code == 0 and _tag_selectors_ids(out) == [3]
    code, out, _ = run_cli("results", "show", 'team="a,b"', "--db", any_db)
    tags_line = next(line for line in out.splitlines() if line.startswith("# tags: "))
    assert code == 0 and parse_selector(tags_line[len("# tags: "):]).tags == awkward
    assert all(term in tags_line for term in ('team="a,b"', '"bench:x"=1', '"a=b"=c', 'bidi="\\u202eevil"'))
    code, out, _ = run_cli("results", "export", '"bench:x"=1', "--csv", "--db", any_db)
    assert code == 0
    assert run_cli("results", "tag", '"a=b"=c,team="a,b"', "seen=yes", "--db", any_db)[0] == 0
    code, out, _ = run_cli("results", "show", "seen=yes", "--json", "--db", any_db)
    assert _tag_selectors_ids(out) == [3]
    code, out, err = run_cli("results", "show", "team=a,b", "--db", any_db)   # bare: team=a and b
    assert code == 2 and "'b' is not a run id" in err
    code, out, _ = run_cli("results", "delete", '""=,"bench:"=bench:', "--db", any_db)
    assert code == 0 and out == "deleted run 3\n"


def test_tag_with_grammar_characters_given_by_tag_option_is_selectable(tmp_path):
    db = str(tmp_path / "cb.db")
    assert run_cli("import", NCCL_LOG, "--db", db, "--tag", "team=a,b", "--tag", "bench:x=1",
                "--tag", "3..7=last")[0] == 0
    assert run_cli("import", NCCL_LOG, "--db", db, "--tag", "team=a", "--tag", "x=1")[0] == 0
    for selector in ('team="a,b"', '"bench:x"=1', "3..7=last", '"3..7"="last"'):
        code, out, err = run_cli("results", "show", selector, "--json", "--db", db)
        assert code == 0 and _tag_selectors_ids(out) == [1], (selector, err)


@pytest.mark.parametrize("item, msg", BAD_TAGS[::3] + BAD_TAGS[-3:-1], ids=lambda x: ascii(x)[:30])
def test_bad_tags_are_refused_by_every_command(tmp_path, item, msg):
    db = tmp_path / "cb.db"
    with Store.open(str(db)) as store:
        store.save_run(_tag_selectors_run({"env": "a"}), [])
    for argv in (["results", "tag", "1", item], ["import", NCCL_LOG, "--tag", item],
                 ["coll", "all_reduce", "--np", "1", "--device", "cpu", "--tag", item]):
        code, out, err = run_cli(*argv, "--db", db)
        assert code == 2 and out == "", (argv, err)
        assert err.startswith("clusterbench: error: ") and err.count("\n") == 1 and msg in err, err
    with Store.open(str(db)) as store:
        assert [(r.id, r.tags) for r in store.list_runs()] == [(1, {"env": "a"})]


def test_results_show_and_list_escape(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", "1", "--db", evil_db])
    _clean(out + err)
    assert "\\x1b[2J" in out and "FAKE\\nPASS" in out and '# tags: owner="a\\x1b' in out
    assert not any(line.startswith("PASS") for line in out.splitlines())  # no forged line
    code, out, err = _cb(capsys, ["results", "list", "--db", evil_db])
    _clean(out + err)
    assert 'owner="a\\x1b[2J' in out
    # the tag as shown (quoted, escaped) is the selector that picks its run
    shown = next(line for line in out.splitlines() if line.startswith("    1 ")).rsplit(" ", 1)[-1]
    code, out, err = _cb(capsys, ["results", "show", shown, "--json", "--db", evil_db])
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"kind": "run"' in x] == [1]


def test_json_output_stays_exact(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", "1", "--db", evil_db, "--json"])
    lines = [json.loads(line) for line in out.splitlines()]
    run = next(x for x in lines if x["kind"] == "run")
    assert run["tags"]["owner"] == EVIL and run["hosts"] == [f"node{ESC}1"]
    assert {m["benchmark"] for m in lines if m["kind"] == "measurement"} == {"all_reduce", f"mystery{ESC}"}


def test_error_line_escapes(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", f"tag:owner={EVIL}", "--db", evil_db])
    assert code == 2
    _clean(err)
    assert err.startswith("clusterbench: error: ") and err.count("\n") == 1


def test_results_show_of_rows_without_params(capsys, tmp_path):
    """A stream row without array_size was an internal error in ``results show``."""
    db = str(tmp_path / "bare.db")
    with Store.open(db) as store:
        for family in FAMILIES:
            bench = (family.benchmarks or tuple(f"{p}bw" for p in family.prefixes))[0]
            store.save_run(Run(benchmark=bench, ranks=1), [m(bench, 1.0, {}) for m in family.metrics])
    code, out, err = _cb(capsys, ["results", "show", "1-99", "--db", db])
    assert code == 0, err
    assert "internal error" not in err


def test_a_tag_stored_as_bytes_is_shown_escaped_and_never_copied(capsys, db, tmp_path):
    # SQLite keeps bytes in a text column (a number it makes text): a tag put in by hand as
    # x'ff00' gave "internal error: TypeError" in list, show and report, and results copy wrote
    # it as the text "b'\xff\x00'"
    stored = b"\xff\x00"
    with Store.open(db) as s:
        s.save_run(Run("stream", hosts=["h"]), [Measurement("stream", "bandwidth", 1.0, "GB/s", {})])
        s.save_run(Run("stream", hosts=["h"]), [Measurement("stream", "bandwidth", 2.0, "GB/s", {})])
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO run_tags VALUES (2, 'k', ?)", (stored,))
    shown = "\\xff\\x00"
    for argv in (["results", "list"], ["results", "show", "2"], ["report", "2", "-o", str(tmp_path / "r.html")],
                 ["compare", "1", "2"], ["validate", "2", "--profile", "cpu-smoke"]):
        code, out, err = cli(capsys, *argv, "--db", db)
        assert "internal error" not in err and code in (0, 1, 2), (argv, err)
    code, out, _ = cli(capsys, "results", "export", "2", "--db", db)
    assert json.loads(out.splitlines()[-1])["tags"] == {"k": shown}
    dest = tmp_path / "copy.db"
    code, out, err = cli(capsys, "results", "copy", "--from", db, "--to", dest)
    assert code == 2 and err.count("\n") == 1, err
    assert f"run 2 of {db} is not copied: its tag 'k' holds the bytes x'ff00', not text" in err
    with Store.open(dest) as s:   # run 1 went before it; run 2 never becomes the text of its escape
        assert [r.tags for r in s.list_runs()] == [{}]
