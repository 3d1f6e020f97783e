"""Tests of clusterbench.judge.theory: theoretical limits."""

import math

import pytest

from clusterbench.bench.workloads.ddp_comm import summarize
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import error_tolerance
from clusterbench.judge.efficiency import nodes_of
from clusterbench.judge.select import _number
from clusterbench.judge.theory import MAX_NODES, link_efficiency, parse_nodes, theory_table
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


def test_seed_table_100gbps():
    rows = theory_table("100Gbps", parse_nodes("2,4,8,16,24,32"))
    assert [round(r.algbw, 2) for r in rows] == [12.5, 8.33, 7.14, 6.67, 6.52, 6.45]
    # busbw of the optimum is the link speed itself
    assert all(abs(r.busbw - 12.5) < 1e-9 for r in rows)


def test_efficiency_seed_two_machines():
    # The seed: 8.42 GB/s algbw on 2 machines is 67% of the 12.5 GB/s maximum.
    ms = [Measurement("all_reduce", "algbw", 8.42, "GB/s", {"bytes": 1 << 32, "placement": "out"}),
          Measurement("all_reduce", "busbw", 8.42, "GB/s", {"bytes": 1 << 32, "placement": "out"})]
    (e,) = link_efficiency(ms, 2, 12.5e9)
    assert round(e.ratio, 2) == 0.67


def test_bad_nodes():
    for bad in ("1", "x", "2,,4"):
        with pytest.raises(UsageError):
            parse_nodes(bad)
    with pytest.raises(UsageError):
        theory_table("fast", [2])


@pytest.mark.parametrize("nodes", ["x", "²", "2.5", 2.5, True, -3, 0, 1, None, [2], "9" * 5000])
def test_odd_nodes_param_has_no_optimum(nodes):
    m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 8, "nodes": nodes, "stat": "avg"})
    assert link_efficiency([m], 2, 12.5e9) == []


def test_whole_nodes_param(db):
    for nodes in (4, "4", 4.0):
        m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 8, "nodes": nodes, "stat": "avg"})
        (e,) = link_efficiency([m], 2, 12.5e9)
        assert e.nodes == 4 and e.optimal_algbw == pytest.approx(12.5 * 4 / 6)
    huge = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 8, "nodes": 10**400, "stat": "avg"})
    (e,) = link_efficiency([huge], 2, 12.5e9)
    assert e.optimal_algbw == pytest.approx(6.25, rel=1e-12)


@pytest.mark.parametrize("size", ["x", None, 1.5, -1, True, "²"])
def test_odd_bytes_param(size):
    m = Measurement("all_reduce", "algbw", 1.0, "GB/s", {"bytes": size, "placement": "in"})
    (e,) = link_efficiency([m], 2, 12.5e9)
    assert e.bytes == 0 and e.optimal_algbw == 12.5


@pytest.mark.parametrize(("reader", "column"), [(r, i) for i, r in enumerate(READERS)],
                         ids=[r.__name__.strip("_") for r in READERS])
@pytest.mark.parametrize("row", TABLE, ids=[repr(row[0])[:12] for row in TABLE])
def test_every_reader_follows_the_one_rule(reader, column, row):
    value, *expected = row
    got = reader(value)
    assert got == expected[column] and type(got) is type(expected[column])


def test_summary_records_measurements_and_efficiency_is_judged_at_read_time():
    base = {"layers": 16, "bytes": 100, "bucket_cap_mb": 25.0, "ranks": 2}
    ms = summarize([0.5, 0.25], 10**9, base, ["a", "b"], 2)
    by = {(m.metric, m.params["stat"]): m.value for m in ms}
    assert by[("step_time_ms", "avg")] == pytest.approx(375.0)
    assert by[("algbw", "max")] == pytest.approx(4.0)
    assert ("efficiency", "avg") not in by
    # The AWS study: 6.21 GB/s over 2 machines at 100 Gbps is 50% of the optimal 12.5 GB/s.
    ms = summarize([10**9 / 6.21e9], 10**9, base, ["a", "a", "b", "b"], 4)
    (eff,) = link_efficiency(ms, 4, 100e9 / 8)
    assert eff.nodes == 2 and eff.ratio == pytest.approx(6.21 / 12.5)
