"""Tests of clusterbench.families.base."""

import math


def test_a_metric_word_outside_the_known_ones_is_refused():
    import pytest

    from clusterbench.families.base import WORDINGS, Metric

    assert Metric("x_us", "us", wording="level").wording in WORDINGS
    with pytest.raises(ValueError, match="wording 'quick'"):
        Metric("x_us", "us", wording="quick")


def test_fmt_value_prints_a_value_past_the_floats() -> None:
    from clusterbench.families.base import fmt_value
    assert fmt_value(math.inf) == "inf" and fmt_value(-math.inf) == "-inf" and fmt_value(2.0) == "2"


def test_a_metric_with_an_integer_unit_names_it_for_integer_dtypes():
    from clusterbench.families.gemm.spec import TFLOPS

    assert TFLOPS.unit_for({"dtype": "int8"}) == "TOP/s" and TFLOPS("gemm", 1.0, {"dtype": "int8"}).unit == "TOP/s"
    assert [TFLOPS.unit_for({"dtype": d}) for d in ("fp8_e4m3", "bf16", "fp32")] == ["TFLOP/s"] * 3
    assert TFLOPS.unit_for({}) == "TFLOP/s"
