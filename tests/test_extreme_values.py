"""Every output of runs holding the extremes a float can be (1.7e308, 1e-300, the subnormal 5e-324,
-0.0, 0, an integer-valued float past 2**53): tables keep their columns (a value too wide for its
column prints in %g form, as nccl-tests' own %g would), CSV and JSON keep the exact value, the
OpenMetrics text uses its float syntax, reports and plots are written, and nothing tracebacks.

The runs are the golden database's runs of every table family (collectives, stream, gemm,
transfer, net, workloads) stored again with their values replaced by the extremes."""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import math
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from judge_helpers import run_cli

from clusterbench.families.collectives.table import CollTable
from clusterbench.records import Measurement, Run
from clusterbench.report.openmetrics import in_base_unit
from clusterbench.report.plots import mean_sd
from clusterbench.store import Store
from clusterbench.units import compact, fit, fixed, format_plain

GOLDEN = Path(__file__).parent / "data" / "golden" / "pre-redesign.db"
EXTREMES = [1.7e308, 1e-300, 5e-324, -0.0, 0.0, 123456789012345678.0, 12.5, 3.25, -7.5, 1e15, -1.7e308]
# the database's values: -1.7e308 and 1.7e308 in one row overflow the judge's standard deviation
# (see test_compare_of_values_spanning_the_float_range)
STORED = EXTREMES[:-1]
# a run of digits no column holds: what an unbounded fixed-point format prints for 1.7e308
WALL = re.compile(r"\d[\d,]{24,}")


@pytest.fixture(scope="module")
def extreme_db(tmp_path_factory) -> str:
    """Each golden run twice (tags copy=0 and copy=1), its values cycling through EXTREMES."""
    where = tmp_path_factory.mktemp("extreme")
    shutil.copy(GOLDEN, where / "golden.db")
    values = itertools.cycle(STORED)
    path = str(where / "extreme.db")
    with Store.open(str(where / "golden.db")) as src, Store.open(path) as dst:
        for run in sorted(src.list_runs(), key=lambda r: r.id or 0):
            for copy in range(2):
                ms = [dataclasses.replace(m, value=next(values)) for m in src.measurements(run.id)]
                again = dataclasses.replace(run, id=None, tags={**run.tags, "copy": str(copy)})
                dst.save_run(again, ms)
    return path


def _ok(rc: int, out: str, err: str, codes: tuple[int, ...] = (0,)) -> None:
    assert rc in codes, (rc, err)
    assert "Traceback" not in out + err and "internal error" not in err, err


# -- the formatters ------------------------------------------------------------------------------

@pytest.mark.parametrize("value, width, decimals, want", [
    (12.5, 6, 2, " 12.50"),              # ordinary values: printf's %6.2f, unchanged
    (-0.0, 6, 2, " -0.00"),
    (1e-300, 6, 2, "  0.00"),
    (1.7e308, 6, 2, "2e+308"),
    (-1.7e308, 6, 2, "-2e308"),          # the exponent's + goes before any digit would
    (1.7e308, 10, 2, "  1.7e+308"),
    (123456789012345678.0, 10, 2, "1.2346e+17"),
    (123456789012345678.0, 7, 0, "1.2e+17"),
    (1e15, 6, 2, " 1e+15"),
])
def test_fixed_keeps_the_column_width(value, width, decimals, want):
    assert fixed(value, width, decimals) == want


def test_fit_never_cuts_a_value_short():
    for v in EXTREMES:
        for width in range(5, 13):
            cell = fit(f"{v:{width}.2f}", v, width)
            if len(f"{v:{width}.2f}") <= width:
                assert cell == f"{v:{width}.2f}"
                continue
            assert len(cell) == width or v == -1.7e308
            # the cell is the value rounded (2e+308 is past the float limit: compared as decimals),
            # never a prefix of its digits
            number, exact = Decimal(cell.strip()), Decimal(v)
            assert number == exact or abs(number - exact) <= abs(exact) / 2, (v, width, cell)


def test_format_plain_and_compact_switch_to_an_exponent_only_at_the_extremes():
    assert format_plain(4177285) == "4,177,285" and format_plain(0.00005) == "0.00005"
    assert format_plain(1.7e308) == "1.7e+308" and format_plain(5e-324) == "5e-324"
    assert format_plain(-0.0) == "0" and format_plain(123456789012345678.0) == "1.23456789012e+17"
    assert compact(94.123) == "94.12" and compact(-7.5, 1, sign=True) == "-7.5"
    assert compact(1.7e308) == "1.7e+308" and compact(3.25e302, 1, sign=True) == "+3.25e+302"


