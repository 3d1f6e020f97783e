"""Tests of clusterbench.bench.collectives.calls: the PyTorch side of each collective."""

from __future__ import annotations

import pytest
import torch
from coll_sweeps import _sweep

from clusterbench.bench.collectives import calls
from clusterbench.families import renderer_for
from clusterbench.families.collectives.spec import ALL_OPS, OPS, SPECS, op_in_text, op_name


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


@pytest.mark.parametrize("op", ["all_gather", "alltoall", "sendrecv", "broadcast", "reduce_scatter"])
def test_data_moving_expectations_match_a_simulation(op):
    n, per, root = 3, 5, 1
    inputs = [calls.CALLS[op].inputs("sum", "float", r, n, root, per, torch.arange(per * n)) for r in range(n)]
    for r in range(n):
        if op == "all_gather":
            got = torch.cat([inputs[j][:per] for j in range(n)])
        elif op == "alltoall":
            got = torch.cat([inputs[j][r * per:(r + 1) * per] for j in range(n)])
        elif op == "sendrecv":
            got = inputs[(r - 1) % n][:per]
        elif op == "broadcast":
            got = inputs[root][:per]
        else:
            got = sum(inputs[j] for j in range(n))[r * per:(r + 1) * per]
        want = calls.CALLS[op].expected("sum", "float", r, n, root, per, torch.arange(got.numel()))
        assert torch.equal(got, want), (op, r)


def test_a_collective_op_is_its_spec_row_and_its_call():
    assert set(OPS) == set(calls.CALLS)                     # every runnable op has its PyTorch call
    assert set(OPS) <= set(ALL_OPS) and all(SPECS[op].runnable for op in OPS)
    for op in ALL_OPS:
        table = renderer_for(op)
        assert table.op == op                               # one parametrised nccl-tests table
    assert op_name("AllReduce") == "all_reduce" and op_name("/opt/x/alltoall_perf_mpi") == "alltoall"
    assert op_name("bcast") == "broadcast" and op_name("nope") is None
    assert op_in_text("nccl_allgather.log") == "all_gather"
