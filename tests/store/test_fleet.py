"""Tests of clusterbench.store.fleet: what the fleet commands ask of a store, answered by SQL the
same as by reading every run (SQLite and PostgreSQL)."""

from __future__ import annotations

import random

import pytest

from clusterbench.records import Measurement, Run
from clusterbench.store import Store, fleet
from clusterbench.store.headlines import epoch

HOSTS = ["gpu01", "gpu02", "gpu03"]


def _night(i: int, hour: int = 3) -> str:
    return f"2026-01-{i + 1:02d}T{hour:02d}:00:00.000Z"


@pytest.fixture
def history(any_db):
    """Three hosts, eight nights, runs stored out of time order (a log imported late), a night
    that measured only one GPU, and a run with two hosts."""
    rng = random.Random(3)
    order = [(n, h) for n in range(8) for h in HOSTS]
    rng.shuffle(order)
    runs = {}
    with Store.open(any_db) as store:
        for n, h in order:
            devices = ["0"] if n == 5 else ["0", "1"]
            ms = [Measurement("stream", "bandwidth", 100.0 + n + rng.random(), "GB/s",
                              {"kernel": "Triad", "array_size": 1024, "device": d, "host": h}) for d in devices]
            ms.append(Measurement("all_reduce", "busbw", 50.0 + n, "GB/s", {"bytes": 1 << 30, "host": h}))
            runs[(n, h)] = store.save_run(Run("run", hosts=[h], started_at=_night(n), tags={"night": str(n)}), ms)
        runs["pair"] = store.save_run(Run("coll", hosts=["gpu01", "gpu02"], started_at=_night(3, 5)),
                                      [Measurement("all_reduce", "busbw", 7.0, "GB/s", {"bytes": 8})])
    return any_db, runs


def _reference(store: Store, run_ids, since=None) -> dict:
    """The newest value of each (host, nodes, benchmark, params) by reading the headline view row
    by row, as a reader of every run would."""
    newest: dict = {}
    for run_id, started, host, nodes, bench, value, params in store.db.execute(
            "SELECT run_id, started_at, host, nodes, benchmark, value, params FROM headline_measurements").fetchall():
        if run_id not in run_ids or (since is not None and epoch(started) < since):
            continue
        key = (host, nodes, bench, str(params if isinstance(params, str) else sorted(params.items())))
        if key not in newest or (epoch(started), run_id) > newest[key][:2]:
            newest[key] = (epoch(started), run_id, value)
    return {k: v[2] for k, v in newest.items()}


def _got(values) -> dict:
    from clusterbench.store.headlines import params_text

    out = {}
    for v in values:
        params = params_text(v.params)
        out[(v.host, v.nodes, v.benchmark, params)] = v.value
    return out


def _normal(ref: dict) -> dict:
    import json

    from clusterbench.store.headlines import params_text

    out = {}
    for (host, nodes, bench, params), value in ref.items():
        p = json.loads(params) if params.startswith("{") else dict(eval(params))  # noqa: S307 - sorted items
        out[(host, nodes, bench, params_text(p))] = value
    return out


@pytest.mark.parametrize("selectors,since", [((), None), (("night=7",), None), (("1-12",), None), ((), epoch(_night(4)))])
def test_latest_is_the_newest_value_of_each_series(history, selectors, since):
    db, runs = history
    with Store.open(db) as store:
        sel = fleet.Selection(store, selectors, since)
        ids = set(sel.ids) if sel.ids is not None else set(runs.values())
        got = _got(fleet.latest(sel))
        assert got == _normal(_reference(store, ids, since))
    if not selectors and since is None:
        # night 5 measured only GPU 0: GPU 1's newest value is night 7's, its GPU 0's too
        assert len(got) == len(HOSTS) * 3 + 2


def test_a_host_s_values_come_series_by_series_in_time_order_and_windowed(history):
    db, runs = history
    with Store.open(db) as store:
        sel = fleet.Selection(store)
        values = fleet.host_values(sel, "gpu02")
        last3 = fleet.host_values(sel, "gpu02", last=3)
        assert fleet.hosts(store) == HOSTS
    series = {v.id for v in values}
    assert len(series) == 4   # two GPUs' Triad, busbw at 1 GiB, and the pair's busbw (2 nodes)
    for s in series:
        mine = [v for v in values if v.id == s]
        assert [v.started for v in mine] == sorted(v.started for v in mine)
        assert [v for v in last3 if v.id == s] == mine[-3:]


def test_newest_runs_and_the_change_token(history):
    db, runs = history
    with Store.open(db) as store:
        sel = fleet.Selection(store)
        newest = {(r.benchmark, r.hosts[0]): r.started for r in fleet.newest_runs(sel)}
        assert newest[("run", "gpu01")] == epoch(_night(7)) and newest[("coll", "gpu02")] == epoch(_night(3, 5))
        before = fleet.change_token(store)
        store.tag_runs([runs[(0, "gpu01")]], {"k": "v"})
        tagged = fleet.change_token(store)
        new = store.save_run(Run("x"), [])
        stored = fleet.change_token(store)
        store.delete_runs([new])
        deleted = fleet.change_token(store)
    # each differs from the one before it: what the cache compares with
    assert before != tagged != stored != deleted


@pytest.mark.parametrize("last", [1, 3, 100])
def test_newest_values_are_each_series_newest_through_the_index(history, last):
    db, runs = history
    with Store.open(db) as store:
        sel = fleet.Selection(store)
        every = {s.id: s for s in fleet.every_series(store)}
        want = {}
        for host in fleet.hosts(store):
            for v in fleet.host_values(sel, host, last=last):
                want.setdefault(v.id, set()).add((v.run, v.started, v.value))
        got = {}
        for sid, run, started, value in fleet.newest_values(sel, last):
            got.setdefault(sid, set()).add((run, started, value))
        starts = fleet.run_starts(store, [r for rows in got.values() for r, _, _ in rows])
        late = fleet.newest_values(fleet.Selection(store, since=epoch(_night(6))), last)
        assert {sid for sid, *_ in late} <= set(every)
        assert all(started >= epoch(_night(6)) for _, _, started, _ in fleet.newest_values(
            fleet.Selection(store, since=epoch(_night(6))), last))
    assert got == want and set(got) == set(every)
    assert all(len(rows) <= last for rows in got.values())
    assert {every[sid].host for sid in got} == set(HOSTS)
    assert starts[runs[(7, "gpu01")]] == _night(7)