def test_mean_sd_of_values_whose_sum_overflows():
    assert mean_sd([1.7e308, 1.7e308]) == (1.7e308, 0.0)
    mean, sd = mean_sd([1.7e308, -1.7e308, 5e-324])
    assert math.isfinite(mean) and math.isfinite(sd)
    assert mean_sd([1.0, 2.0, 3.0]) == (2.0, 1.0)


def test_openmetrics_value_in_base_unit_is_exact_when_not_converted():
    assert in_base_unit(123456789012345678.0, 1.0) == 123456789012345678.0
    assert in_base_unit(4269.126275, 1e9) == 4269126275000.0
    assert in_base_unit(1.7e308, 1e9) == math.inf   # 1.7e317 B/s: past every float


# -- the collectives table -----------------------------------------------------------------------

def test_collectives_row_with_extremes_lines_up_with_an_ordinary_one():
    def row(value: float) -> str:
        ms = [Measurement("all_reduce", metric, value, "", {"bytes": 8, "count": 2, "dtype": "float",
                                                            "redop": "sum", "root": -1, "placement": place})
              for metric in ("time_us", "algbw", "busbw", "wrong") for place in ("out", "in")]
        (line,) = CollTable("all_reduce").rows(ms)
        return line
    ordinary = row(12.5)
    for v in EXTREMES:
        line = row(v)
        assert len(line) == len(ordinary) or v == -1.7e308, (v, line)
        assert not WALL.search(line), line


def test_collectives_footer_of_counts_past_the_float_limit():
    ms = [Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 8}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 16})]
    footer = CollTable("all_reduce").footer(Run("coll"), ms)
    assert footer[0] == "# Out of bounds values : inf FAILED"
    ms = [m for m in ms if m.metric == "busbw"]
    assert CollTable("all_reduce").footer(Run("coll"), ms)[1] == "# Avg bus bandwidth    : 1.7e+308 "


# -- every command on the extreme database -------------------------------------------------------

def test_results_show_keeps_every_table_aligned(extreme_db):
    """Each row is as long as the same row of the golden run it copies: every cell kept its width.
    An imported nccl-tests table's cells print so that the importer reads back the values stored
    (a round trip, docs/import.md): where no such form fits its column (1.7e308 us is
    ``1.7e+308`` in the 7 characters of the time column: ``2e+308`` would read back as infinity),
    the cell is as wide as that form, and each number it prints is a stored value."""
    with Store.open(extreme_db) as s:
        imported = {r.id for r in s.list_runs() if r.benchmark == "import"}
    stored = {repr(float(v)) for v in STORED}
    for copy_id in range(1, 51):
        golden_id = (copy_id + 1) // 2
        want = (GOLDEN.parent / f"show-{golden_id}.txt").read_text().splitlines()
        rc, out, err = run_cli("results", "show", copy_id, "--db", extreme_db)
        _ok(rc, out, err)
        assert not WALL.search(out), (copy_id, WALL.search(out))
        rows = [line for line in out.splitlines() if not line.startswith("#")]
        # -1.7e308 in nccl-tests' 5-character #wrong column is the one cell no form fits
        want = [line for line in want if not line.startswith("#")]
        assert len(rows) == len(want), copy_id
        table = "Collective test" in out
        for row, was in zip(rows, want):
            if row.lstrip().startswith(("average ", "aggregate ")):
                continue  # running text, no columns
            if copy_id in imported and table and len(row) != len(was):
                assert len(row) > len(was), (copy_id, row, was)
                # past the lead columns (size, count, type, redop, root): stored values, N/A
                assert all(t == "N/A" or repr(float(t)) in stored for t in row.split()[5:]), (copy_id, row)
                continue
            assert len(row) == len(was), (copy_id, row, was)


def test_exports_keep_the_exact_values(extreme_db):
    with Store.open(extreme_db) as s:
        stored = sorted(repr(m.value) for r in s.list_runs() for m in s.measurements(r.id))
    rc, out, err = run_cli("results", "export", "--csv", "1..99", "--db", extreme_db)
    _ok(rc, out, err)
    assert sorted(repr(float(r["value"])) for r in csv.DictReader(io.StringIO(out))) == stored
    rc, out, err = run_cli("results", "export", "--json", "1..99", "--db", extreme_db)
    _ok(rc, out, err)
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted(repr(d["value"]) for d in lines if d["kind"] == "measurement") == stored


