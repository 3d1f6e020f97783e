"""Adjusting the A/B rows' p-values for testing many rows at once (judge/stats.py holm,
benjamini_hochberg; judge/compare.py) and what it does to a real 34-size sweep.

``python tests/helpers/adjust_trials.py`` prints the table of docs/judge.md ("Many rows at once")
from more trials than the tests use; the numbers there come from it."""

from __future__ import annotations

import math
import random

import pytest
from adjust_trials import LARGE, base_sweep, simulate, sweep_runs
from judge_helpers import cli, json_lines, save

from clusterbench.judge.compare import DEFAULT_ADJUST, compare, family_size
from clusterbench.judge.stats import adjust, benjamini_hochberg, holm

# The worked example of Benjamini and Hochberg (1995), section 4.2: the 15 p-values of a trial of
# a treatment after myocardial infarction (Neuhaus et al. 1992), sorted.
BH_EXAMPLE = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240,
              0.4262, 0.5719, 0.6528, 0.7590, 1.0000]


def test_benjamini_hochberg_on_the_papers_example():
    # By hand: p(i) * 15 / i, then the smallest value at or above each rank.
    # i=5: 0.0603; i=6: 0.0695 > i=7's 0.063857, which it takes; i=9: 0.0765; i=10: 0.486 ...
    want = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.0298 * 15 / 7, 0.0298 * 15 / 7, 0.0645, 0.0765,
            0.486, 0.4262 * 15 / 11, 0.5719 * 15 / 12, 0.6528 * 15 / 13, 0.7590 * 15 / 14, 1.0]
    got = benjamini_hochberg(BH_EXAMPLE)
    assert got == pytest.approx(want, rel=1e-12)
    # The paper: at q = 0.05 the procedure rejects the four smallest (p(4) = 0.0095 <= 4/15 x
    # 0.05), where Bonferroni-type procedures reject three.
    assert [q < 0.05 for q in got] == [True] * 4 + [False] * 11


def test_holm_on_the_same_example():
    # By hand: p(i) * (15 - i + 1), then the largest value so far; 0.05/12 < p(4) stops at three.
    want = [0.0015, 0.0056, 0.0247, 0.114, 0.2211, 0.278, 0.278, 0.278, 0.3213] + [1.0] * 6
    got = holm(BH_EXAMPLE)
    assert got == pytest.approx(want, rel=1e-12)
    assert sum(q < 0.05 for q in got) == 3


def test_adjusted_p_values_keep_the_given_order():
    # Holm's procedure by hand on 0.01, 0.04, 0.03, 0.005: sorted 0.005 x 4 = 0.02, 0.01 x 3 =
    # 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 raised to 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005 x 4 = 0.02, 0.01 x 2 = 0.02, 0.03 x 4/3 = 0.04, 0.04 x 1 = 0.04
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


@pytest.mark.parametrize("method", ["holm", "fdr"])
def test_edge_cases(method):
    assert adjust([], method) == []
    assert adjust([0.03], method) == [0.03]         # one row: nothing to adjust against
    assert adjust([1.0, 1.0], method) == [1.0, 1.0]
    assert adjust([1.0, 0.0], method) == [1.0, 0.0]
    # ties get one value, whatever order they come in
    tied = adjust([0.02, 0.01, 0.02, 0.02], method)
    assert tied[0] == tied[2] == tied[3] and tied[1] <= tied[0]
    assert holm([0.02] * 4) == [0.08] * 4 and benjamini_hochberg([0.02] * 4) == [0.02] * 4
    # no adjusted value above 1, none below its own p
    ps = [0.3, 0.6, 0.9, 0.45, 0.01]
    assert all(p <= q <= 1.0 for p, q in zip(ps, adjust(ps, method), strict=True))
    with pytest.raises(ValueError):
        adjust([0.5, math.nan], method)
    with pytest.raises(ValueError):
        adjust([1.5], method)


def test_none_changes_nothing_and_unknown_is_refused():
    assert adjust([0.3, 0.01], "none") == [0.3, 0.01]
    with pytest.raises(ValueError):
        adjust([0.3], "bonferroni")


