"""baseline create, scaling and trend driven from the command line as an operator would: runs of
imported logs, runs without hosts, failed runs, medians of 0, figures past the largest float,
series of tiny values. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import json_lines, run_cli

from clusterbench.judge.changepoint import find_changes, l1_interval
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

DATA = Path(__file__).parent / "data" / "nccl-tests"
ROW = {"bytes": 1 << 30, "dtype": "float", "redop": "sum", "placement": "out", "ranks": 8}


def _busbw_run(store: Store, value: float, tags: dict[str, str], status: str = "complete") -> int:
    run = Run(benchmark="coll", hosts=["h1"], ranks=8, tags=tags, status=status)
    return store.save_run(run, [Measurement("all_reduce", "busbw", value, "GB/s", ROW)])


def _train_run(store: Store, hosts: list[str], value: float, tags: dict[str, str], ranks: int = 8) -> int:
    run = Run(benchmark="train", hosts=hosts, ranks=ranks, tags=tags)
    return store.save_run(run, [Measurement("train", "samples_per_s", value, "samples/s", {"stat": "avg"})])


# --- baseline create ---------------------------------------------------------------------------


def test_baseline_leaves_out_failed_and_incomplete_runs(tmp_path):
    """A failed run (wrong results) was averaged into a "known-good" bound without a word: with
    two good runs and one failed at 20 GB/s the median, and so the bound, fell."""
    db, out = tmp_path / "b.db", tmp_path / "golden.yaml"
    with Store.open(db) as store:
        good = [_busbw_run(store, v, {"env": "golden"}) for v in (100.0, 102.0)]
        bad = _busbw_run(store, 20.0, {"env": "golden"}, status="failed")
    code, text, err = run_cli("baseline", "create", "env=golden", "-o", out, "--json", "--db", db)
    assert code == 0, err
    [summary] = json_lines(text)
    assert summary["runs"] == good
    assert f"left out run {bad}: its status is failed" in err
    assert "median 101 GB/s" in out.read_text()


def test_baseline_of_failed_runs_only_is_refused(tmp_path):
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        ids = [_busbw_run(store, 100.0, {"env": "x"}, status=s) for s in ("failed", "incomplete")]
    code, _, err = run_cli("baseline", "create", "env=x", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert err.strip() == (f"clusterbench: error: none of run(s) {ids[0]}, {ids[1]} is complete: no known-good "
                           "run to build a baseline from")
    assert not (tmp_path / "p.yaml").exists()


def test_baseline_of_rows_at_zero_says_so(tmp_path):
    """Rows whose median is 0 were dropped unseen, and with nothing else the error said the runs
    had no busbw measurements at all."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        for _ in range(3):
            store.save_run(Run(benchmark="coll", hosts=["h1"], ranks=8, tags={"env": "z"}),
                           [Measurement("all_reduce", "busbw", 0.0, "GB/s", ROW),
                            Measurement("all_reduce", "time_us", 10.0, "us", ROW)])
    code, _, err = run_cli("baseline", "create", "env=z", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert "have a median of 0 or below" in err and "no headline measurements" not in err
    # beside a row that makes a bound, the one at 0 is named on stderr, with --json too
    code, text, err = run_cli("baseline", "create", "env=z", "-o", tmp_path / "p.yaml", "--metric", "busbw",
                              "--metric", "time_us", "--json", "--db", db)
    assert code == 0
    assert json_lines(text)[0]["criteria"] == 1
    assert "# skipped all_reduce busbw" in err and "median 0 over 3 run(s)" in err


def test_baseline_error_names_the_runs_without_rows(tmp_path):
    """A run with no measurement at all gave "runs  have no headline measurements": no run named."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        rid = store.save_run(Run(benchmark="coll", hosts=["h1"], ranks=8, tags={"env": "e"}), [])
    code, _, err = run_cli("baseline", "create", "env=e", "-o", tmp_path / "p.yaml", "--db", db)
    assert code == 2
    assert f"runs {rid} have no headline measurements" in err


def test_baseline_pct_just_above_100_is_shown_as_given(tmp_path):
    """``:g`` printed 100.0001 as "got 100", a value the check accepts."""
    db = tmp_path / "b.db"
    with Store.open(db) as store:
        _busbw_run(store, 100.0, {"env": "p"})
    code, _, err = run_cli("baseline", "create", "env=p", "-o", tmp_path / "p.yaml", "--pct", "100.0001",
                           "--db", db)
    assert code == 2
    assert "got 100.0001" in err


# --- scaling -----------------------------------------------------------------------------------


def test_scaling_of_imported_logs_tagged_with_their_node_count(tmp_path):
    """Imported runs are stored as benchmark ``import``: ``--benchmark all_reduce`` found "no
    complete all_reduce run" in a database of them. The 4-node log names no host: its ``nodes``
    tag gives its count (it was counted as 1 node and averaged into the baseline)."""
    db = tmp_path / "n.db"
    for name, nodes in (("seed-mi300x-rccl-all_reduce-8gpu.txt", 1), ("a3mega-h100-2node-all_reduce.txt", 2),
                        ("seed-tensorwave-mi355x-4node-all_reduce.txt", 4)):
        code, _, err = run_cli("import", DATA / name, "--tag", f"nodes={nodes}", "--tag", "g=x", "--db", db)
        assert code == 0, err
    code, text, err = run_cli("scaling", "g=x", "--benchmark", "all_reduce", "--metric", "avg_busbw",
                              "--json", "--db", db)
    assert code == 0, err
    speedups = {m["params"]["nodes"]: m for m in json_lines(text) if m["metric"] == "speedup"}
    assert sorted(speedups) == [1, 2, 4]
    assert all(m["params"]["runs"] == 1 for m in speedups.values())


def test_scaling_run_without_hosts_or_nodes_tag_is_refused(tmp_path):
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 4.0, {"g": "a"})
        rid = _train_run(store, [], 9.0, {"g": "a"}, ranks=0)
    code, _, err = run_cli("scaling", "g=a", "--db", db)
    assert code == 2
    assert f"run {rid} records no hosts and has no nodes tag" in err
    code, _, err = run_cli("scaling", "g=a", "--by", "ranks", "--db", db)
    assert code == 2
    assert f"run {rid} records no rank count" in err


def test_scaling_json_past_the_largest_float_is_valid(tmp_path):
    """A speedup of 2e+631 was a `measurement` with value null, which the schema refuses."""
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 5e-324, {"g": "huge"})
        _train_run(store, ["n0", "n1"], 1e308, {"g": "huge"})
    code, text, err = run_cli("scaling", "g=huge", "--json", "--db", db)
    assert code == 0, err
    lines = json_lines(text)   # every line checked against the published schema
    assert [(x["kind"], x.get("metric")) for x in lines] == [
        ("measurement", "speedup"), ("measurement", "scaling_efficiency"), ("note", None), ("note", None)]
    assert "speedup of g=huge at 2 nodes is 2e+631" in lines[2]["text"]


def test_scaling_selector_twice_counts_each_run_once(tmp_path):
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 3.0, {"g": "d"})
        _train_run(store, ["n0", "n1"], 6.0, {"g": "d"})
    code, text, _ = run_cli("scaling", "g=d", "g=d", "--json", "--db", db)
    assert code == 0
    assert [m["params"]["runs"] for m in json_lines(text)] == [1, 1, 1, 1]


def test_scaling_empty_baseline_selector_is_refused(tmp_path):
    """``--baseline ''`` was taken as no baseline at all, silently."""
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 3.0, {"g": "d"})
    code, _, err = run_cli("scaling", "g=d", "--baseline", "", "--db", db)
    assert code == 2
    assert "empty selector" in err


# --- trend -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-15, 1e-300])
def test_trend_tiny_values_find_the_one_step(scale):
    """A fixed 1e-12 tie margin in the L1 location swallowed every cost of tiny values: the first
    candidate won and steps were reported every 3 runs inside flat stretches."""
    x = [(100.0 + (i % 3)) * scale for i in range(15)] + [(80.0 + (i % 3)) * scale for i in range(15)]
    assert [c.index for c in find_changes(x)] == [15]
    assert l1_interval(x, 3, inner=False) == (0, 15)


def test_trend_subnormal_series_from_the_cli(tmp_path):
    db = tmp_path / "t.db"
    with Store.open(db) as store:
        for i in range(30):
            run = Run(benchmark="coll", hosts=["h1"], ranks=8, started_at=f"2025-01-01T{i // 2:02d}:{i % 2:02d}:00Z")
            store.save_run(run, [Measurement("all_reduce", "busbw", 5e-324 if i < 15 else 1e-323, "GB/s", ROW)])
    code, text, err = run_cli("trend", "--json", "--db", db)
    assert code == 0, err
    changes = [x for x in json_lines(text) if x["kind"] in ("regression", "improvement")]
    assert [(c["kind"], c["index"]) for c in changes] == [("improvement", 15)]


def test_trend_nothing_at_bytes_or_per_device_says_why(tmp_path):
    db = tmp_path / "t.db"
    with Store.open(db) as store:
        _busbw_run(store, 100.0, {})
    code, _, err = run_cli("trend", "--bytes", "1M", "--db", db)
    assert code == 2 and "at --bytes 1M" in err
    code, _, err = run_cli("trend", "--by", "device", "--db", db)
    assert code == 2 and "--by device" in err


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x\x1b[31m"])
def test_baseline_name_empty_or_with_control_characters_is_refused(tmp_path, name):
    code, out, err = run_cli("baseline", "create", "1", "-o", str(tmp_path / "b.yaml"), "--name", name,
                             "--db", str(tmp_path / "none.db"))
    assert code == 2 and err.startswith("clusterbench: error: --name") and err.count("\n") == 1, err
    assert not (tmp_path / "b.yaml").exists()