def test_openmetrics_uses_its_float_syntax(extreme_db):
    rc, out, err = run_cli("export", "openmetrics", "--db", extreme_db)
    _ok(rc, out, err)
    samples = [line.rsplit(" ", 1)[1] for line in out.splitlines() if line and not line.startswith("#")]
    assert samples
    for text in samples:
        assert re.fullmatch(r"[+-]Inf|NaN|-?\d+(\.\d+)?(e[+-]\d+)?", text), text
    assert "-0.0" in samples and "+Inf" in samples


@pytest.mark.parametrize("groups, extra", [
    (["1..99"], []),
    (["copy=0", "copy=1"], ["--profile", "cpu-smoke", "--link-speed", "100Gbps", "--nodes", "2"]),
])
def test_report_is_written(extreme_db, tmp_path, groups, extra):
    page = tmp_path / "r.html"
    rc, out, err = run_cli("report", *groups, "-o", page, *extra, "--db", extreme_db)
    _ok(rc, out, err)
    # the noise check's own sentences ("slowest iteration 1.7e308/1e-300x the fastest") are the
    # judge's text, outside this change
    md = "\n".join(line for line in (tmp_path / "r.md").read_text().splitlines()
                    if "slowest iteration" not in line)
    assert page.stat().st_size > 0 and any((tmp_path / "r_plots").iterdir())
    assert not WALL.search(md), WALL.search(md)


def test_compare_validate_and_trend_run(extreme_db):
    for argv, codes in ((["compare", "copy=0", "copy=1"], (0, 1)),
                        (["validate", "1..99", "--profile", "cpu-smoke"], (0, 1)),
                        (["validate", "1..99", "--profile", "amd-mi300x-oem"], (0, 1)),
                        (["trend"], (0, 1)), (["trend", "--by", "device"], (0, 1))):
        rc, out, err = run_cli(*argv, "--db", extreme_db)
        _ok(rc, out, err, codes)
        assert not WALL.search(out), (argv, WALL.search(out))


def test_compare_of_values_spanning_the_float_range(db):
    for group, values in (("a", [1.7e308, -1.7e308, 1.7e308]), ("b", [1.0, 2.0, 3.0])):
        for v in values:
            with Store.open(db) as s:
                s.save_run(Run("coll", hosts=["h"], ranks=1, tags={"g": group}),
                           [Measurement("all_reduce", "busbw", v, "GB/s", {"bytes": 8, "placement": "out"})])
    rc, out, err = run_cli("compare", "g=a", "g=b", "--db", db)
    _ok(rc, out, err, (0, 1))


# -- the commands that format their own numbers --------------------------------------------------

# 1e300 stays finite through a percent (x100) or a link rate, so its efficiency or speedup is a
# number of 300 digits in fixed-point form, where 1.7e308 would only reach inf
FAR = [1e300, 1.7e308, 1e-300, 5e-324, -0.0, -7.5, 12.5, 123456789012345678.0, -1e300]
# a median near zero with a tight spread, and one run far below: a deviation of -7.5e302%
NEAR_ZERO = [1e-300, 1.01e-300, 0.99e-300, 1.02e-300, -7.5]
GIB8 = 8 << 30


def _all_reduce(value: float) -> list[Measurement]:
    return [Measurement("all_reduce", metric, value, "GB/s",
                        {"bytes": GIB8, "count": GIB8 // 4, "dtype": "float", "redop": "sum", "root": -1,
                         "placement": place})
            for metric in ("busbw", "algbw") for place in ("out", "in")]


@pytest.fixture(scope="module")
def far_db(tmp_path_factory) -> str:
    """What the commands that judge runs compute from: two-host all_reduce runs (tag v) for a link
    efficiency, runs around 1e-300 with one far below (tag near=0) for a baseline's left-out run,
    MI300X stream runs for a percent of peak, train runs (tag scale=1) for speedups of 1e300, and
    an inventory whose memory is past what a float holds."""
    path = str(tmp_path_factory.mktemp("far") / "far.db")
    huge = {"h1": {"host": "h1", "memory": {"total_bytes": 10 ** 400},
                   "cpu": {"numa_nodes": [{"node": 0, "cpus": "0-1", "memory_bytes": 1.7e308}]}}}
    with Store.open(path) as s:
        for i, v in enumerate(FAR):
            s.save_run(Run("coll", hosts=["h1", "h2"], ranks=2, tags={"v": str(i), "link_speed": "100Gbps"},
                           meta={"inventory": huge}), _all_reduce(v))
            s.save_run(Run("stream", hosts=["h1"], ranks=1, devices=["AMD Instinct MI300X"], tags={"v": str(i)}),
                       [Measurement("stream", "bandwidth", v, "GB/s",
                                    {"kernel": "Triad", "dtype": "double", "device": "0", "array_size": 1 << 28})])
        for v in NEAR_ZERO:
            s.save_run(Run("coll", hosts=["h1", "h2"], ranks=2, tags={"near": "0"}), _all_reduce(v))
        for nodes, v in ((1, 12.5), (2, 1e300), (4, 5e-324), (8, 1.7e308)):
            s.save_run(Run("train", hosts=[f"n{i}" for i in range(nodes)], ranks=nodes, tags={"scale": "1"}),
                       [Measurement("train", "samples_per_s", v, "samples/s", {"stat": "avg"})])
    return path


