"""Judgement code at its edges: compare with no spread on either side, mixed units, one or two
nodes for degraded-node detection, node counts from tags for link efficiency, and baseline and
scaling with one point or odd inputs."""

from __future__ import annotations

import math

import pytest
from judge_helpers import cli, json_lines, save

from clusterbench.judge.compare import INSUFFICIENT, SAME, compare
from clusterbench.judge.degraded import find_degraded
from clusterbench.judge.efficiency import nodes_of, run_link_efficiency
from clusterbench.judge.outliers import flag_outliers
from clusterbench.judge.scaling import Point, scaling_table
from clusterbench.judge.select import Row
from clusterbench.judge.stats import separated_rank_p, welch
from clusterbench.records import Measurement, Run

PARAMS = {"bytes": 1 << 30, "count": 1 << 28, "dtype": "float", "redop": "sum", "root": -1,
          "placement": "in", "ranks": 16}


def _row(value: float, run_id: int, unit: str = "GB/s", metric: str = "busbw", **params: object) -> Row:
    return Row(Run("coll", id=run_id, hosts=["n1", "n2"]),
               Measurement("all_reduce", metric, value, unit, {**PARAMS, **params}))


def _rows(values: list[float], start: int, unit: str = "GB/s") -> list[Row]:
    return [_row(v, start + i, unit) for i, v in enumerate(values)]


# -- no spread on either side ----------------------------------------------------------------------

@pytest.mark.parametrize(("n_a", "n_b", "p"), [(3, 3, 2 / 20), (5, 5, 2 / 252), (2, 5, 2 / 21), (2, 2, 2 / 6)])
def test_no_spread_on_either_side_is_the_exact_rank_p_never_0(n_a: int, n_b: int, p: float) -> None:
    """Welch's t is 0/0 there; p was 0. Every value of A below every value of B is the most
    extreme arrangement a rank test knows: 2 / C(n_a + n_b, n_a), both directions."""
    r = welch([100.0] * n_a, [101.0] * n_b)
    assert r is not None and r.p == pytest.approx(p, rel=1e-12)
    assert r.p == pytest.approx(separated_rank_p(n_a, n_b), rel=1e-12)
    assert r.diff == 1.0 and r.ci_low is None and r.ci_high is None   # no spread: no interval
    down = welch([101.0] * n_a, [100.0] * n_b)
    assert down is not None and down.p == r.p and down.diff == -1.0
    same = welch([100.0] * n_a, [100.0] * n_b)
    assert same is not None and same.p == 1.0 and same.ci_low is None


def test_rank_p_is_capped_at_1_and_never_negative() -> None:
    assert separated_rank_p(1, 1) == 1.0      # 2 / C(2, 1) = 1
    assert 0.0 < separated_rank_p(400, 400) < 1e-200 and separated_rank_p(541, 541) == 0.0


def test_no_spread_3_vs_3_is_not_called_changed() -> None:
    """Three equal runs a side cannot be told apart at 5% by any rank test (p 0.1 at best)."""
    (c,) = compare(_rows([100.0] * 3, 1), _rows([110.0] * 3, 10))
    assert c.status == SAME and c.test is not None and c.test.p == pytest.approx(0.1)
    assert "p=0.1" in c.verdict and "spread" in c.verdict
    d = c.to_dict()
    assert d["p_value"] == pytest.approx(0.1) and d["ci95_low"] is None and d["ci95_high"] is None


def test_no_spread_5_vs_5_is_called_changed_with_its_rank_p() -> None:
    (c,) = compare(_rows([100.0] * 5, 1), _rows([110.0] * 5, 10))
    assert c.status == "better" and c.test is not None
    assert c.test.p == pytest.approx(2 / 252)
    assert "p<0.01" in c.verdict and "rank test" in c.verdict


def test_no_spread_cli_table_and_json_agree(capsys, db) -> None:
    for v in (100.0,) * 3:
        save(db, [Measurement("all_reduce", "busbw", v, "GB/s", dict(PARAMS))], tags={"g": "a"})
    for v in (101.0,) * 3:
        save(db, [Measurement("all_reduce", "busbw", v, "GB/s", dict(PARAMS))], tags={"g": "b"})
    code, out, err = cli(capsys, "compare", "g=a", "g=b", "--min-effect", "0.5", "--db", db)
    assert code == 0, err
    (line,) = [t for t in out.splitlines() if t.startswith("all_reduce")]
    assert " 0 " not in line and "[+1, +1]" not in line     # was p 0 and a zero-width CI
    assert " 0.1 " in line and "no significant difference" in line
    code, out, err = cli(capsys, "compare", "g=a", "g=b", "--min-effect", "0.5", "--json", "--db", db)
    assert code == 0, err
    row = next(d for d in json_lines(out) if d["kind"] == "comparison")
    assert row["p_value"] == pytest.approx(0.1) and row["p_adjusted"] == pytest.approx(0.1)
    assert row["ci95_low"] is None and row["status"] == SAME