def test_adjusted_p_values_are_monotone_in_the_raw_ones():
    rng = random.Random(3)
    for _ in range(200):
        ps = [rng.random() ** rng.choice((1, 3, 8)) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.3:
            ps += ps[: rng.randint(1, len(ps))]    # ties
        for method in ("holm", "fdr"):
            qs = adjust(ps, method)
            pairs = sorted(zip(ps, qs, strict=True))
            assert all(q1 <= q2 for (_, q1), (_, q2) in zip(pairs, pairs[1:], strict=False)), (method, ps)
            assert all(p <= q <= 1.0 for p, q in pairs)
        # BH never stricter than Holm: it controls a weaker error
        assert all(b <= h + 1e-15 for b, h in zip(benjamini_hochberg(ps), holm(ps), strict=True))


# -- a real sweep, repeated -----------------------------------------------------------------------

def test_default_is_fdr():
    assert DEFAULT_ADJUST == "fdr"


def test_chance_rows_go_while_a_real_step_stays():
    """Five runs a side of the real sweep at 2% run-to-run noise. Unadjusted, unchanged rows come
    out changed by chance, with or without a real change elsewhere; under the default they are
    gone, and a real 10% drop of busbw at the 16 large rows is found in every one of them (Holm,
    stricter, loses some). One fixed seed: the same rows every time."""
    base = base_sweep()
    rng = random.Random(3)
    a = sweep_runs(base, 5, 0.02, rng, 1)
    same = sweep_runs(base, 5, 0.02, rng, 1000)
    step = sweep_runs(base, 5, 0.02, rng, 2000, step=0.10)

    def changed(rows: list, large: bool) -> list:
        return [c for c in rows if c.metric == "busbw" and (c.params["bytes"] >= LARGE) == large
                and c.status in ("worse", "better")]

    for b in (same, step):
        plain, default = compare(a, b, adjust_by="none"), compare(a, b)
        assert len(changed(plain, large=False)) == 2            # chance rows, unadjusted
        assert changed(default, large=False) == []              # gone under the default
        # what the adjustment took away says so, with both p-values
        kept = [c for c in default if c.metric == "busbw" and "after fdr adjustment" in c.verdict]
        assert len(kept) == 2 and all(c.status == "same" and c.test.p < 0.05 <= c.p_adjusted for c in kept)
        # each nccl-tests line counted once, by busbw or, where busbw printed one value in every
        # run (0.01 GB/s), by its time: 34 sizes x 2 placements less the lines that never varied
        lines = {(c.params["bytes"], c.params["placement"]) for c in default if not c.a.sd == c.b.sd == 0}
        assert family_size(default) == len(lines) < 68
    found = changed(compare(a, step), large=True)
    assert len(found) == 16 and all(c.status == "worse" and "adj. p<" in c.verdict for c in found)
    assert len(changed(compare(a, step, adjust_by="holm"), large=True)) == 14


def test_derived_metrics_follow_their_measurement():
    base = base_sweep()
    rng = random.Random(5)
    a, b = sweep_runs(base, 5, 0.02, rng, 1), sweep_runs(base, 5, 0.02, rng, 1000, step=0.05)
    for method in ("holm", "fdr"):
        rows = compare(a, b, adjust_by=method)
        by_key = {(c.metric, c.params["bytes"], c.params["placement"]): c for c in rows}
        for (metric, size, placement), c in by_key.items():
            head = by_key[("busbw", size, placement)]
            if metric != "busbw" and c.test is not None and head.test is not None and head.a.sd + head.b.sd > 0:
                assert c.p_adjusted == head.p_adjusted and c.adjust == method
                # one decision: algbw and time are called changed exactly when busbw is
                assert (c.status in ("worse", "better")) == (head.status in ("worse", "better")), (metric, size)


def test_holm_is_stricter_than_fdr_on_a_small_change():
    # 5% at the large sizes, 2% noise, 5 runs a side: BH finds more of it than Holm
    res = simulate(trials=3, runs=5, cv=0.02, step=0.05, seed=2)
    assert res["fdr"][2] >= 2 * res["holm"][2] and res["fdr"][2] >= 0.6 * res["fdr"][3]


def _store_two_sides(db) -> None:
    """Five runs a side at 3% noise; B 10% lower at the large sizes (env=a, env=b)."""
    base = base_sweep()
    rng = random.Random(11)
    for side, start, step in (("a", 1, 0.0), ("b", 1000, 0.10)):
        rows = sweep_runs(base, 5, 0.03, rng, start, step)
        for i in range(5):
            save(db, [r.m for r in rows if r.run.id == start + i], benchmark="import", tags={"env": side})


def test_cli_option_text_and_json(db, capsys):
    _store_two_sides(db)
    results = {}
    for method in (None, "none", "holm", "fdr"):
        extra = ["--adjust", method] if method else []
        rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--json", *extra)
        assert rc == 0
        *rows, summary = json_lines(out)
        assert summary["adjust"] == (method or "fdr") and summary["family"] > 60
        assert all(r["adjust"] == summary["adjust"] for r in rows)
        results[method] = {(r["metric"], r["params"]["bytes"], r["params"]["placement"]): r for r in rows}
    assert results[None] == results["fdr"]                      # the default
    for r in results["none"].values():
        assert r["p_adjusted"] == r["p_value"]
    holm_rows, fdr_rows = results["holm"], results["fdr"]
    for key, r in fdr_rows.items():
        if r["p_value"] is not None and r["metric"] == "busbw":   # algbw and time take busbw's
            assert r["p_value"] <= r["p_adjusted"] <= holm_rows[key]["p_adjusted"]
    worse = {m: sum(r["status"] == "worse" for r in res.values()) for m, res in results.items()}
    assert worse["none"] > worse["fdr"] >= worse["holm"] > 0
    rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--metric", "busbw", "--adjust", "holm")
    lines = out.splitlines()
    assert lines[1].startswith("# p adj: p-values adjusted by holm over ")
    assert " p adj " in lines[2] and "adj. p<" in out
    rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--adjust", "none")
    assert " p adj " not in out and "adj. p" not in out
    rc, _, err = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--adjust", "bonferroni")
    assert rc == 2 and "bonferroni" in err


def test_report_verdict_agrees_with_compare(tmp_path, db, capsys):
    _store_two_sides(db)
    for method in ("none", "fdr"):
        rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--json", "--adjust", method)
        *rows, _ = json_lines(out)
        # the report counts rows after folding algbw and time into busbw
        worse = sum(r["status"] == "worse" for r in rows if r["metric"] == "busbw")
        better = sum(r["status"] == "better" for r in rows if r["metric"] == "busbw")
        extra = [] if method == "fdr" else ["--adjust", method]
        rc, out, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(tmp_path / f"{method}.html"), "--db", db,
                         "--json", *extra)
        (info,) = json_lines(out)
        assert info["adjust"] == method
        reason = next(r for r in info["reasons"] if r.startswith("comparison "))
        assert f": {worse} worse, {better} better, " in reason
        assert ("p adjusted by fdr over" in reason) == (method == "fdr")