# digits in one run: what %.2f prints for a value past 1e24 (WALL would take a list of run ids)
DIGITS = re.compile(r"\d{25,}")


def _no_wall(argv: list[str], out: str, err: str) -> None:
    for line in (out + err).splitlines():
        assert not DIGITS.search(line), (argv, line)


@pytest.mark.parametrize("argv, codes", [
    (["validate", "1..99", "--profile", "cpu-smoke", "--link-speed", "100Gbps"], (0, 1)),
    (["validate", "1..99", "--profile", "amd-mi300x-oem", "--link-speed", "1bps", "--nodes", "3"], (1,)),
    (["theory", "--run", "1..99"], (0,)),
    (["theory", "--run", "v=0", "--link", "1bps"], (0,)),
    # a link past any real one (the 20 digits are the user's own, echoed in the heading)
    (["theory", "--link", "99999999999999999999Gbps"], (0,)),
    (["scaling", "scale=1"], (0,)),
    (["scaling", "scale=1", "--baseline", "scale=1"], (0,)),
    (["baseline", "create", "near=0", "-o", "{tmp}/near.yaml"], (0,)),
    (["baseline", "create", "1..99", "-o", "{tmp}/all.yaml"], (0, 2)),
    (["env", "show", "v=0"], (0,)),
])
def test_judging_commands_print_far_values_compactly(far_db, tmp_path, argv, codes):
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = run_cli(*argv, "--db", far_db)
    _ok(rc, out, err, codes)
    _no_wall(argv, out, err)


def test_far_values_read_as_exponents(far_db, tmp_path):
    """What each of those lines says instead of 300 digits."""
    _, out, _ = run_cli("validate", "v=0", "--profile", "cpu-smoke", "--link-speed", "100Gbps", "--db", far_db)
    assert "algbw 1e+300 GB/s = 8e+300% of optimal 12.50 GB/s" in out
    _, out, _ = run_cli("validate", "1..99", "--profile", "amd-mi300x-oem", "--db", far_db)
    assert "# peak stream Triad: best 1.7e+308 GB/s = 3.20755e+306% of AMD Instinct MI300X datasheet" in out
    _, out, _ = run_cli("validate", "v=0", "v=3", "--profile", "amd-mi300x-oem", "--db", far_db)
    assert "= 1.88679e+298% of AMD Instinct MI300X" in out
    _, out, _ = run_cli("theory", "--run", "v=0", "--link", "99999999999999999999Gbps", "--db", far_db)
    head, *rows = out.splitlines()[1:7]
    assert rows[0] == "     2      1.25e+19      1.25e+19" and {len(r) for r in rows} == {len(head)}
    assert "1e+300 GB/s = 8e+282% of 1.25e+19 GB/s" in out
    _, out, _ = run_cli("scaling", "scale=1", "--db", far_db)
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert [r[-2:] for r in rows] == [["1.000", "1.000"], ["8e+298", "4e+298"], ["0.000", "0.000"],
                                      ["1.4e+307", "1.7e+306"]]
    _, _, err = run_cli("baseline", "create", "near=0", "-o", tmp_path / "p.yaml", "--db", far_db)
    assert "-7.5 is -7.5e+302% vs median 1e-300 (modified z -5.05875e+302)" in err, err
    _, out, _ = run_cli("env", "show", "v=0", "--db", far_db)
    assert "memory    9.31323e+390 GiB; NUMA nodes: 0 (cpus 0-1, 1.58325e+299 GiB)" in out


