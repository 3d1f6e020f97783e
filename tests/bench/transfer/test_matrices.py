"""Tests of clusterbench.bench.transfer.matrices: the standard transfer matrices as generated tests."""

from __future__ import annotations

from transfer_topologies import GPUS8

from clusterbench.bench.transfer.matrices import plan


def test_plans_for_eight_gpus():
    p = plan(["h2d", "d2h", "p2p", "a2a"], GPUS8, 1 << 20, ["D", "G"])
    kinds = [(x.kind, x.direction, x.method, x.host_memory) for x in p]
    assert kinds.count(("h2d", "uni", "copy_engine", "pinned")) == 8
    assert kinds.count(("d2h", "uni", "copy_engine", "pageable")) == 8
    assert kinds.count(("p2p", "uni", "kernel", "")) == 64 and kinds.count(("p2p", "bi", "copy_engine", "")) == 28
    a2a = [x for x in p if x.kind == "a2a"]
    assert len(a2a) == 2 and len(a2a[0].test.transfers) == 56
    sub = plan(["p2p", "a2a"], GPUS8, 1 << 20, ["D"], gpu_ids=[2, 5])
    assert [x.test.name for x in sub] == ["p2p copy_engine G2->G2", "p2p copy_engine G2->G5",
                                          "p2p copy_engine G5->G2", "p2p copy_engine G5->G5",
                                          "p2p copy_engine G2<->G5", "a2a copy_engine"]
