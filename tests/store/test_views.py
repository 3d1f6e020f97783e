"""Tests of clusterbench.store.views: the ``measurements`` view holds every stored measurement,
unpacked in SQL from both pack formats, as Python reads them back (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from judge_helpers import json_lines, run_cli
from paths import TESTS

from clusterbench.ingest import parse_text
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.packs import ROWS, TABLE, Pack, Packs, storable

DATA = TESTS / "data"
LOGS = sorted(p for p in DATA.glob("*/*") if p.suffix not in (".md", ".db", ".yaml")
              and p.parent.name not in ("golden", "schemas", "sysfs") and p.is_file())


def _params(value: object) -> str:
    """Params as a comparable text: SQLite gives JSON text, PostgreSQL a dict."""
    return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True)


def _key(benchmark: str, metric: str, value: float, unit: str, params: object) -> tuple:
    # -0.0 and 0.0 are one number; JSON's 0 and 0.0 too
    return (benchmark, metric, float(value) + 0.0, unit, _params(params))


def _python(store: Store, run_id: int) -> Counter:
    return Counter(_key(m.benchmark, m.metric, m.value, m.unit, m.params) for m in store.measurements(run_id))


def _sql(store: Store, run_id: int) -> Counter:
    rows = store.db.execute("SELECT benchmark, metric, value, unit, params FROM measurements WHERE run_id=?",
                            (run_id,)).fetchall()
    return Counter(_key(*r) for r in rows)


def _store_logs(db: str, logs: list[Path]) -> list[int]:
    ids = []
    with Store.open(db) as store:
        for path in logs:
            try:
                found = parse_text(path.read_text(errors="replace"), name=path.name)
            except Exception:   # noqa: BLE001 - logs kept to test refusals: not this test's business
                continue
            for imported in found:
                if len(imported):
                    ids.append(store.save_run_rows(imported.run, imported.store_rows()))
    return ids


def test_the_view_holds_every_measurement_of_every_real_log(any_db):
    ids = _store_logs(any_db, LOGS)
    assert len(ids) > 50
    with Store.open(any_db) as store:
        formats = {f for (f,) in store.db.execute("SELECT DISTINCT format FROM measurement_packs").fetchall()}
        assert formats == {ROWS, TABLE}
        for run_id in ids:
            assert _sql(store, run_id) == _python(store, run_id), run_id
        # and the view's count is the count of what `results export` writes (issue 31)
        (busbw,) = store.db.execute("SELECT count(*) FROM measurements WHERE metric = 'busbw'").fetchone()
    rc, out, err = run_cli("results", "export", f"{min(ids)}-{max(ids)}", "--db", any_db)
    assert rc == 0, err
    exported = [d for d in json_lines(out) if d["kind"] == "measurement" and d["metric"] == "busbw"]
    assert busbw == len(exported) > 1000


def test_the_view_names_the_run_its_start_and_its_host(any_db):
    with Store.open(any_db) as store:
        a = store.save_run(Run("stream", hosts=["h1"], started_at="2026-01-02T03:04:05.000Z"),
                           [Measurement("stream", "bandwidth", 1.5, "GB/s", {"kernel": "Copy", "device": "0"}),
                            Measurement("stream", "bandwidth", 2.5, "GB/s", {"kernel": "Copy", "host": "other"})])
        b = store.save_run(Run("coll", hosts=["n1", "n2"], tags={"node": "gpu07"}),
                           [Measurement("all_reduce", "busbw", 3.0, "GB/s", {"bytes": 8})])
        c = store.save_run(Run("coll", hosts=["n1", "n2"]), [Measurement("all_reduce", "busbw", 4.0, "GB/s", {})])
        rows = store.db.execute("SELECT run_id, started_at, host, value FROM measurements ORDER BY value").fetchall()
    assert [tuple(r) for r in rows] == [(a, "2026-01-02T03:04:05.000Z", "h1", 1.5), (a, "2026-01-02T03:04:05.000Z", "other", 2.5),
                                        (b, rows[2][1], "gpu07", 3.0), (c, rows[3][1], "n1,n2", 4.0)]


# A table as nccl-tests prints it, with the tokens a log may hold that SQL reads otherwise than
# Python: the store writes those tables as rows packs, and the view holds the same records.
HEADER = json.dumps({"benchmark": "all_reduce", "lead": [["bytes", "int"], ["count", "int"], ["dtype", "str"]],
                     "cols": [["time_us", "us", {"placement": "out"}], None, ["busbw", "GB/s", {"placement": "out"}]],
                     "const": {"ranks": 8, "redop": "sum"}, "order": ["bytes", "count", "dtype", "redop", "placement",
                                                                        "ranks"]})
ODD = ["12.5", "N/A", "0", "-0.00", "1e5", "1E-05", "7*", "8,", "+1", ".5", "-.5", "1.", "01", "1_000", "1e999",
       "1e-400", "nan", "inf", "-Infinity", "0x1F", "1.2.3", "--1", "e5", "12e-300", "5" * 310]


@pytest.mark.parametrize("token", ODD)
def test_a_table_token_reads_the_same_in_sql_as_in_python(any_db, token):
    text = f"   1024    256  float  {token}  x  2.5\n  2048 512 float 3.5 y {token}\n"
    count = sum(1 for t in (token, "2.5", "3.5", token) if _number(t))
    pack = Pack(TABLE, count, HEADER + "\n" + text, ("all_reduce",))
    with Store.open(any_db) as store:
        run_id = store.save_run_rows(Run("import"), Packs([pack]))
        assert _sql(store, run_id) == _python(store, run_id)
        assert sum(_python(store, run_id).values()) == count


def _number(token: str) -> bool:
    from clusterbench.store.packs import number

    return number(token) is not None


@pytest.mark.parametrize("text", ['1 2 fl"oat 3 4 5', "1 2 f\\x 3 4 5", "1\t2 float\r 3 4 5", "1 2 float" + " " * 70 + "3 4 5",
                                  "1 2 floät 3 4 5", "1 2 float 3 4 5\n\n\n 8 9 half 1 2 3  \n"])
def test_what_sql_cannot_split_is_stored_as_rows_and_read_the_same(any_db, text):
    pack = Pack(TABLE, 4, HEADER + "\n" + text, ("all_reduce",))
    with Store.open(any_db) as store:
        run_id = store.save_run_rows(Run("import"), Packs([pack]))
        assert _sql(store, run_id) == _python(store, run_id)


def test_storable_keeps_a_table_sql_reads_and_converts_others():
    plain = Pack(TABLE, 2, HEADER + "\n      1024   256   float   12.5   x   2.5  \n", ("all_reduce",))
    assert storable(plain) is plain
    odd = Pack(TABLE, 2, HEADER + "\n1024 256 float 12.5 x .5\n", ("all_reduce",))
    converted = storable(odd)
    assert converted.format == ROWS and converted.count == 2
    # a header SQL would merge otherwise (a constant that is an object, a param order leaves out)
    for header in (dict(json.loads(HEADER), const={"ranks": {"a": 1}}), dict(json.loads(HEADER), order=["bytes"])):
        assert storable(Pack(TABLE, 2, json.dumps(header) + "\n1024 256 float 1 x 2\n")).format == ROWS


def test_values_read_back_exactly(any_db):
    values = [0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, 123456.789, -2.5e-7, 2.0 ** 60, math.pi]
    with Store.open(any_db) as store:
        run_id = store.save_run(Run("x"), [Measurement("stream", "bandwidth", v, "GB/s", {"i": i})
                                           for i, v in enumerate(values)])
        got = store.db.execute("SELECT value FROM measurements WHERE run_id=? ORDER BY seq", (run_id,)).fetchall()
    assert [r[0] for r in got] == values


def test_a_nul_in_a_measurement_s_text_does_not_break_the_view(any_db):
    """A run keeps a NUL escaped in its JSON (store/nul.py): SQLite's view gives it back,
    PostgreSQL's (jsonb holds none) gives U+FFFD; the other rows are there either way."""
    with Store.open(any_db) as store:
        run_id = store.save_run(Run("x", hosts=["h\x00"]), [
            Measurement("stream", "bandwidth", 1.0, "GB/s", {"kernel": "Tri\x00ad"}),
            Measurement("stream", "bandwidth", 2.0, "GB/s", {"kernel": "Triad"})])
        rows = store.db.execute("SELECT value, params FROM measurements WHERE run_id=? ORDER BY value",
                                (run_id,)).fetchall()
        kernels = [json.loads(p)["kernel"] if isinstance(p, str) else p["kernel"] for _, p in rows]
        nul = "\x00" if store.db.kind == "sqlite" else "\ufffd"
        assert [r[0] for r in rows] == [1.0, 2.0] and kernels == [f"Tri{nul}ad", "Triad"]
        # no headline series holds a NUL: that row has none
        assert store.db.execute("SELECT count(*) FROM headline_measurements").fetchone()[0] == 0