@pytest.mark.parametrize("argv", [
    ["validate", "1..99", "--profile", "cpu-smoke", "--link-speed", "1bps", "--nodes", "2"],
    ["validate", "1..99", "--profile", "amd-mi300x-oem", "--link-speed", "100Gbps", "--nodes", "2"],
    ["theory", "--run", "1..99", "--link", "1bps", "--nodes", "2"],
    ["theory", "--run", "1..99"],
    ["scaling", "copy=1", "--baseline", "copy=0"],
    ["scaling", "copy=0", "copy=1"],
    ["baseline", "create", "1..99", "-o", "{tmp}/b.yaml"],
])
def test_judging_commands_on_the_extreme_database(extreme_db, tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = run_cli(*argv, "--db", extreme_db)
    _ok(rc, out, err, (0, 1, 2) if argv[0] == "baseline" else (0, 1))
    _no_wall(argv, out, err)


SWEEPS = {
    # every node's score around 1e-300 but e's: a z-score and a deviation of 1e302 and more
    "near zero": {"a": 1e-300, "b": 1.01e-300, "c": 1.02e-300, "d": 0.99e-300, "e": -7.5},
    "far apart": {"a": 1.7e308, "b": 1e300, "c": 5e-324, "d": 12.5, "e": -1.7e308},
}


@pytest.mark.parametrize("scores", SWEEPS.values(), ids=SWEEPS)
@pytest.mark.parametrize("link", ["100Gbps", "1bps"])
def test_sweep_of_far_scores(tmp_path, monkeypatch, scores, link):
    """A sweep whose subsets measured values at the float limits (each pair the slower of its two
    nodes): its table, suspects, stored run, JSON and JUnit, and the stored run shown again."""
    from clusterbench.sweep import run as sweep_run
    from clusterbench.sweep.analyze import SubsetResult

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        return SubsetResult(tuple(hosts), stage, min(scores[h] for h in hosts), "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    topology = tmp_path / "topology.conf"
    topology.write_text("SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c,d\nSwitchName=s3 Nodes=e\n")
    db = str(tmp_path / "s.db")
    argv = ["sweep", "--hosts", "a,b,c,d,e", "--link-rate", link, "--topology", topology,
            "--junit", tmp_path / "j.xml", "--db", db]
    rc, out, err = run_cli(*argv)
    _ok(rc, out, err, (0, 1))
    _no_wall(argv, out, err + (tmp_path / "j.xml").read_text())
    # every row's cells end in the same column (the flag after them is empty or SUSPECT)
    assert len({len(line.removesuffix("SUSPECT").rstrip()) for line in out.splitlines()[2:]
                if not line.startswith("#")}) == 1, out
    rc, out, err = run_cli(*argv[:-1], str(tmp_path / "j.db"), "--json")
    _ok(rc, out, err, (0, 1))
    _no_wall(argv, out, err)
    for shown in (["results", "show", "1"], ["validate", "1", "--profile", "cpu-smoke"]):
        rc, out, err = run_cli(*shown, "--db", db)
        _ok(rc, out, err, (0, 1, 2))
        _no_wall(shown, out, err)


def test_judged_percentages_stay_short_at_the_extremes():
    # a CV, an outlier ratio or an efficiency off a value near 0 was printed with fixed
    # decimals: hundreds of digits in a table cell or a reason
    from clusterbench.judge.noise import RowStats, spread_reasons
    from clusterbench.judge.text import cv_text

    assert cv_text(1e200) == "1e+202%" and cv_text(0.0123) == "1.2%" and cv_text(None) == "-"
    stats = RowStats("all_reduce", "8 B", {"min": 1e-300, "max": 1e10, "median": 1e-300, "mad": 1e-301, "cv": 1e200})
    reasons = spread_reasons(stats)
    assert reasons and max(len(r) for r in reasons) < 60, reasons


def test_a_spread_past_the_largest_float_is_not_called_an_infinite_value():
    from clusterbench.judge.compare import INSUFFICIENT, judge
    from clusterbench.judge.stats import summarize

    ordinary, wide, infinite = summarize([1.0, 2.0, 3.0]), summarize([1.7e308, -1.7e308]), summarize([1.0, math.inf])
    args = dict(alpha=0.05, min_effect=0.02, max_cv=0.1)
    assert judge(ordinary, wide, None, True, **args) == (
        INSUFFICIENT, "the spread of B's values is past the largest float: cannot test")
    assert judge(infinite, wide, None, True, **args) == (INSUFFICIENT, "a value of A is not finite: cannot test")


def test_smallest_p_value_of_a_long_history_does_not_overflow():
    from clusterbench.judge.changepoint import Settings, smallest_p_value

    # before: OverflowError from 2 x 516 runs on (C(1032, 516) is past the largest float)
    assert 0 < smallest_p_value(1032, Settings(min_size=2)) < 1e-307
    assert smallest_p_value(2000, Settings(min_size=2)) == 0.0
    assert smallest_p_value(20, Settings(min_size=2)) == 2 / math.comb(20, 10)
