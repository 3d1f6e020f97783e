"""Collective spec table, config validation and the closed-form expected values (no ranks)."""

from __future__ import annotations

import pytest
import torch

from clusterbench.bench.collectives import calls, data
from clusterbench.bench.collectives.config import CollConfig
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import (
    OPS,
    SPECS,
    Counts,
    algbw,
    busbw,
    placements,
    row_bytes,
    row_counts,
    sweep_sizes,
)


# (op, requested bytes, dtype, ranks) -> (send, recv, count column, size column), per nccl-tests.
@pytest.mark.parametrize("op,size,dtype,n,send,recv,param,nbytes", [
    ("all_reduce", 1024, "float", 4, 256, 256, 256, 1024),
    ("all_reduce", 10, "float", 4, 2, 2, 2, 8),                 # rounded down to whole elements
    ("broadcast", 1024, "double", 3, 128, 128, 128, 1024),
    ("reduce", 1024, "half", 8, 512, 512, 512, 1024),
    ("sendrecv", 64, "int8", 2, 64, 64, 64, 64),
    ("all_gather", 1024, "float", 4, 64, 256, 64, 1024),        # count column is per rank
    ("all_gather", 1000, "float", 3, 80, 240, 80, 960),         # per rank: whole 16 B (nccl-tests)
    ("reduce_scatter", 1024, "float", 4, 256, 64, 64, 1024),
    ("reduce_scatter", 100, "int32", 8, 0, 0, 0, 0),            # 12 B per rank: below 16 B
    ("reduce_scatter", 200, "int32", 3, 48, 16, 16, 192),       # 66 -> 64 B per rank
    ("alltoall", 1024, "float", 4, 256, 256, 64, 1024),
    ("alltoall", 8, "float", 4, 0, 0, 0, 0),                     # below one element per rank
])
def test_counts_and_size_column(op, size, dtype, n, send, recv, param, nbytes):
    c = row_counts(op, size, dtype, n)
    assert c == Counts(send, recv, param)
    assert row_bytes(op, c, dtype) == nbytes


@pytest.mark.parametrize("op,n,factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
    ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("alltoall", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("sendrecv", 8, 1.0),
])
def test_busbw_factors(op, n, factor):
    assert busbw(op, 10.0, n) == pytest.approx(10.0 * factor)


def test_algbw_is_bytes_per_second_in_gb():
    assert algbw(1_000_000_000, 0.5) == pytest.approx(2.0)
    assert algbw(1024, 0.0) == 0.0


def test_every_op_has_a_spec_and_placements():
    assert set(OPS) == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                        "sendrecv"}
    assert placements("all_reduce") == ("in",)          # PyTorch has no out-of-place all_reduce
    assert placements("all_gather") == ("out", "in")
    assert not SPECS["alltoall"].in_place_checked and not SPECS["sendrecv"].in_place_checked


def test_sweep_sizes_factor_and_step():
    assert sweep_sizes(8, 128, 2, 0) == [8, 16, 32, 64, 128]
    assert sweep_sizes(8, 100, 4, 0) == [8, 32]
    assert sweep_sizes(1024, 4096, 1, 1024) == [1024, 2048, 3072, 4096]


def test_build_config_defaults_and_suffixes():
    c = build_config("all_reduce", minbytes="1K", maxbytes="1M")
    assert (c.minbytes, c.maxbytes, c.stepfactor, c.check, c.average) == (1024, 1 << 20, 2, 1, 1)
    assert build_config("all", datatype="all").ops == OPS
    assert build_config("allreduce_perf").ops == ("all_reduce",)
    assert build_config("all_reduce", redop="all").redops == ("sum", "prod", "max", "min", "avg")
    assert len(build_config("all_reduce", datatype="all").dtypes) == 8
    # -i alone means an additive sweep, as with nccl-tests' default -f 1
    c = build_config("all_reduce", minbytes="1K", maxbytes="4K", stepbytes="1K")
    assert c.sizes() == [1024, 2048, 3072, 4096]


@pytest.mark.parametrize("kwargs,words", [
    ({"minbytes": "12Q"}, "12Q"),
    ({"minbytes": "1M", "maxbytes": "1K"}, "larger than"),
    ({"datatype": "float128"}, "unknown datatype"),
    ({"redop": "xor"}, "unknown reduction"),
    ({"average": 7}, "average"),
    ({"iters": 0}, "iters"),
    ({"stepfactor": 1, "stepbytes": "0"}, "stepbytes"),
    ({"minbytes": "0"}, "never grows"),
    ({"minbytes": "1", "maxbytes": "1G", "stepfactor": 1, "stepbytes": "1"}, "more than"),
])
def test_bad_config_is_a_usage_error(kwargs, words):
    with pytest.raises(UsageError, match=words):
        build_config("all_reduce", **kwargs)


def test_unknown_op():
    with pytest.raises(UsageError, match="unknown collective 'foo'"):
        build_config("foo")


def test_config_is_picklable_for_ranks():
    import pickle

    c = CollConfig(ops=("all_reduce",))
    assert pickle.loads(pickle.dumps(c)) == c


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9])
@pytest.mark.parametrize("redop", ["sum", "prod", "min", "max", "avg"])
def test_reduction_closed_forms_match_brute_force(redop, n):
    idx = torch.arange(200, dtype=torch.int64)
    inputs = torch.stack([data.reduce_input(redop, r, n, idx) for r in range(n)]).double()
    brute = {"sum": inputs.sum(0), "prod": inputs.prod(0), "min": inputs.min(0).values,
             "max": inputs.max(0).values, "avg": inputs.mean(0)}[redop]
    assert torch.equal(data.reduce_expected(redop, n, idx).double(), brute)


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


def test_count_wrong_exact_and_avg_tolerance():
    t = torch.tensor([1, 2, 3, 4], dtype=torch.float16)
    assert data.count_wrong(t, lambda idx: idx + 1, "half", "sum") == 0
    t[2] = 5
    assert data.count_wrong(t, lambda idx: idx + 1, "half", "sum") == 1
    one_ulp_off = torch.nextafter(torch.tensor([2.0]), torch.tensor([3.0]))
    avg = torch.cat([torch.tensor([1.0]), one_ulp_off])
    assert data.count_wrong(avg, lambda idx: idx + 1, "float", "avg") == 0   # avg may pre-scale
    assert data.count_wrong(avg, lambda idx: idx + 1, "float", "sum") == 1   # sum is exact


def test_default_suite_is_a_list_of_importable_steps():
    import pickle

    from clusterbench.bench.suite import SUITE, SuiteEntry

    assert SUITE and all(isinstance(e, SuiteEntry) for e in SUITE)
    for entry in SUITE:
        assert callable(entry.target)
        assert pickle.loads(pickle.dumps(entry)) == entry
    coll = next(e for e in SUITE if e.name == "collectives")
    assert set(coll.config_for("cpu").ops) == set(OPS)
    assert coll.config_for("cpu").maxbytes <= 1 << 20          # small enough for ~20 s on 2 CPU ranks
    assert coll.config_for("cuda").maxbytes > coll.config_for("cpu").maxbytes