SQL_DASHBOARD = TESTS.parent / "docs" / "grafana" / "clusterbench-sql.json"


def _grafana_sql(sql: str) -> str:
    """A panel's SQL as Grafana's PostgreSQL data source sends it: the time filter macro and the
    ``$op`` variable expanded."""
    import re

    sql = re.sub(r"\$__timeFilter\(([^()]*(?:\([^()]*\))?[^()]*)\)",
                 r"\1 BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'", sql)
    return sql.replace("$op", "all_reduce")


@pytest.mark.system
def test_the_sql_dashboard_s_queries_run_on_postgresql_and_find_the_runs(pg_server):
    from fleet_helpers import night

    dash = json.loads(SQL_DASHBOARD.read_text())
    assert dash["__inputs"][0]["pluginId"] == "grafana-postgresql-datasource"
    queries = [t["rawSql"] for p in dash["panels"] for t in p["targets"]]
    queries += [v["query"] for v in dash["templating"]["list"]]
    name = pg_server.create_db()
    try:
        url = pg_server.url(name)
        with Store.open(url) as store:
            for n in range(3):
                for host, busbw in (("gpu01", 300.0), ("gpu02", 240.0)):
                    ms = [Measurement("all_reduce", "busbw", busbw + n, "GB/s",
                                      {"bytes": 1 << 33, "placement": "out", "host": host}),
                          Measurement("stream", "bandwidth", 3000.0 - n, "GB/s",
                                      {"kernel": "Triad", "device": "0", "host": host})]
                    store.save_run(Run("run", hosts=[host], started_at=night(n)), ms)
            got = [store.db.execute(_grafana_sql(q)).fetchall() for q in queries]
    finally:
        pg_server.drop_db(name)
    busbw, triad, slowest, per_night, ops = got
    assert len(busbw) == 6 and {r[1] for r in busbw} == {"gpu01", "gpu02"}
    assert len(triad) == 3 and [r[1] for r in triad] == [3000e9, 2999e9, 2998e9]
    assert [r[0] for r in slowest] == ["gpu02", "gpu01"] and slowest[0][1] == 242.0
    assert [r[1] for r in per_night] == [2, 2, 2] and ops == [("all_reduce",)]
