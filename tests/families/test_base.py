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
