"""Tests of clusterbench.store.headlines: each run's headline series, written with the run, moved
when its node tag changes, and derived for runs stored before (migration 0011)."""

from __future__ import annotations

import json

import pytest
from paths import TESTS

from clusterbench.ingest import parse_text
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.headlines import UNKNOWN_TIME, epoch
from clusterbench.store.migrations import MIGRATIONS, statements
from clusterbench.store.packs import pack_measurements

A3MEGA = TESTS / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


def _node_run(host: str) -> list[Measurement]:
    ms = [Measurement("all_reduce", "busbw", 100.0 + s, "GB/s", {"bytes": 1 << s, "placement": "in", "host": host})
          for s in (20, 30)]
    ms += [Measurement("stream", "bandwidth", 3000.0 + d, "GB/s",
                       {"kernel": k, "array_size": 1 << 28, "device": str(d), "host": host})
           for d in range(2) for k in ("Copy", "Triad")]
    ms.append(Measurement("stream", "time_us", 5.0, "us", {"kernel": "Triad", "device": "0", "stat": "min", "host": host}))
    return ms


def _headlines(store: Store, run_id: int | None = None) -> list[tuple]:
    sql = "SELECT run_id, host, nodes, benchmark, metric, value, params FROM headline_measurements"
    rows = store.db.execute(sql + (" WHERE run_id=?" if run_id is not None else ""),
                            (run_id,) if run_id is not None else ()).fetchall()
    return sorted((r[0], r[1], r[2], r[3], r[4], r[5], json.dumps(json.loads(r[6]) if isinstance(r[6], str) else r[6],
                                                                  sort_keys=True)) for r in rows)


def test_a_run_s_headline_series_are_written_with_it(any_db):
    with Store.open(any_db) as store:
        a = store.save_run(Run("run", hosts=["gpu01"], started_at="2026-01-01T03:00:00.000Z"), _node_run("gpu01"))
        b = store.save_run(Run("run", hosts=["gpu01"], started_at="2026-01-02T03:00:00.000Z"), _node_run("gpu01"))
        rows = _headlines(store)
        series = store.db.execute("SELECT count(*) FROM series").fetchone()[0]
        started = sorted(r[0] for r in store.db.execute("SELECT DISTINCT started FROM headlines").fetchall())
    # busbw at 1 GiB (the largest size), Triad on each GPU: 3 series, the same for both nights
    assert series == 3 and len(rows) == 6
    assert {(r[3], r[6]) for r in rows} == {
        ("all_reduce", '{"bytes": 1073741824, "placement": "in"}'),
        ("stream", '{"array_size": 268435456, "device": "0", "kernel": "Triad"}'),
        ("stream", '{"array_size": 268435456, "device": "1", "kernel": "Triad"}')}
    assert {r[0] for r in rows} == {a, b} and {r[1] for r in rows} == {"gpu01"}
    assert started == [epoch("2026-01-01T03:00:00.000Z"), epoch("2026-01-02T03:00:00.000Z")]


def test_series_are_taken_once_per_host_in_a_transaction_and_reused_after_it(any_db):
    """New series get their ids at once (SQLite: the next ids under the write lock; PostgreSQL:
    one INSERT returning them); a host's series are found again in a later transaction."""
    def run(host: str, day: int) -> Run:
        return Run("run", hosts=[host], started_at=f"2026-01-{day:02d}T03:00:00.000Z")

    with Store.open(any_db) as store:
        with store.transaction():
            first = [store.save_run(run(h, d), _node_run(h)) for d, h in enumerate(("g1", "g2", "g1"), 1)]
        later = store.save_run(run("g2", 9), _node_run("g2"))
        series = store.db.execute("SELECT id, host FROM series").fetchall()
        rows = store.db.execute("SELECT run_id, series_id FROM headlines").fetchall()
    assert sorted(h for _, h in series) == ["g1"] * 3 + ["g2"] * 3 and len({i for i, _ in series}) == 6
    by_run: dict[int, set[int]] = {}
    for run_id, sid in rows:
        by_run.setdefault(run_id, set()).add(sid)
    hosts = dict(series)
    assert by_run[first[0]] == by_run[first[2]] and by_run[first[1]] == by_run[later]
    assert {hosts[i] for i in by_run[first[0]]} == {"g1"} and {hosts[i] for i in by_run[later]} == {"g2"}
    assert len(by_run[first[0]]) == 3


def test_a_result_of_several_hosts_is_a_series_on_each_and_a_node_tag_moves_it(any_db):
    m = [Measurement("all_reduce", "busbw", 42.0, "GB/s", {"bytes": 8})]
    with Store.open(any_db) as store:
        run_id = store.save_run(Run("coll", hosts=["n1", "n2", "n1"]), m)
        assert [(r[1], r[2]) for r in _headlines(store, run_id)] == [("n1", 2), ("n2", 2)]
        store.tag_runs([run_id], {"node": "gpu07"})
        assert [(r[1], r[2]) for r in _headlines(store, run_id)] == [("gpu07", 1)]
        store.tag_runs([run_id], {"team": "x"})   # other tags move nothing
        assert [(r[1], r[2]) for r in _headlines(store, run_id)] == [("gpu07", 1)]
        store.delete_runs([run_id])
        assert _headlines(store) == []


