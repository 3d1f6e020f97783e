"""Every reader of a count gets the same inputs and follows ``units.whole_number``'s one rule: an
int as is, a float only when finite and integral, text only as ASCII digits inside surrounding
ASCII whitespace. The readers differ only in their range and in what a refusal does (exit 2 on
the command line, a skipped check, the hosts' count, a param that matches nothing)."""

from __future__ import annotations

import math

import pytest

from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import error_tolerance
from clusterbench.judge.efficiency import nodes_of
from clusterbench.judge.select import _number, params_match
from clusterbench.judge.theory import MAX_NODES, link_efficiency, parse_nodes
from clusterbench.judge.tool_checks import tool_outcomes
from clusterbench.judge.validate import SKIPPED
from clusterbench.records import Measurement, Run
from clusterbench.units import whole_number

R = "refused"
BIG = "1" + "0" * 400

# input, then what each reader makes of it: whole_number (0 to 2**53), theory --nodes (2 to
# MAX_NODES), a row's nodes param (clamped to MAX_NODES), a max_error row's ranks param (1 to
# 2**53), a run's nodes tag (1 to MAX_NODES, clamped), a param compared as a number.
TABLE = [
    ("3",            3, 3, 3, 3, 3, 3),
    (" 3",           3, 3, 3, 3, 3, 3),
    ("03",           3, 3, 3, 3, 3, 3),
    ("3.0",          R, R, R, R, R, 3.0),   # a number to compare, but no count
    (3.0,            3, R, 3, 3, R, 3.0),   # the command line and a tag see the text "3.0"
    (3.5,            R, R, R, R, R, 3.5),
    (True,           R, R, R, R, R, R),
    ("\u0663",       R, R, R, R, R, R),     # ٣: str.isdecimal and int() took it for 3
    ("\u00b2",       R, R, R, R, R, R),     # ²: str.isdigit took it, int() raised
    ("\uff13",       R, R, R, R, R, R),     # fullwidth 3
    ("1_000",        R, R, R, R, R, R),
    ("+3",           R, R, R, R, R, R),
    ("-3",           R, R, R, R, R, -3),    # params may be negative
    ("",             R, R, R, R, R, R),
    ("3 4",          R, R, R, R, R, R),
    ("3\u00a0",      R, R, R, R, R, R),     # a no-break space is no ASCII whitespace
    (BIG,            R, R, MAX_NODES, R, MAX_NODES, R),
    ("9" * 5000,     R, R, R, R, R, R),     # past int()'s digit limit: was a ValueError traceback
    (float("nan"),   R, R, R, R, R, "nan"),
    (float("inf"),   R, R, R, R, R, math.inf),
    (2**53 + 1,      R, R, MAX_NODES, R, MAX_NODES, 2**53 + 1),
]


def _whole(value: object) -> object:
    try:
        return whole_number(value, what="count")
    except UsageError as e:
        assert "\n" not in str(e) and str(e).startswith("invalid count ")
        return R


def _cli_nodes(value: object) -> object:
    try:
        (n,) = parse_nodes(value if isinstance(value, str) else str(value))
    except UsageError as e:
        assert "\n" not in str(e) and "node count" in str(e) and len(str(e)) < 200
        return R
    return n


def _param_nodes(value: object) -> object:
    m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 8, "nodes": value, "stat": "avg"})
    effs = link_efficiency([m], 2, 12.5e9)
    return effs[0].nodes if effs else R


def _ranks(value: object) -> object:
    ms = [Measurement("all_reduce", "max_error", 1e-6, "", {"dtype": "float", "ranks": value, "bytes": 8})]
    (o,) = tool_outcomes([(Run(benchmark="import", id=1), ms)])
    if o.status == SKIPPED:
        assert "rank count" in o.detail
        return R
    return next(n for n in range(1, 100) if o.threshold == f"<= {error_tolerance('float', n):g}")


def _nodes_tag(value: object) -> object:
    n = nodes_of(Run("coll", hosts=[], tags={"nodes": value if isinstance(value, str) else str(value)}))
    return n or R   # no hosts: a refused tag falls back to a count of 0


def _param_number(value: object) -> object:
    n = _number(value)
    if n is None:
        return R
    return "nan" if isinstance(n, float) and math.isnan(n) else n


READERS = [_whole, _cli_nodes, _param_nodes, _ranks, _nodes_tag, _param_number]


@pytest.mark.parametrize(("reader", "column"), [(r, i) for i, r in enumerate(READERS)],
                         ids=[r.__name__.strip("_") for r in READERS])
@pytest.mark.parametrize("row", TABLE, ids=[repr(row[0])[:12] for row in TABLE])
def test_every_reader_follows_the_one_rule(reader, column, row):
    value, *expected = row
    got = reader(value)
    assert got == expected[column] and type(got) is type(expected[column])


@pytest.mark.parametrize(("value", "shown"), [
    ("x" * 10_000, "'" + "x" * 32 + "'..."),
    ("9" * 5000, "more than 4000 digits"),
    (10**5000, "(a number of 16610 bits)"),    # str() of it raises past 4300 digits
    (float("nan"), "nan"),
    ([3], "[3]"),
], ids=["long text", "5000 digits", "10**5000", "nan", "list"])
def test_the_error_is_one_short_line_naming_what(value, shown):
    with pytest.raises(UsageError) as e:
        whole_number(value, what="rank count", minimum=1)
    text = str(e.value)
    assert text.startswith("invalid rank count ") and shown in text
    assert "\n" not in text and len(text) < 120


def test_range_and_clamp():
    assert whole_number("2", what="n", minimum=2, maximum=4) == 2
    assert whole_number(4.0, what="n", minimum=2, maximum=4) == 4
    for bad in ("1", 5, "05"):
        with pytest.raises(UsageError, match="from 2 to 4"):
            whole_number(bad, what="n", minimum=2, maximum=4)
    assert whole_number("5", what="n", minimum=2, maximum=4, clamp=True) == 4
    assert whole_number(10**5000, what="n", maximum=4, clamp=True) == 4
    with pytest.raises(UsageError):   # clamping is above the range only
        whole_number("1", what="n", minimum=2, maximum=4, clamp=True)
    assert whole_number("\t\n 7 \r\x0b\x0c", what="n") == 7


def test_a_param_written_as_text_still_matches_its_number():
    assert params_match({"bytes": 1 << 30}, {"bytes": " 1073741824"})
    assert params_match({"root": -1}, {"root": "-1"})
    assert params_match({"bytes": 2**64 - 1}, {"bytes": str(2**64 - 1)})
    assert not params_match({"p": 3}, {"p": "\u0663"})
    assert not params_match({"p": 3}, {"p": "+3"})
    assert not params_match({"p": "- 3"}, {"p": -3})
    assert not params_match({"p": math.inf}, {"p": "inf"})
    assert not params_match({"p": 3.5}, {"p": "\u0663.\u0665"})
