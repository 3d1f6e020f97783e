"""Tests of clusterbench.choices: the one parser of ``a,b,c`` / ``all`` option values."""

from __future__ import annotations

import pytest

from clusterbench.choices import did_you_mean, parse_choices
from clusterbench.errors import UsageError

KNOWN = ("Copy", "Mul", "Add", "Triad", "Dot")


def test_names_in_the_order_given_once_each_and_all():
    assert parse_choices("triad,copy,Triad", KNOWN, "kernel") == ("Triad", "Copy")
    assert parse_choices("all", KNOWN, "kernel") == KNOWN


def test_an_unknown_name_ends_with_the_closest_known_one_when_one_is_close():
    with pytest.raises(UsageError) as e:
        parse_choices("copy,triadd", KNOWN, "kernel")
    assert str(e.value) == "unknown kernel 'triadd': expected Copy, Mul, Add, Triad, Dot or all. Did you mean 'Triad'?"
    with pytest.raises(UsageError) as e:
        parse_choices("xyzzy", KNOWN, "kernel")
    assert str(e.value).endswith("or all")           # nothing close: no guess
    assert did_you_mean("ADD", KNOWN) == ". Did you mean 'Add'?" and did_you_mean("", KNOWN) == ""