def test_a_table_pack_s_headline_series_are_those_of_its_records(db):
    """An nccl-tests log is stored as table packs: their headline rows are read from the rows at
    the largest size only, and are the ones its records give."""
    (imported,) = parse_text(A3MEGA.read_text(), name=A3MEGA.name)
    with Store.open(db) as store:
        packed = store.save_run_rows(imported.run, imported.store_rows())
        measured = store.save_run(imported.run, imported.measurements)
        a, b = _headlines(store, packed), _headlines(store, measured)
    assert [r[1:] for r in a] == [r[1:] for r in b] and len(a) == 4   # in and out of place, on both hosts
    assert {json.loads(r[6])["bytes"] for r in a} == {8 << 30}


def test_json_lines_packed_by_the_import_give_the_headline_rows_of_their_measurements(db):
    """clusterbench's JSON lines reach the store packed, with only the run's headline records
    decoded beside the pack: the same rows as its measurements stored one by one, a line decoded
    on its own (another spacing, an escape) among them."""
    from clusterbench.report.jsonl import measurement_line

    ms = _node_run("gpu01") + [Measurement("gemm", "tflops", 700.0 + d, "TFLOP/s", {"dtype": dt, "device": str(d)})
                               for d in range(2) for dt in ("bf16", "fp8")]
    lines = [json.dumps(measurement_line(m, 7)) for m in ms]
    lines[1] = lines[1].replace(", ", ",")   # not the printed format: read by the general reader
    lines[-1] = lines[-1].replace('"fp8"', '"fp\\u0038"')
    run = {"kind": "run", "id": 7, "benchmark": "run", "source": "clusterbench", "command": ["clusterbench"],
           "started_at": "2026-01-01T03:00:00.000Z", "ended_at": None, "status": "complete", "hosts": ["gpu01"],
           "ranks": 2, "devices": [], "versions": {}, "env": {}, "tags": {}, "errors": [], "meta": {}}
    (imported,) = parse_text("\n".join([*lines, json.dumps(run)]) + "\n", name="night.jsonl")
    assert imported.store_rows().decoded is not None
    with Store.open(db) as store:
        packed = store.save_run_rows(imported.run, imported.store_rows())
        measured = store.save_run(imported.run, imported.measurements)
        a, b = _headlines(store, packed), _headlines(store, measured)
    assert [r[1:] for r in a] == [r[1:] for r in b] and len(a) == 5   # busbw, Triad and gemm on each GPU


def test_a_rolled_back_import_leaves_no_series_behind(db):
    with Store.open(db) as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.save_run(Run("run", hosts=["gpu01"]), _node_run("gpu01"))
            raise RuntimeError("interrupted")
        assert store.db.execute("SELECT count(*) FROM series").fetchone()[0] == 0
        with store.transaction():
            run_id = store.save_run(Run("run", hosts=["gpu01"]), _node_run("gpu01"))
        assert len(_headlines(store, run_id)) == 3


def test_runs_stored_before_get_their_series_when_the_database_is_migrated(any_db):
    from clusterbench.store import connect, location

    backend = connect(location.parse(any_db))
    with backend.write():
        backend.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for m in MIGRATIONS[:-1]:
            for step in m.steps:
                if isinstance(step, str):
                    for stmt in statements(step, backend):
                        backend.execute(stmt)
                else:
                    step(backend)
            backend.execute("INSERT INTO schema_migrations VALUES (?, ?)", (m.name, "2026-01-01 00:00:00"))
        for i, host in enumerate(("gpu01", "gpu02")):
            run_id = backend.insert_id("runs", ("benchmark", "started_at", "status", "hosts"),
                                       ("run", f"2026-01-0{i + 1}T03:00:00Z", "complete", json.dumps([host])))
            pack = pack_measurements(_node_run(host))
            backend.execute("INSERT INTO measurement_packs (run_id, format, count, body) VALUES (?, ?, ?, ?)",
                            (run_id, pack.format, pack.count, pack.body))
        # a run whose pack does not read back gets no series, and does not stop the migration
        broken = backend.insert_id("runs", ("benchmark", "started_at", "status"), ("run", "garbage", "complete"))
        backend.execute("INSERT INTO measurement_packs (run_id, format, count, body) VALUES (?, 'rows', 1, '{')",
                        (broken,))
    backend.close()
    with Store.open(any_db) as store:
        assert MIGRATIONS[-1].name in store.applied_migrations()
        rows = _headlines(store)
    assert len(rows) == 6 and {r[1] for r in rows} == {"gpu01", "gpu02"}


def test_a_start_time_that_does_not_read_is_first_in_time_order():
    assert epoch("2026-01-01T00:00:00Z") == epoch("2026-01-01T01:00:00+01:00") == 1767225600.0
    assert epoch("2026-01-01T00:00:00") == 1767225600.0   # no offset: UTC, as runs are stored
    assert epoch("not a time") == epoch(None) == UNKNOWN_TIME < 0
