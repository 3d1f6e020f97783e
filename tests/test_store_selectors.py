"""The selector grammar (``clusterbench.store.selectors``), run as SQL by the store on both
engines (an SQLite file and a real PostgreSQL database), and through the commands that take it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from judge_helpers import run_cli

from clusterbench.errors import UsageError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.selectors import parse_selector, parse_since


@pytest.fixture
def db(any_db):
    return any_db


def _m(bench: str) -> Measurement:
    return Measurement(bench, "bandwidth", 1.0, "GB/s", {})


# (benchmark column, source, started_at, tags, measured benchmarks)
RUNS = [
    ("coll", "clusterbench 0.1.0", "2026-11-01T10:00:00.000Z", {"env": "a"}, ["all_reduce", "all_gather"]),
    ("stream", "clusterbench 0.1.0", "2026-11-10T10:00:00.000Z", {"env": "a", "node": "n1"}, ["stream"]),
    ("import", "rccl-tests develop:ae3e635", "2026-11-20T10:00:00.000Z", {"env": "b"}, ["all_reduce"]),
    ("import", "osu 7.0", "2026-11-21T10:00:00.000Z", {"env": "b"}, ["osu_bw"]),
    ("import", "babelstream 5.0", "2026-11-22T10:00:00.000Z", {"env": "b", "node": "n1"}, ["stream"]),
    ("suite", "clusterbench 0.1.0", "2026-11-23T10:00:00.000Z", {"env": "a"}, ["sendrecv", "stream", "gemm"]),
]


@pytest.fixture
def store(db):
    with Store.open(db) as s:
        for bench, source, started, tags, measured in RUNS:
            s.save_run(Run(benchmark=bench, source=source, started_at=started, tags=tags, hosts=["h1"],
                           meta={"tool": source.split()[0]} if bench == "import" else {}),
                       [_m(b) for b in measured])
        yield s


@pytest.mark.parametrize("selector, ids", [
    ("3", [3]),
    ("2..4", [2, 3, 4]),
    ("2-4", [2, 3, 4]),
    ("2 .. 4", [2, 3, 4]),
    ("last", [6]),
    ("last~0", [6]),
    ("last~2", [4]),
    ("env=a", [1, 2, 6]),
    ("env=b,node=n1", [5]),
    ("last,env=b", [5]),            # last of those the other terms match
    ("last~1,env=a", [2]),
    ("bench:all_reduce", [1, 3]),
    ("bench:allreduce", [1, 3]),    # an alias of a benchmark
    ("bench:collectives", [1, 3, 6]),  # a family
    ("bench:osu", [4]),             # a family known by a prefix (osu_*) and a tool
    ("bench:osu_bw", [4]),
    ("bench:rccl-tests", [3]),      # an imported log's tool
    ("bench:babelstream", [5]),
    ("bench:stream", [2, 5, 6]),
    ("bench:stream,env=a", [2, 6]),
    ("bench:stream,bench:gemm", [6]),
    ("1..6,bench:collectives,env=b", [3]),
    ("4,env=b", [4]),
])
def test_selectors(store, selector, ids):
    assert [r.id for r in store.select(selector)] == ids


def test_since(store):
    since = parse_since("2026-11-20")
    assert since == "2026-11-20T00:00:00.000Z"
    assert [r.id for r in store.select("env=b", since)] == [3, 4, 5]
    assert [r.id for r in store.select("last~1", since)] == [5]
    assert [r.id for r in store.select_all(["2", "env=a"], parse_since("2026-11-05T00:00"))] == [2, 6]
    with pytest.raises(UsageError, match="matches no run since"):
        store.select("env=a", parse_since("2026-11-23T12:00:00+00:00"))
    assert [r.id for r in store.list_runs(benchmark="stream", since=since)] == [6, 5]


@pytest.mark.parametrize("selector, msg", [
    ("env=nothing", "matches no run"),
    ("9", "no run 9 in"),
    ("99999999999999999999", "run id 99999999999999999999 is out of range"),
    ("7..3", "runs backwards"),
    ("last~x", "is not a run id"),
    ("last~99999999999999999999", "out of range"),
    ("last,last~1", "last given twice"),
    ("garbage", "'garbage' is not a run id"),
    ("bench:", "empty benchmark name"),
    ("", "empty selector"),
    ("bench:nothing", "matches no run"),
])
def test_bad_selectors(store, selector, msg):
    with pytest.raises(UsageError, match=msg):
        store.select(selector)


def test_parse_since_ages():
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    assert parse_since("7d", now) == "2026-11-16T12:00:00.000Z"
    assert parse_since("12h", now) == "2026-11-23T00:00:00.000Z"
    assert parse_since("30m", now) == "2026-11-23T11:30:00.000Z"
    assert parse_since("2w", now) == "2026-11-09T12:00:00.000Z"
    assert parse_since("1.5d", now) == "2026-11-22T00:00:00.000Z"
    # longer ago than the calendar goes: every run, not an overflow
    assert parse_since("99999999d", now) == parse_since("9" * 5000 + "w", now) == "0001-01-01T00:00:00.000Z"
    assert parse_since("2026-11-01T08:00:00+02:00", now) == "2026-11-01T06:00:00.000Z"
    with pytest.raises(UsageError, match="invalid --since"):
        parse_since("last week", now)


def test_parse_selector_terms():
    sel = parse_selector("3..7,last~2,env=prod,bench:all_reduce")
    assert sel.ranges == ((3, 7),) and sel.last == 2 and sel.tags == {"env": "prod"}
    assert sel.benchmarks[0].benchmarks == ("all_reduce",) and sel.benchmarks[0].tool == "all_reduce"


def test_run_benchmarks_are_kept_and_backfilled(store):
    assert store.run_benchmarks([1, 6]) == {1: ["all_gather", "all_reduce"], 6: ["gemm", "sendrecv", "stream"]}
    store.delete_runs([1])
    assert store.db.execute("SELECT count(*) FROM run_benchmarks WHERE run_id=1").fetchone()[0] == 0


def test_every_command_takes_the_grammar(store, db, tmp_path):
    """results show last works (it was an error while env show last worked), and the same
    selectors pick the same runs in every command."""
    code, out, _ = run_cli("results", "show", "last", "--json", "--db", db)
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"run"' in x[:20]] == [6]
    code, out, _ = run_cli("results", "show", "bench:collectives", "--since", "2026-11-15", "--json", "--db", db)
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"run"' in x[:20]] == [3, 6]
    code, out, _ = run_cli("results", "export", "2-3", "--csv", "--db", db)
    assert code == 0 and sorted({x.split(",")[0] for x in out.splitlines()[1:]}) == ["2", "3"]
    code, _, _ = run_cli("results", "tag", "bench:osu", "checked=yes", "--db", db)
    assert code == 0 and [r.id for r in store.select("checked=yes")] == [4]
    code, out, _ = run_cli("env", "show", "last~1", "--db", db)
    assert code == 0 and out.startswith("# run 5,")
    code, out, err = run_cli("results", "delete", "env=b,node=n1", "--db", db)
    assert code == 0 and out == "deleted run 5\n"
    code, _, err = run_cli("results", "show", "99999999999999999999", "--db", db)
    assert code == 2 and err == ("clusterbench: error: invalid selector '99999999999999999999': "
                                 "run id 99999999999999999999 is out of range\n")