def test_one_side_without_spread_is_still_welch() -> None:
    r = welch([100.0, 100.0, 100.0], [101.0, 102.0, 103.0])
    assert r is not None and 0 < r.p < 1 and r.ci_low is not None and r.ci_low < r.diff < r.ci_high
    assert r.df == pytest.approx(2.0)   # only B's spread: n_b - 1


# -- units -------------------------------------------------------------------------------------------

def test_compare_converts_units_before_testing() -> None:
    """1e5 MB/s is 100 GB/s: was 'B is 99900.0% faster'."""
    (c,) = compare(_rows([100.0, 101.0, 99.0], 1), _rows([100_000.0, 101_000.0, 99_000.0], 10, "MB/s"))
    assert c.unit == "GB/s" and c.status == SAME
    assert c.b.mean == pytest.approx(100.0) and c.delta_pct == pytest.approx(0.0, abs=1e-9)


def test_compare_refuses_to_test_units_that_do_not_convert() -> None:
    (c,) = compare(_rows([100.0, 101.0, 99.0], 1), _rows([100.0, 101.0, 99.0], 10, "us"))
    assert c.status == INSUFFICIENT and c.test is None
    assert "GB/s" in c.verdict and "us" in c.verdict


def test_degraded_converts_units_per_host() -> None:
    """One host that records MB/s is not 1000 times faster or slower than the rest."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, u, {**PARAMS, "host": h}))
            for i, (h, v, u) in enumerate([("a", 100.0, "GB/s"), ("b", 101.0, "GB/s"),
                                           ("c", 99.0, "GB/s"), ("d", 100_500.0, "MB/s")])]
    assert find_degraded(rows) == []
    rows[3] = Row(rows[3].run, Measurement("all_reduce", "busbw", 50_000.0, "MB/s", {**PARAMS, "host": "d"}))
    (d,) = find_degraded(rows)
    assert d.outlier.key == "d" and d.outlier.value == pytest.approx(50.0) and d.unit == "GB/s"


def test_baseline_of_runs_in_two_units_is_one_bound(capsys, db, tmp_path) -> None:
    for v, u in ((100.0, "GB/s"), (101.0, "GB/s"), (99_000.0, "MB/s")):
        save(db, [Measurement("all_reduce", "busbw", v, u, dict(PARAMS))], tags={"g": "x"})
    out = tmp_path / "p.yaml"
    code, _, err = cli(capsys, "baseline", "create", "g=x", "-o", str(out), "--db", db)
    assert code == 0, err
    text = out.read_text()
    assert "baseline: 100" in text and "GB/s" in text, text


# -- degraded nodes with few nodes -------------------------------------------------------------------

@pytest.mark.parametrize("values", [{"a": 100.0}, {"a": 100.0, "b": 50.0}, {"a": 80.0, "b": 80.0, "c": 80.0}])
def test_degraded_needs_a_majority(values: dict[str, float]) -> None:
    """With two nodes there is no majority to say which is slow; equal nodes are never degraded."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
            for i, (h, v) in enumerate(values.items())]
    assert find_degraded(rows) == []


def test_degraded_latency_flags_the_slow_host_only() -> None:
    def row(i: int, h: str, v: float) -> Row:
        return Row(Run("coll", id=i, hosts=[h]), Measurement("all_reduce", "time_us", v, "us", {**PARAMS, "host": h}))
    rows = [row(1, "a", 10.0), row(2, "b", 10.1), row(3, "c", 9.9), row(4, "d", 20.0), row(5, "e", 5.0)]
    assert [d.outlier.key for d in find_degraded(rows)] == ["d"]


# -- node counts for link efficiency ----------------------------------------------------------------

@pytest.mark.parametrize("tag", ["\u00b2", "0", "00", "-2", " 2", "\u0663"])
def test_a_nodes_tag_that_is_not_a_positive_count_falls_back_to_the_hosts(tag: str) -> None:
    """'²' passed isdigit() and int() raised ValueError (a traceback); 0 gave no efficiency."""
    run = Run("coll", hosts=["a", "b"], ranks=16, tags={"nodes": tag, "link_speed": "100Gbps"})
    assert nodes_of(run) == 2
    ms = [Measurement("all_reduce", "algbw", 10.0, "GB/s", dict(PARAMS))]
    (e,) = run_link_efficiency(run, ms, None)
    assert e.nodes == 2


