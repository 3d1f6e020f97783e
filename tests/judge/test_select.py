"""Tests of clusterbench.judge.select: picking measurements out of runs."""

from __future__ import annotations

import math

import pytest
from judged_rows import _rows

from clusterbench.judge.compare import compare
from clusterbench.judge.select import Row, Selection, params_match, select
from clusterbench.records import Measurement, Run


def test_no_spread_5_vs_5_is_called_changed_with_its_rank_p() -> None:
    (c,) = compare(_rows([100.0] * 5, 1), _rows([110.0] * 5, 10))
    assert c.status == "better" and c.test is not None
    assert c.test.p == pytest.approx(2 / 252)
    assert "p<0.01" in c.verdict and "rank test" in c.verdict


@pytest.mark.parametrize(("want", "have", "same"), [
    (1, "1.0", True),
    ("1.0", 1, True),              # was False: a number written as text matched one way only
    (2**53 + 1, 2**53, False),     # was True: integers compared as floats
    (2**53 + 1, str(2**53), False),
    (2**53 + 1, 2**53 + 1, True),
    (1000, "1_000", False),        # was True: float() reads Python's digit separators
    ("1_000", 1000, False),
    (8, 8.0, True),
    ("in", "in", True),
    (True, 1, False),
    ("true", True, True),
    ([1, 2], "2", True),
])
def test_params_compare_as_numbers_whichever_side_is_text(want, have, same):
    assert params_match({"p": want}, {"p": have}) is same


def test_a_param_written_as_text_still_matches_its_number():
    assert params_match({"bytes": 1 << 30}, {"bytes": " 1073741824"})
    assert params_match({"root": -1}, {"root": "-1"})
    assert params_match({"bytes": 2**64 - 1}, {"bytes": str(2**64 - 1)})
    assert not params_match({"p": 3}, {"p": "\u0663"})
    assert not params_match({"p": 3}, {"p": "+3"})
    assert not params_match({"p": "- 3"}, {"p": -3})
    assert not params_match({"p": math.inf}, {"p": "inf"})
    assert not params_match({"p": 3.5}, {"p": "\u0663.\u0665"})


def test_a_selection_picks_what_select_picks_in_the_same_order() -> None:
    """``Selection.select`` matches each distinct set of the named params once: it must give
    ``select``'s rows, in order, for values that look alike and are not (1, 1.0, "1", True, a
    list, null), for absent params, and for records that share one params dict."""
    shared = {"bytes": 8, "placement": "out"}
    values = [1, 1.0, "1", " 1", True, "true", [1, 2], {"a": 1}, None, "x", -0.0, 0, 2**53 + 1, 2**53]
    params = [shared, shared, {"bytes": 8}, {"bytes": "8", "placement": "out", "leg": "tx"}, {"placement": "out"}]
    params += [{"bytes": 8, "p": v} for v in values] + [{"p": v} for v in reversed(values)]
    run = Run("coll", id=1)
    rows = [Row(run, Measurement("all_reduce", metric, 1.0, "GB/s", p))
            for p in params for metric in ("busbw", "algbw")]
    rows.append(Row(run, Measurement("all_gather", "busbw", 1.0, "GB/s", shared)))
    wants = [({}, ()), ({"bytes": 8}, ()), ({"bytes": 8}, ("leg",)), ({"bytes": [8, 16], "placement": "out"}, ()),
             ({}, ("p",)), ({"placement": "in"}, ())]
    wants += [({"p": v}, ()) for v in values] + [({"p": [v, "x"]}, ("leg",)) for v in values]
    picker = Selection(rows)
    for want, absent in wants:
        for bench, metric in (("all_reduce", "busbw"), ("all_gather", "busbw"), ("stream", "bandwidth")):
            got, expected = picker.select(bench, metric, want, absent), select(rows, bench, metric, want, absent)
            assert [id(r) for r in got] == [id(r) for r in expected], (bench, metric, want, absent)
