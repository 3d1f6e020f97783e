"""Tests of clusterbench.report.html: a self-contained HTML report, verdict first."""

from __future__ import annotations


def test_words_and_numbers_never_break_only_a_token_wider_than_a_page_may():
    # the browser test (tests/system/test_report_screenshots.py) measures it; this is what the
    # page asks of the browser, without one
    from clusterbench.report.html import _CSS, LONG_TOKEN, table

    body = next(line for line in _CSS.splitlines() if line.startswith("body{"))
    assert "overflow-wrap:anywhere" not in body   # before: "PAS/S", "+42./9%", "env=barem/etal"
    assert "td.n{" in _CSS and "white-space:nowrap" in _CSS.split("td.n{", 1)[1].split("}", 1)[0]
    page = table(["status", "host", "tags", "margin", "error"],
                 [["PASS", "SMC-SC-DC19-06", "env=pinned-1cpu team=a", "+42.9%", "x" * (LONG_TOKEN + 1)]],
                 numeric={3}, classes=["pass"])
    assert '<td class="pass w">PASS</td>' in page              # a status never wraps
    assert '<td class="n">+42.9%</td>' in page                 # nor a number
    assert "<td><span class=w>SMC-SC-DC19-06</span></td>" in page   # a browser breaks after a hyphen
    assert "<td><span class=w>env=pinned-1cpu</span> team=a</td>" in page   # the space still wraps
    assert f'<td class="brk">{"x" * (LONG_TOKEN + 1)}</td>' in page   # whole, it would widen the page
    assert "span.w" in _CSS and "td.brk{overflow-wrap:anywhere}" in _CSS


def test_the_page_has_print_rules():
    from clusterbench.report.html import _CSS

    assert "@page{size:A4 landscape" in _CSS and "@media print{" in _CSS
    rules = _CSS.split("@media print{", 1)[1]
    assert "break-inside:avoid" in rules and "table-header-group" in rules


def test_efficiency_table_is_capped_like_the_other_long_tables():
    """One row per run, op and placement: 600 runs made a 2,400-row table (190 KB of Markdown)."""
    from types import SimpleNamespace

    from clusterbench.judge.theory import Efficiency
    from clusterbench.report import html as report_html

    f = SimpleNamespace(efficiencies=[(rid, Efficiency("all_reduce", 1 << 30, "out", 2, 10.0, 12.5))
                                      for rid in range(1, 352)], device_percents=[])
    page = report_html._efficiency(f)
    assert page.count("<tr>") <= 301 and "51 more rows not shown." in page


def _seed(tmp_path):
    from judge_helpers import save_seed_logs

    from clusterbench.judge.findings import Group, gather
    from clusterbench.judge.profiles import load_profile
    from clusterbench.judge.select import load_runs
    from clusterbench.store import Store

    db = save_seed_logs(str(tmp_path / "seed.db"))
    with Store.open(db) as store:
        runs = load_runs(store, ["seed=mi300x"])
    return gather([Group("seed=mi300x", runs)], profile=load_profile("amd-mi300x-oem"))


def test_the_verdict_box_names_what_failed_and_the_summary_what_was_skipped(tmp_path):
    from clusterbench.report.html import render_html

    page = render_html(_seed(tmp_path), [], {}, "t")
    box = page[page.index('id="verdict"'):page.index("</div>", page.index('id="verdict"'))]
    assert "<p>What failed:</p><ol class=failures><li>TransferBench config Test 2 (DMA G0-&gt;G1): " \
           "48.35 GB/s, needs &gt;= 48.4 GB/s: -0.051 GB/s (-0.1%)</li></ol>" in box
    # two GPUs' BabelStream rows: no majority to find a degraded one, and the page says so
    summary = page[page.index('<h2 id="summary">'):page.index("<h2", page.index('<h2 id="summary">') + 1)]
    assert "Degraded hosts/devices: skipped: no row was measured on 3 or more hosts or devices" in summary
    assert "none found" not in summary
    assert "Noise inside runs: none (" in summary and "row(s) with per-iteration statistics checked)" in summary
    degraded = page[page.index('<h2 id="degraded-hosts-and-devices">'):]
    assert degraded.split("</p>", 1)[0].endswith("Skipped: no row was measured on 3 or more hosts or devices "
                                                 "(at most 2 here): with fewer there is no majority to tell "
                                                 "which one is off.")


def test_an_ab_report_hides_no_comparison_row(tmp_path):
    import random

    from judge_helpers import coll_rows, save

    from clusterbench.judge.findings import Group, gather
    from clusterbench.judge.select import load_runs
    from clusterbench.report.html import render_html
    from clusterbench.store import Store

    db = str(tmp_path / "ab.db")
    rng = random.Random(5)
    for _ in range(3):
        save(db, coll_rows(1.0, rng, noise_small=0.5), tags={"env": "a"})
        save(db, coll_rows(0.9, rng, noise_small=0.5), tags={"env": "b"})
    with Store.open(db) as store:
        groups = [Group(sel, load_runs(store, [sel])) for sel in ("env=a", "env=b")]
    f = gather(groups)
    statuses = {c.status for c in f.comparisons}
    assert {"worse", "noisy"} <= statuses and f.folded_comparisons   # rows of every kind to show
    page = render_html(f, [], {}, "ab")
    section = page[page.index('<h2 id="comparison'):page.index("<h2", page.index('<h2 id="comparison') + 1)]
    assert "<details" not in section   # before: noisy, unchanged and folded rows in closed sections
    assert section.count("<tr>") - section.count("<table>") == len(f.comparisons)   # every row, once
    assert "<h3>" in section and "row(s) too noisy to call" in section and "redundant row(s) folded away" in section


def test_the_groups_execution_context_comes_first_in_what_differs():
    from types import SimpleNamespace

    from clusterbench.envinfo.diff import Difference
    from clusterbench.judge.findings import EnvDiff
    from clusterbench.report import html as report_html

    diffs = [Difference("env.NCCL_IB_HCA", "mlx5_0", "mlx5_1", "environment"),
             Difference("versions.torch", "2.4", "2.5", "versions"),
             Difference("cgroup.cpu_max", "max 100000", "50000 100000", "context"),
             Difference("nics.eth0.kind", None, "veth", "network")]
    page = report_html._environment(SimpleNamespace(env_diffs=[EnvDiff("run 1 (env=a)", "run 2 (env=b)", diffs)]))
    keys = [k for k in ("cgroup.cpu_max", "env.NCCL_IB_HCA", "versions.torch", "nics.eth0.kind") if k in page]
    assert sorted(keys, key=page.index) == ["cgroup.cpu_max", "env.NCCL_IB_HCA", "versions.torch", "nics.eth0.kind"]
    assert "4 difference(s)" in page and "(unset)" in page