def test_a_nodes_tag_that_is_a_count_wins() -> None:
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "4"})) == 4
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "4"}), 8) == 8


def test_a_nodes_tag_of_400_digits_is_no_internal_error(tmp_path, capsys) -> None:
    """report of such a run: OverflowError (int too large to convert to float), an internal error."""
    from judge_helpers import cli, save

    db = str(tmp_path / "n.db")
    save(db, [Measurement("all_reduce", "algbw", 10.0, "GB/s", dict(PARAMS))],
         tags={"nodes": "9" * 400, "link_speed": "100Gbps"})
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "9" * 400})) == 2**53
    rc, _, err = cli(capsys, "report", "1", "-o", str(tmp_path / "r.html"), "--db", db)
    assert rc == 0 and "internal error" not in err, err


# -- scaling ---------------------------------------------------------------------------------------

def test_scaling_single_point_and_unordered_counts() -> None:
    (only,) = scaling_table([Point("g", 4, 4, 300.0)])
    assert only.speedup == 1.0 and only.efficiency == 1.0
    rows = scaling_table([Point("g", 4, 32, 300.0), Point("g", 1, 8, 100.0), Point("g", 2, 16, 150.0)])
    assert [(r.nodes, r.ranks) for r in rows] == [(1, 8), (2, 16), (4, 32)]
    assert [r.efficiency for r in rows] == pytest.approx([1.0, 0.75, 0.75])


def test_scaling_refuses_a_throughput_that_is_not_positive() -> None:
    from clusterbench.errors import UsageError

    with pytest.raises(UsageError, match="throughput"):
        scaling_table([Point("g", 1, 1, 100.0), Point("g", 2, 2, -5.0)])
    with pytest.raises(UsageError, match="throughput"):
        scaling_table([Point("g", 1, 1, 0.0)])
    assert math.isfinite(scaling_table([Point("g", 1, 1, 100.0), Point("g", 2, 2, 0.0)])[1].efficiency)


# -- outliers on three or four points ---------------------------------------------------------------

@pytest.mark.parametrize("healthy", [[100.0, 100.0], [100.0, 100.0, 100.0]])
def test_a_slow_node_beside_nodes_that_agree_exactly_is_flagged(healthy: list[float]) -> None:
    """With the MAD 0 the mean-absolute-deviation score of one odd value is n x 0.798 whatever its
    size (2.39 for 3 nodes, 3.19 for 4): a node at half speed was never flagged when the others
    agreed exactly, yet was when they differed by 0.1%."""
    from clusterbench.judge.outliers import flag_outliers

    values = {f"n{i}": v for i, v in enumerate(healthy)} | {"slow": 50.0}
    assert [o.key for o in flag_outliers(values)] == ["slow"]
    jitter = {f"n{i}": v + 0.1 * i for i, v in enumerate(healthy)} | {"slow": 50.0}
    assert [o.key for o in flag_outliers(jitter)] == ["slow"]
    assert flag_outliers(values, higher_is_better=False) == []          # fast is not degraded
    assert flag_outliers(values | {"slow": 97.0}) == []                  # within 5%
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
            for i, (h, v) in enumerate(values.items())]
    assert [d.outlier.key for d in find_degraded(rows)] == ["slow"]


@pytest.mark.parametrize("values,bad", [
    ({"a": 10.0, "b": 10.0, "c": 10.0, "d": 1.0, "e": 1.0}, {"d", "e"}),     # two equally bad of 5
    ({**{f"n{i}": 5.0 for i in range(6)}, "x": 1.0, "y": 1.0, "z": 1.0}, {"x", "y", "z"}),
    ({"a": 10.0, "b": 10.0, "c": 10.0, "d": 9.9, "e": 1.0}, {"e"}),          # within 5%: not flagged
])
def test_every_value_off_an_exact_majority_is_judged_by_its_deviation(values, bad) -> None:
    """With the healthy majority exactly equal, two or more equally bad nodes were never flagged:
    the fallback score was inflated by the outliers themselves."""
    assert {o.key for o in flag_outliers(values)} == bad


def test_no_exact_majority_keeps_the_robust_score() -> None:
    # half equal is no majority: the usual score decides (nothing here is off by 3.5)
    assert flag_outliers({"a": 10.0, "b": 10.0, "c": 9.0, "d": 9.0}) == []
