"""Every collective on 2 and 4 CPU ranks (gloo) with checking on, and a deliberate corruption."""

from __future__ import annotations

import io

import coll_rankfns
import pytest
import torch

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.families.collectives.spec import OPS
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import COMPLETE, FAILED
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import run_job
from clusterbench.store import Store

TARGET = rank.main


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
    assert any("all_reduce int32 avg in-place: skipped, the gloo backend cannot run it" in n["text"]
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
    assert "# Out of bounds values : 4 FAILED" in text
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
    assert sorted((m.params["cycle"], m.params["bytes"]) for m in rows) == [(0, 8), (0, 16), (1, 8), (1, 16)]
    assert all(m.params["root"] == 1 for m in rows)
    data_lines = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert len(data_lines) == 4 and all(cols[12] == "N/A" and cols[4] == "1" for cols in data_lines)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_every_op_on_gpus(db):
    n = torch.cuda.device_count()
    config = build_config("all", minbytes="8", maxbytes="1M", stepfactor=16, iters=5, warmup_iters=1,
                          datatype="float,half,bfloat16,int8", redop="sum,prod,max,min,avg")
    out = io.StringIO()
    job = Job(TARGET, config, RankOptions(device="cuda", timeout=120), np=n)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    assert result.exit_code == 0, out.getvalue()
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    assert result.run.meta["device_type"] == "cuda"


# -- timing loop: async issue, shifted buffers, graphs ----------------------------------------------

class _FakeCtx:
    rank, world_size, backend = 0, 2, "gloo"
    device = torch.device("cpu")


@pytest.mark.parametrize("backend,async_op", [("gloo", True), ("nccl", False)])
def test_nccl_ops_are_plain_stream_ordered_calls(backend, async_op):
    """NCCL/RCCL ranks issue plain calls: they never block the host there, and on an H100 an
    async call's Work cost about 6 us more per op than a bare ``dist.all_reduce`` loop
    (BENCHMARKS.md). gloo keeps async calls, whose Work ``finish`` waits for."""
    ctx = _FakeCtx()
    ctx.backend = backend
    config = build_config("all", minbytes="8", maxbytes="8")
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"):
        s = rank.Sweep(ctx, config, op, "float", "sum")
        s.allocate(64)
        for placement in ("out", "in"):
            issue = s.bind(placement, 16).issue
            assert issue.keywords["async_op"] is async_op, (op, placement)
            assert all(i.keywords["async_op"] is async_op for i in s.shifted_calls(placement, 16))


def _sweep(op: str, per_max: int, iters: int = 20, **kw):
    config = build_config(op, minbytes="8", maxbytes="8", iters=iters, **kw)
    s = rank.Sweep(_FakeCtx(), config, op, "float", "sum")
    s.allocate(per_max)
    return s


@pytest.fixture
def one_rank_group():
    """A one-process gloo group: P2POp and the bound calls need a default group to exist."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("op", OPS)
def test_iterations_walk_through_the_buffers_as_nccl_tests(op, one_rank_group):
    """Iteration i uses the buffers shifted by (i % steps) rows, steps = buffer / row size."""
    from clusterbench.bench.collectives import calls

    s = _sweep(op, per_max=64)
    for placement in ("out", "in"):
        issues = s.shifted_calls(placement, 8)
        assert len(issues) == min(20, 64 // 8) == 8
        starts = []
        for k, issue in enumerate(issues):
            tensors = [a for a in getattr(issue, "args", ()) if isinstance(a, torch.Tensor)]
            if not tensors:  # sendrecv: a batch of P2POps
                tensors = [p.tensor for p in issue.args[0]]
            starts.append(sorted(t.data_ptr() for t in tensors))
            send, recv = calls.buffer_elements(op, 8, 2)
            b = s.bind(placement, 8, k)
            def inside(buf, row, ptr=b.input.data_ptr(), k=k):
                start = buf.data_ptr() + row * k * 4
                return buf.numel() and start <= ptr < start + row * 4   # this iteration's window

            assert inside(s.send_buf, send) or inside(s.recv_buf, recv), (op, placement, k)
        assert len({tuple(x) for x in starts}) == len(starts)  # every iteration a different window
        # the last window still lies inside the buffers
        last = s.bind(placement, 8, len(issues) - 1)
        assert last.input.numel() and (last.output is None or last.output.numel())
    # the largest row has one window; a row of per_max / 3 has 3
    assert len(s.shifted_calls("out", 64)) == 1 and len(s.shifted_calls("out", 21)) == 3
    assert len(_sweep(op, per_max=1 << 20, iters=5).shifted_calls("out", 1)) == 5  # at most iters


def test_sendrecv_batch_is_built_once_per_row_and_offset(one_rank_group):
    """The P2POp list is made when the row is bound; each timed issue only launches the batch."""
    s = _sweep("sendrecv", per_max=16)
    issues = s.shifted_calls("out", 4)
    for k, issue in enumerate(issues):
        assert issue.func is torch.distributed.batch_isend_irecv and issue.keywords == {}
        send_op, recv_op = issue.args[0]
        assert send_op.tensor.data_ptr() == s.send_buf[4 * k:].data_ptr()
        assert recv_op.tensor.data_ptr() == s.recv_buf[4 * k:].data_ptr()


def test_finish_waits_once_on_ordered_streams_and_for_all_on_gloo():
    from clusterbench.bench.collectives import calls

    class Work:
        def __init__(self):
            self.waited = 0

        def wait(self):
            self.waited += 1

    works = [Work(), [Work(), Work()], Work()]
    calls.finish(works, ordered=True)
    assert [works[0].waited, works[1][0].waited, works[1][1].waited, works[2].waited] == [0, 0, 0, 1]
    calls.finish(works, ordered=False)
    assert [works[0].waited, works[1][0].waited, works[1][1].waited, works[2].waited] == [1, 1, 1, 2]


def test_gloo_runs_one_op_at_a_time_nccl_back_to_back():
    # gloo would run async ops on several threads at once (two in flight timed as one); a
    # stream runs them in order, so on NCCL they are issued back-to-back with one wait
    from clusterbench.bench.collectives.rank import run_iters

    log: list[str] = []

    class Work:
        def __init__(self, i):
            self.i = i

        def wait(self):
            log.append(f"wait {self.i}")

    def issue(i):
        def call():
            log.append(f"issue {i}")
            return Work(i)
        return call

    run_iters([issue(0), issue(1)], 4, ordered=False)
    assert log == ["issue 0", "wait 0", "issue 1", "wait 1", "issue 0", "wait 0", "issue 1", "wait 1"]
    log.clear()
    run_iters([issue(0), issue(1)], 4, ordered=True)
    assert log == ["issue 0", "issue 1", "issue 0", "issue 1", "wait 1"]


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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_cudagraph_on_gpus(db):
    n = torch.cuda.device_count()
    config = build_config("all_reduce,all_gather,sendrecv", minbytes="8", maxbytes="64M", stepfactor=64,
                          iters=10, warmup_iters=2, graph=3, datatype="float,bfloat16", redop="sum,avg")
    out = io.StringIO()
    job = Job(TARGET, config, RankOptions(device="cuda", timeout=300), np=n)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    assert result.exit_code == 0, out.getvalue()
    assert result.run.meta["coll_sweep.all_reduce"]["graph"] == 3
    assert "graph: 3" in out.getvalue()
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    assert [m for m in result.measurements if m.metric == "busbw" and m.params["redop"] == "avg"]


def test_avg_on_three_gloo_ranks_is_within_its_bound(db):
    """gloo averages floats (sum, then divide): the one-owner inputs pass on a non-power-of-2 count."""
    config = build_config("all_reduce,reduce_scatter", minbytes="24", maxbytes="3K", stepfactor=8, iters=2,
                          warmup_iters=1, datatype="float,half,bfloat16,double", redop="avg")
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    rows = [m for m in result.measurements if m.metric == "wrong" and m.params["redop"] == "avg"]
    assert {m.params["dtype"] for m in rows} == {"float", "half", "bfloat16", "double"}
    assert all(m.value == 0 for m in rows)
