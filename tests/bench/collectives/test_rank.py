"""Tests of clusterbench.bench.collectives.rank: the per-rank collective sweep."""

from __future__ import annotations

import pytest
import torch
from coll_sweeps import _FakeCtx, _sweep

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.families.collectives.spec import OPS


@pytest.mark.parametrize("backend,async_op", [("gloo", True), ("nccl", False)])
def test_nccl_ops_are_plain_stream_ordered_calls(backend, async_op):
    """NCCL/RCCL ranks issue plain calls: they never block the host there, and on an H100 an
    async call's Work cost about 6 us more per op than a bare ``dist.all_reduce`` loop
    (BENCHMARKS.md). gloo keeps async calls, whose Work ``finish`` waits for."""
    ctx = _FakeCtx()
    ctx.backend = backend
    config = build_config("all", minbytes="8", maxbytes="8")
    for op in (op for op in OPS if op != "sendrecv"):     # sendrecv's batch: the next test
        s = rank.Sweep(ctx, config, op, "float", "sum")
        s.allocate(64)
        for placement in ("out", "in"):
            issue = s.bind(placement, 16).issue
            assert _call(issue).keywords["async_op"] is async_op, (op, placement)
            assert all(_call(i).keywords["async_op"] is async_op for i in s.shifted_calls(placement, 16))


def _call(issue):
    """The torch.distributed call inside an issue (out of place, after the copy of ``copied``)."""
    from clusterbench.bench.collectives import calls

    return issue.args[2] if issue.func is calls.copied else issue


def test_sendrecv_batch_is_built_once_per_row_and_offset(one_rank_group):
    """The P2POp list is made when the row is bound; each timed issue only launches the batch."""
    s = _sweep("sendrecv", per_max=16)
    issues = s.shifted_calls("out", 4)
    for k, issue in enumerate(issues):
        assert issue.func is torch.distributed.batch_isend_irecv and issue.keywords == {}
        send_op, recv_op = issue.args[0]
        assert send_op.tensor.data_ptr() == s.send_buf[4 * k:].data_ptr()
        assert recv_op.tensor.data_ptr() == s.recv_buf[4 * k:].data_ptr()


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
