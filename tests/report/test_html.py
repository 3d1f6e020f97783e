"""Tests of clusterbench.report.html: a self-contained HTML report, verdict first."""

from __future__ import annotations


def test_the_page_says_where_long_text_may_break():
    # the browser test above needs chromium; this is what it checks, without one
    from clusterbench.report.html import _CSS

    body = next(line for line in _CSS.splitlines() if line.startswith("body{"))
    assert "overflow-wrap:anywhere" in body


def test_efficiency_table_is_capped_like_the_other_long_tables():
    """One row per run, op and placement: 600 runs made a 2,400-row table (190 KB of Markdown)."""
    from types import SimpleNamespace

    from clusterbench.judge.theory import Efficiency
    from clusterbench.report import html as report_html

    f = SimpleNamespace(efficiencies=[(rid, Efficiency("all_reduce", 1 << 30, "out", 2, 10.0, 12.5))
                                      for rid in range(1, 352)], device_percents=[])
    page = report_html._efficiency(f)
    assert page.count("<tr>") <= 301 and "51 more rows not shown." in page


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
