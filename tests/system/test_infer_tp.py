"""System tests (infer tp): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import pytest
from work_helpers import _check, _live_matches_results_show, cli, json_rows, stored

from clusterbench.bench.workloads.infer_tp import parse_batches
from clusterbench.families.workloads.table import InferTpTable
from clusterbench.records import Measurement, Run

INFER = ["--device", "cpu", "--hidden", "16", "--layers", "2", "--batch-sizes", "2", "--iters", "1",
         "--warmup", "0"]


def test_infer_tp_measures_a_repeated_batch_size_once(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert parse_batches("8,8,1K,1024") == (8, 1024)
    code, out, err = cli(capsys, "infer-tp", "--np", "2", "--device", "cpu", "--hidden", "32", "--layers", "2",
                         "--batch-sizes", "4,4,2", "--iters", "2", "--warmup", "0", "--db", db)
    assert code == 0, err
    _live_matches_results_show(capsys, db, out)
    [(_run, rows)] = stored(db)
    keys = [(m.metric, m.params["batch"], m.params["stat"]) for m in rows]
    assert len(keys) == len(set(keys)) == 6
    for b in (4, 2):
        avg = {m.metric: m.value for m in rows if m.params["batch"] == b and m.params["stat"] == "avg"}
        assert avg["samples_per_s"] * avg["latency_ms"] / 1e3 == pytest.approx(b)


def test_infer_tp_on_one_rank_does_not_call_itself_tensor_parallel(capsys: pytest.CaptureFixture[str],
                                                                   db: str) -> None:
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *INFER, "--db", db)
    assert code == 0, err
    footer = [line for line in out.splitlines() if "layers of 16x16" in line]
    assert footer and "column-parallel" not in footer[0] and "unsplit (1 rank, no collectives" in footer[0]
    # the mode stays in the rows' params: the 1-rank baseline pairs with the split runs in compare
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *INFER, "--json", "--db", db)
    assert code == 0, err
    assert {m.params["mode"] for m in json_rows(out)} == {"column"}
    code, shown, err = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0 and "unsplit (1 rank" in shown and "column-parallel" not in shown, err
    two = Measurement("infer_tp", "latency_ms", 1.0, "ms", {"mode": "row", "layers": 2, "hidden": 16,
                                                            "dtype": "fp32", "batch": 2, "stat": "avg"})
    assert InferTpTable().footer(Run("infer_tp", ranks=2), [two])[0].startswith("# row-parallel, 2 layers")


def test_two_ranks_column_vs_one_whole_device_compare(capsys, db):
    common = ["--device", "cpu", "--hidden", "128", "--layers", "2", "--batch-sizes", "16..64", "--iters", "3",
              "--warmup", "1", "--json", "--db", db]
    code, out, err = cli(capsys, "infer-tp", "--np", "2", *common, "--tag", "setup=split")
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [16, 32, 64])
    assert {m.params["mode"] for m in rows} == {"column"}
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *common, "--tag", "setup=whole")
    assert code == 0, err
    _check(json_rows(out), [16, 32, 64])
    runs = stored(db)
    assert [(r.ranks, r.status, len(ms)) for r, ms in runs] == [(2, "complete", 9), (1, "complete", 9)]
    # The seed's comparison, 1 whole device vs N partitions: rows pair up (no "ranks" param).
    code, out, err = cli(capsys, "compare", "setup=whole", "setup=split", "--metric", "samples_per_s",
                         "--json", "--db", db)
    assert code == 0, err
    assert out.count("samples_per_s") == 3
    code, out, _ = cli(capsys, "results", "show", str(runs[0][0].id), "--db", db)
    assert code == 0 and "latency_ms" in out and "column-parallel" in out and "2 rank(s)" in out
    assert len([line for line in out.splitlines() if line.strip().startswith(("16 ", "32 ", "64 "))]) == 3


def test_row_parallel_all_reduce(capsys, db):
    code, out, err = cli(capsys, "infer-tp", "--np", "2", "--device", "cpu", "--mode", "row", "--hidden", "64",
                         "--layers", "3", "--batch-sizes", "8,24", "--iters", "2", "--warmup", "0", "--json",
                         "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [8, 24])
    assert {m.params["mode"] for m in rows} == {"row"}
