"""Tests of clusterbench.bench.stream.check: the analytic check of a stream run."""

from __future__ import annotations

import pytest

from clusterbench.bench.stream import check as analytic
from clusterbench.bench.stream.kernels import TorchStream
from clusterbench.bench.stream.main import run_size
from clusterbench.families.stream import spec


def test_gold_follows_the_recurrence():
    g = analytic.gold(["Copy", "Mul", "Add", "Triad", "Dot"], 1, 10, "double")
    c = 0.1
    b = 0.4 * c
    c = 0.1 + b
    a = b + 0.4 * c
    assert (g.a, g.b, g.c) == pytest.approx((a, b, c))
    assert g.dot == pytest.approx(a * b * 10)


@pytest.mark.parametrize("dtype", ["float", "double"])
def test_real_kernels_pass_the_check(dtype):
    names = list(spec.NAMES)
    impl = TorchStream(4096, dtype, "cpu")
    impl.init_arrays()
    times, dot = run_size(impl, spec.ordered(names), 5, lambda fn: (fn(), 1e-3)[1], lambda: None)
    assert all(len(v) == 4 for v in times.values())
    g = analytic.gold(spec.ordered(names), 5, 4096, dtype)
    assert analytic.check(g, impl.mean_abs_errors(g.a, g.b, g.c), dot, dtype) == []


def test_wrong_kernel_in_process_is_caught():
    from node_doubles import WrongTriad

    impl = WrongTriad(1000, "double", "cpu")
    impl.init_arrays()
    kernels = spec.ordered(spec.NAMES)
    _, dot = run_size(impl, kernels, 3, lambda fn: (fn(), 1e-3)[1], lambda: None)
    g = analytic.gold(kernels, 3, 1000, "double")
    errors = analytic.check(g, impl.mean_abs_errors(g.a, g.b, g.c), dot, "double")
    assert any(e.startswith("array a") for e in errors) and any(e.startswith("Dot") for e in errors)
