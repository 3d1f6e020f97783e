"""Tests of clusterbench.bench.collectives.data: deterministic per-rank inputs and the exact outputs every op must produce."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from clusterbench.bench.collectives import calls, data
from clusterbench.families.collectives.spec import FLOAT_DTYPES, REDOPS

N_MAX = 4096


FLOATS = sorted(FLOAT_DTYPES)


INTS = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32, "uint32": np.uint32,
        "int64": np.int64, "uint64": np.uint64}


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    b = (b + (((b >> 16) & 1) + 0x7FFF)) & 0xFFFF0000
    return b.view(np.float32)


def _rounder(dtype: str):
    """fl(): round to the element type, computed in a wider numpy type."""
    if dtype == "bfloat16":
        return lambda x: _bf16(np.asarray(x, dtype=np.float64).astype(np.float32))
    t = {"half": np.float16, "float": np.float32, "double": np.float64}[dtype]
    return lambda x: np.asarray(x, dtype=np.float64).astype(t).astype(np.float64)


def _emulate(dtype: str, ns: np.ndarray, terms, order: str) -> np.ndarray:
    """The average over ``ns`` ranks of every lane, with ``terms(r)`` rank r's inputs (a lane per
    n), reduced one rank after the other in the element type. ``order``: ``premul`` (NCCL's float
    avg: x * fl(1/n), then a sum), ``div`` (sum, then / n) or ``scale`` (sum, then * fl(1/n))."""
    fl = _rounder(dtype)
    inv = fl(1.0 / ns)
    acc = np.zeros(ns.shape, dtype=np.float64)
    for r in range(int(ns.max())):
        x = fl(terms(r))
        if order == "premul":
            x = fl(x * inv)
        acc = np.where(r < ns, fl(acc + x), acc)
    if order == "div":
        acc = fl(acc / ns)
    elif order == "scale":
        acc = fl(acc * inv)
    return acc


def _owner_terms(dtype: str, ns: np.ndarray, elems: np.ndarray):
    """Rank r's avg inputs for element ``elems`` of a run with ``ns`` ranks, from data.py itself."""
    owner = elems % ns
    values = np.array([int(data.avg_value(dtype, int(n), torch.tensor([int(g)]))[0]) for n, g in zip(ns, elems)])

    def terms(r: int) -> np.ndarray:
        return np.where(owner == r, ns * values, 0).astype(np.float64)
    return terms, values


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", ["premul", "div", "scale"])
def test_float_avg_within_tolerance_for_every_n(dtype, order):
    ns = np.repeat(np.arange(1, N_MAX + 1), 2)
    # two elements per n: owned by the first rank reduced and by the last, e cycling 1..4
    elems = np.where(np.arange(ns.size) % 2 == 0, 0, ns - 1) + ns * (np.arange(ns.size) % 4)
    terms, want = _owner_terms(dtype, ns, elems)
    got = _emulate(dtype, ns, terms, order)
    err = np.abs(got - want) / want
    assert err.max() <= data.AVG_RTOL[dtype], (dtype, order, int(ns[err.argmax()]), err.max())
    # and the check in data.count_wrong accepts exactly these values
    t = torch.tensor(got).to(calls.torch_dtype(dtype))
    assert torch.equal(t.double(), torch.tensor(got))  # the emulated values are dtype values
    assert data.count_wrong(t, lambda idx: torch.tensor(want)[idx], dtype, "avg") == 0


@pytest.mark.parametrize("dtype", list(INTS))
def test_integer_avg_exact_and_never_overflows(dtype):
    t = INTS[dtype]
    info = np.iinfo(t)
    for n in range(1, N_MAX + 1):
        ranks = sorted({0, n // 2, n - 1})
        idx = torch.tensor([r + n * j for r in ranks for j in range(8)])
        owned = idx % n
        parts = []
        for r in ranks:
            x = data.reduce_input("avg", r, n, idx, dtype)
            assert not x[owned != r].any()        # every rank but the owner adds an exact 0
            parts.append(torch.where(owned == r, x, 0))
        total = sum(parts)                        # what any reduction order sums to
        # all terms >= 0 and the total fits: no partial sum in any order overflows the type
        assert 0 <= int(total.min()) and int(total.max()) <= info.max, (dtype, n)
        result = total.numpy().astype(t).astype(np.int64) // n   # the sum in the type, then / n
        assert np.array_equal(result, data.reduce_expected("avg", n, idx, dtype).numpy()), (dtype, n)


def test_integer_avg_carries_information_while_the_type_allows():
    def values(dtype: str, n: int) -> set[int]:
        return set(data.avg_value(dtype, n, torch.arange(8 * n)).tolist())

    assert values("int8", 31) == {1, 2, 3, 4}
    assert values("int8", 40) == {0, 1, 2, 3}   # 40 * 3 <= 127
    assert values("int8", 128) == {0}           # nothing else fits int8
    assert values("uint8", 64) == {0, 1, 2, 3}
    assert values("int32", 4096) == {1, 2, 3, 4}


@pytest.mark.parametrize("dtype,n", [("bfloat16", 22), ("bfloat16", 27), ("bfloat16", 30), ("bfloat16", 48),
                                     ("bfloat16", 128), ("half", 30)])
def test_old_inputs_fail_where_reported(dtype, n):
    """Every rank holding 1 + g % 4, NCCL's premultiplied sum, the old tolerances: out of bounds."""
    old_rtol = {"half": 2e-3, "bfloat16": 1.6e-2}[dtype]
    ns = np.full(4, n)
    values = np.arange(1, 5, dtype=np.float64)
    got = _emulate(dtype, ns, lambda r: values, "premul")
    assert (np.abs(got - values) / values).max() > old_rtol


def test_old_integer_inputs_overflow():
    assert 4 * 32 > np.iinfo(np.int8).max and 4 * 64 > np.iinfo(np.uint8).max
    wrapped = np.full(32, 4, dtype=np.int8).sum(dtype=np.int8)  # 32 ranks each holding 4
    assert wrapped // 32 != 4


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9])
@pytest.mark.parametrize("redop", REDOPS)
def test_reduction_closed_forms_match_brute_force(redop, n):
    idx = torch.arange(200, dtype=torch.int64)
    inputs = torch.stack([data.reduce_input(redop, r, n, idx) for r in range(n)]).double()
    brute = {"sum": inputs.sum(0), "prod": inputs.prod(0), "min": inputs.min(0).values,
             "max": inputs.max(0).values, "avg": inputs.mean(0)}[redop]
    assert torch.equal(data.reduce_expected(redop, n, idx).double(), brute)


def test_count_wrong_exact_and_avg_tolerance():
    t = torch.tensor([1, 2, 3, 4], dtype=torch.float16)
    assert data.count_wrong(t, lambda idx: idx + 1, "half", "sum") == 0
    t[2] = 5
    assert data.count_wrong(t, lambda idx: idx + 1, "half", "sum") == 1
    one_ulp_off = torch.nextafter(torch.tensor([2.0]), torch.tensor([3.0]))
    avg = torch.cat([torch.tensor([1.0]), one_ulp_off])
    assert data.count_wrong(avg, lambda idx: idx + 1, "float", "avg") == 0   # avg may pre-scale
    assert data.count_wrong(avg, lambda idx: idx + 1, "float", "sum") == 1   # sum is exact
