"""Read commands on many runs: the SQL statements a command runs do not grow with the runs it
reads (no query per run), batched reads give what per-run reads give, and a report builds each
group's rows once. Structure only: nothing here measures time."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import clusterbench.store.store as store_module
from clusterbench.cli import main
from clusterbench.judge import findings
from clusterbench.judge.changepoint import _candidates
from clusterbench.judge.findings import Group, gather
from clusterbench.judge.scaling import load_points
from clusterbench.judge.select import load_runs
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store

PROFILE = """\
name: probe-scale
description: floors far below the stored values
source: test
criteria:
  - name: all_reduce 1 MiB busbw
    source: test
    benchmark: all_reduce
    metric: busbw
    params: {bytes: 1048576}
    op: ">="
    value: 1
  - name: stream triad
    source: test
    benchmark: stream
    metric: bandwidth
    params: {kernel: Triad}
    op: ">="
    value: 1
"""


def _coll(rng: random.Random) -> list[Measurement]:
    ms = []
    for p in (10, 20, 24):
        for pl in ("out", "in"):
            v = 100 * (1 + rng.gauss(0, 0.02))
            params = {"bytes": 1 << p, "count": (1 << p) // 4, "dtype": "float", "redop": "sum", "root": -1,
                      "placement": pl, "ranks": 16}
            ms += [Measurement("all_reduce", "busbw", v, "GB/s", params),
                   Measurement("all_reduce", "algbw", v * 16 / 30, "GB/s", dict(params))]
    return ms


def _stream(rng: random.Random, hosts: list[str]) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", 3000 * (1 + rng.gauss(0, 0.01)), "GB/s",
                        {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": d, "host": h})
            for h in hosts for d in range(2) for k in ("Copy", "Triad")]


def _train(rng: random.Random) -> list[Measurement]:
    return [Measurement("train", "samples_per_s", 1000 * (1 + rng.gauss(0, 0.01)), "samples/s", {"stat": "avg"})]


def _fill(db: str, n: int) -> None:
    """``n`` collective runs on two hosts (half tagged grp=a, half grp=b), ``n`` stream runs with
    telemetry and ``n`` train runs: what compare, trend, report, theory and scaling read."""
    rng = random.Random(7)
    with Store.open(db) as s, s.transaction():
        for i in range(n):
            day = f"2026-01-{1 + i % 28:02d}T{i // 28:02d}:00:00Z"
            s.save_run(Run("coll", hosts=["node1", "node2"], ranks=16, started_at=day,
                           tags={"grp": "a" if i < n // 2 else "b", "link_speed": "100Gbps"}), _coll(rng))
            s.save_run(Run("stream", hosts=["node1"], ranks=2, started_at=day, tags={"kind": "stream"}),
                       _stream(rng, ["node1"]),
                       [TelemetrySample(0.5 * t, "power", 300.0 + t, "W", "node1", "0") for t in range(3)])
            s.save_run(Run("train", hosts=["node1", "node2"][: 1 + i % 2], ranks=8, started_at=day,
                           tags={"kind": "train"}), _train(rng))


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the stores opened from now on run (SQLite's trace callback)."""
    seen: list[str] = []
    real = store_module.connect

    def traced(where, readonly=False):
        backend = real(where, readonly)
        backend.conn.set_trace_callback(seen.append)
        return backend

    monkeypatch.setattr(store_module, "connect", traced)
    return seen


