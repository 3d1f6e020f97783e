"""System tests (coll ranks): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import io

import coll_rankfns
import pytest
from coll_rankfns import TARGET

from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.families.collectives.spec import OPS
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import COMPLETE, FAILED
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import run_job
from clusterbench.store import Store


def _run(config, np, db, target=TARGET):
    out = io.StringIO()
    job = Job(target, config, RankOptions(device="cpu", timeout=60), np=np)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    return result, out.getvalue()


@pytest.mark.parametrize("np", [2, 4])
def test_every_op_checks_clean(np, db):
    # float and int8 sum plus prod/min/max on a second dtype: every op, both placements, #wrong 0
    config = build_config("all", minbytes="8", maxbytes="4K", stepfactor=8, iters=2, warmup_iters=1,
                          datatype="float,bfloat16", redop="sum,max" if np == 4 else "prod,min")
    result, text = _run(config, np, db)
    assert result.exit_code == 0, text
    assert result.run.status == COMPLETE and result.run.ranks == np
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    for op in OPS:
        rows = [m for m in result.measurements if m.benchmark == op and m.metric == "busbw"]
        assert rows, f"{op} produced no rows"
        assert all(m.params["ranks"] == np for m in rows)
        assert [m.value for m in result.measurements if m.benchmark == op and m.metric == "out_of_bounds"] == [0.0]
    # every op's table is printed and closed
    for op in OPS:
        assert f"# Collective test concluded: {op}" in text
    assert "FAILED" not in text


def test_unsupported_combination_is_a_skipped_note_not_a_failure(db):
    # gloo cannot average integers (verified by trying): that row is skipped with the reason
    config = build_config("all_reduce", minbytes="8", maxbytes="64", iters=2, warmup_iters=1,
                          datatype="int32,float", redop="avg")
    result, text = _run(config, 2, db)
    assert result.exit_code == 0 and result.run.status == "complete"
    assert any(n["text"].startswith("all_reduce: skipped int32 avg: the gloo backend cannot run it")
               and n["benchmark"] == "all_reduce" for n in result.run.meta["notes"])
    busbw = [m for m in result.measurements if m.metric == "busbw"]
    assert busbw and {m.params["dtype"] for m in busbw} == {"float"}


def test_a_run_of_only_unsupported_combinations_is_not_complete(db):
    """Nothing measured: the note says why, and the run is never 'complete' with no rows."""
    config = build_config("all_reduce", minbytes="8", maxbytes="64", iters=2, warmup_iters=1,
                          datatype="int32", redop="avg")
    result, text = _run(config, 2, db)
    assert result.exit_code == 1 and result.run.status == FAILED
    assert any("the gloo backend cannot run it" in n["text"] for n in result.run.meta["notes"])
    assert not [m for m in result.measurements if m.metric == "busbw"]


def test_corrupted_rank_is_caught(db):
    config = build_config("all_reduce,all_gather", minbytes="64", maxbytes="256", stepfactor=4, iters=2,
                          warmup_iters=1)
    result, text = _run(config, 2, db, target=coll_rankfns.corrupt_rank1)
    assert result.exit_code == 1
    assert result.run.status == FAILED
    wrong = {(m.benchmark, m.params["bytes"], m.params["placement"]): m.value
             for m in result.measurements if m.metric == "wrong"}
    assert wrong and all(v > 0 for v in wrong.values())
    # all_reduce: every element is wrong on both ranks (the sum includes rank 1's bad input)
    assert wrong[("all_reduce", 64, "in")] == 2 * 16
    # all_gather: rank 1's slot is wrong on both ranks
    assert wrong[("all_gather", 64, "out")] == 2 * 8
    assert any("data corruption" in e for e in result.run.errors)
    # per op: 2 sizes x 2 placements x 2 ranks whose own result was wrong
    assert text.count("# Out of bounds values : 8 FAILED") == 2
    with Store.open(db) as store:
        assert store.get_run(result.run.id).status == FAILED


def test_root_must_be_a_rank(db):
    from clusterbench.errors import UsageError

    with pytest.raises(UsageError, match="--root 3 is not a rank"):
        _run(build_config("broadcast", minbytes="8", maxbytes="8", root=3), 2, db)
    with Store.open(db) as store:
        assert store.list_runs() == []


def test_check_off_prints_na_and_run_cycles_repeat_the_sweep(db):
    config = build_config("reduce", minbytes="8", maxbytes="16", iters=2, warmup_iters=0, check=0, root=1,
                          cycles=2, average=3)
    result, text = _run(config, 2, db)
    assert result.exit_code == 0
    assert not [m for m in result.measurements if m.metric == "wrong"]
    rows = [m for m in result.measurements if m.metric == "time_us"]
    assert sorted((m.params["cycle"], m.params["bytes"], m.params["placement"]) for m in rows) == [
        (c, b, p) for c in (0, 1) for b in (8, 16) for p in ("in", "out")]
    assert all(m.params["root"] == 1 for m in rows)
    data_lines = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert len(data_lines) == 4 and all(cols[12] == "N/A" and cols[4] == "1" for cols in data_lines)


def test_async_timing_on_gloo_ranks(db):
    """The async loop over shifted buffers keeps every row correct on real ranks."""
    config = build_config("all_reduce,sendrecv,all_gather", minbytes="8", maxbytes="1K", stepfactor=4,
                          iters=7, warmup_iters=3)
    result, text = _run(config, 2, db)
    assert result.exit_code == 0, text
    assert all(m.value == 0 for m in result.measurements if m.metric == "wrong")


def test_cudagraph_needs_gpu_ranks(db):
    from clusterbench.errors import UsageError

    config = build_config("all_reduce", minbytes="8", maxbytes="8", graph=2)
    assert config.graph == 2
    with pytest.raises(UsageError, match="-G/--cudagraph 2 .* needs GPU ranks"):
        _run(config, 2, db)
    with pytest.raises(UsageError, match="cudagraph"):
        build_config("all_reduce", graph=-1)


def test_avg_on_three_gloo_ranks_is_within_its_bound(db):
    """gloo averages floats (sum, then divide): the one-owner inputs pass on a non-power-of-2 count."""
    config = build_config("all_reduce,reduce_scatter", minbytes="24", maxbytes="3K", stepfactor=8, iters=2,
                          warmup_iters=1, datatype="float,half,bfloat16,double", redop="avg")
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    rows = [m for m in result.measurements if m.metric == "wrong" and m.params["redop"] == "avg"]
    assert {m.params["dtype"] for m in rows} == {"float", "half", "bfloat16", "double"}
    assert all(m.value == 0 for m in rows)
