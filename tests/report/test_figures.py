"""Tests of clusterbench.report.figures: which figures a report has."""

from __future__ import annotations

import random

import pytest
from judge_helpers import coll_rows, save

from clusterbench.judge.findings import Group, gather
from clusterbench.judge.select import load_runs
from clusterbench.store import Store

pytest.importorskip("matplotlib")


def _ab(tmp_path, one_group: bool = False):
    db = str(tmp_path / "ab.db")
    rng = random.Random(3)
    for i in range(4):
        for k, (env, scale) in enumerate((("a", 1.0), ("b", 0.8))):
            save(db, coll_rows(scale, rng), tags={"env": env}, hosts=["n1"],
                 started_at=f"2026-01-0{1 + k}T0{i}:00:00.000Z")
    with Store.open(db) as store:
        if one_group:
            groups = [Group("all", load_runs(store, ["env=a"]) + load_runs(store, ["env=b"]))]
        else:
            groups = [Group(sel, load_runs(store, [sel])) for sel in ("env=a", "env=b")]
    return gather(groups)


def _history_lines(f):
    from clusterbench.report import figures, plots

    (entry, *_) = [e for e in figures.build_figures(f) if e.section == "history"]
    fig = entry.draw()
    try:
        ax = fig.axes[0]
        return entry, [t.get_text() for t in ax.get_legend().get_texts()], len(ax.collections)
    finally:
        plots.close(fig)


def test_an_ab_history_draws_the_groups_apart_with_their_bands(tmp_path):
    # before: both groups' runs on one host were one line, A's level running into B's
    entry, labels, bands = _history_lines(_ab(tmp_path))
    assert labels == ["env=a on n1, n=4", "env=b on n1, n=4"]
    assert bands == 2 and "95% confidence interval" in entry.title and "env=a vs env=b" in entry.title


def test_one_group_s_history_is_a_line_per_host(tmp_path):
    _, labels, bands = _history_lines(_ab(tmp_path, one_group=True))
    assert labels == ["n1"] and bands == 0