def _run_cli(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    assert not e.value.code, err
    return out


def _commands(n: int, tmp: Path) -> dict[str, list[str]]:
    coll = f"1-{3 * n}"   # every run: the commands skip what they cannot judge
    profile = tmp / "probe.yaml"
    profile.write_text(PROFILE)
    return {
        "results list": ["results", "list", "--limit", "10000"],
        "results list --json": ["results", "list", "--json", "--limit", "10000"],
        "results show": ["results", "show", coll],
        "results show --json": ["results", "show", "--json", coll],
        "results export --csv": ["results", "export", "--csv", coll],
        "results export": ["results", "export", coll],
        "compare": ["compare", "grp=a", "grp=b"],
        "trend": ["trend", "--benchmark", "stream"],
        "trend selectors": ["trend", "kind=stream", "grp=a"],
        "baseline create": ["baseline", "create", "grp=a", "-o", str(tmp / "base.yaml")],
        "validate": ["validate", "--profile", str(profile), coll],
        "theory": ["theory", "--run", "grp=a"],
        "scaling": ["scaling", "kind=train"],
        "env diff": ["env", "diff", "1", "2"],
        "export openmetrics": ["export", "openmetrics"],
    }


def _counts(tmp_path: Path, capsys, statements: list[str], n: int) -> dict[str, int]:
    db = str(tmp_path / f"runs{n}.db")
    _fill(db, n)
    counts = {}
    for name, argv in _commands(n, tmp_path).items():
        statements.clear()
        _run_cli(capsys, [*argv, "--db", db])
        counts[name] = len(statements)
    return counts


def test_read_commands_run_as_many_statements_for_many_runs_as_for_few(tmp_path, capsys, statements):
    few, many = _counts(tmp_path, capsys, statements, 4), _counts(tmp_path, capsys, statements, 40)
    assert many == few


def test_report_runs_as_many_statements_for_many_runs_as_for_few(tmp_path, capsys, statements):
    counts = []
    for n in (4, 16):
        db = str(tmp_path / f"runs{n}.db")
        _fill(db, n)
        statements.clear()
        _run_cli(capsys, ["report", "grp=a", "grp=b", "kind=stream", "-o", str(tmp_path / f"r{n}.html"),
                          "--db", db])
        counts.append(len(statements))
    assert counts[0] == counts[1]


def test_batched_reads_equal_per_run_reads(tmp_path, monkeypatch, statements):
    db = str(tmp_path / "runs.db")
    _fill(db, 7)
    monkeypatch.setattr(Store, "_CHUNK", 4)   # several chunks out of few runs
    with Store.open(db) as s:
        ids = [int(r.id or 0) for r in s.select("1-21")]
        statements.clear()
        by_run = s.measurements_by_run(ids)
        assert sum("FROM measurement_packs" in q for q in statements) == 6   # ceil(21 / 4)
        assert by_run == {rid: s.measurements(rid) for rid in ids}
        # a run asked for twice or not stored: as measurements() gives it
        assert s.measurements_by_run([3, 3, 999]) == {3: s.measurements(3), 999: []}
        assert s.telemetry_by_run(ids) == {rid: s.telemetry(rid) for rid in ids}
        assert s.measurement_counts(ids[:9]) == {rid: n for rid, n in s.measurement_counts().items()
                                                 if rid in ids[:9]}
        assert load_runs(s, ["grp=a", "kind=stream"]) == [(r, s.measurements(int(r.id or 0)))
                                                          for r in s.select_all(["grp=a", "kind=stream"])]
        points = load_points(s, ["kind=train"], "train", "samples_per_s", "nodes")
        assert [(p.run, p.throughput) for p in points] == [
            (int(r.id or 0), s.measurements(int(r.id or 0), "train")[0].value) for r in s.select("kind=train")]


def test_chunked_export_is_the_same_output(tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "runs.db")
    _fill(db, 5)
    whole = _run_cli(capsys, ["results", "export", "--csv", "1-15", "--db", db])
    monkeypatch.setattr(Store, "_CHUNK", 2)
    assert _run_cli(capsys, ["results", "export", "--csv", "1-15", "--db", db]) == whole


def test_a_groups_rows_are_made_once_and_follow_its_runs(tmp_path, monkeypatch):
    db = str(tmp_path / "runs.db")
    _fill(db, 6)
    made = []
    real = findings.rows_of

    def counted(runs):
        made.append(1)
        return real(runs)

    monkeypatch.setattr(findings, "rows_of", counted)
    with Store.open(db) as s:
        groups = [Group(sel, load_runs(s, [sel])) for sel in ("grp=a", "grp=b")]
    f = gather(groups)
    for _ in range(5):
        assert len(f.all_rows) == sum(len(ms) for g in groups for _, ms in g.runs)
    assert len(made) == 2
    # a caller changing a group's runs (or the list it got) sees the rows follow
    rows = groups[0].rows
    rows.clear()
    assert len(groups[0].rows) == sum(len(ms) for _, ms in groups[0].runs)
    _, ms = groups[0].runs[0]
    ms.append(Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8}))
    assert groups[0].rows[len(ms) - 1].m.value == 1.0
    groups[0].runs.pop()
    assert len(groups[0].rows) == sum(len(ms) for _, ms in groups[0].runs)


def _candidates_by_loop(n: int, min_size: int, inner: bool) -> tuple[list[int], list[int]]:
    """Every interval [i, j) a change can bound, pair by pair, in the order the scan uses."""
    ii, jj = [], []
    for i in ([0, *range(min_size, n - min_size + 1)] if inner else [0]):
        for j in range(i + min_size, n + 1):
            prefix_all = i == 0 and j == n
            short_tail = j < n and n - j < min_size
            if not prefix_all and not short_tail and n - (j - i) >= min_size:
                ii.append(i)
                jj.append(j)
    return ii, jj


@pytest.mark.parametrize("min_size", [1, 2, 3, 5])
@pytest.mark.parametrize("inner", [True, False])
def test_change_point_candidates_are_every_interval_in_order(min_size, inner):
    for n in range(0, 30):
        i, j = _candidates(n, min_size, inner)
        want_i, want_j = _candidates_by_loop(n, min_size, inner)
        assert i.dtype == j.dtype == np.asarray([0], dtype=int).dtype
        assert i.tolist() == want_i and j.tolist() == want_j
