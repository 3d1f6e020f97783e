import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from judge_helpers import cli, coll_rows, json_lines, save

from clusterbench.records import Measurement

EVIL = "<script>alert(1)</script>node"


def _store(db: str) -> None:
    rng = random.Random(31)
    for i in range(3):
        save(db, coll_rows(1.0, rng), tags={"env": "native"}, hosts=[f"{EVIL}{i}", "node-b"],
             devices=["AMD Instinct MI300X"] * 2)
        save(db, coll_rows(0.9, rng), tags={"env": "container", "link_speed": "100Gbps"},
             hosts=["node-a", "node-b"])
    ms = [Measurement("transfer", "bandwidth", 48.0 + (i + j) % 3, "GB/s",
                      {"src": f"G{i}", "dst": f"G{j}", "test": "p2p", "direction": "uni", "stat": "pair"})
          for i in range(4) for j in range(4) if i != j]
    ms += [Measurement("stream", "bandwidth", bw * (0.7 if dev == 3 else 1.0), "GB/s",
                       {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": dev})
           for k, bw in (("Copy", 4200.0), ("Triad", 3900.0)) for dev in range(6)]
    ms += [Measurement("gemm", "tflops", t, "TFLOP/s", {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": d})
           for d, t in (("fp32", 97.0), ("bf16", 650.0))]
    save(db, ms, benchmark="import", hosts=["mi300x-1"], devices=["AMD Instinct MI300X"], tags={"kind": "node"})


def test_report_files_and_escaping(tmp_path, db, capsys):
    _store(db)
    out = tmp_path / "r.html"
    rc, stdout, _ = cli(capsys, "report", "env=native", "kind=node", "-o", str(out),
                        "--profile", "amd-mi300x-oem", "--db", db, "--json")
    assert rc == 0
    (info,) = json_lines(stdout)
    page = out.read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;node0" in page
    assert "http://" not in page and "https://" not in page  # self-contained: nothing fetched
    assert page.count("data:image/png;base64,") >= 5  # busbw, algbw, heatmap, stream, gemm, validation
    plots = {Path(p).name for p in info["plots"]}
    assert {"all-reduce-busbw.png", "all-reduce-busbw.svg", "stream-bandwidth.png", "gemm-tflops.svg"} <= plots
    assert any(n.startswith("transfer-p2p") for n in plots)
    # device 3's 30% slower stream shows up as degraded
    assert any(d["by"] == "device" and d["key"] == "3" for d in info["degraded"])
    md = out.with_suffix(".md").read_text()
    assert "&lt;script&gt;" in md and "<script>" not in md
    # validation table: one of six GPUs is 30% slow, so Copy fails and says where
    assert "| FAIL | BabelStream Copy | 2940.00 GB/s" in md and "1 of 6 below the bound; worst at device=3" in md
    # two groups: the report carries the A/B comparison
    rc, _, _ = cli(capsys, "report", "env=native", "env=container", "-o", str(out), "--db", db)
    md = out.with_suffix(".md").read_text()
    assert rc == 0 and "## Comparison: A = env=native, B = env=container" in md
    assert "B is" in md and "slower" in md


def test_report_bad_input(tmp_path, db, capsys):
    _store(db)
    rc, _, err = cli(capsys, "report", "env=nothing", "-o", str(tmp_path / "x.html"), "--db", db)
    assert rc == 2 and "matches no run" in err
    rc, _, err = cli(capsys, "report", "1", "-o", str(tmp_path / "no" / "x.html"), "--db", db)
    assert rc == 2 and "does not exist" in err


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(tmp_path, db, capsys):
    _store(db)
    out = tmp_path / "r.html"
    rc, _, _ = cli(capsys, "report", "env=native", "env=container", "-o", str(out), "--link-speed",
                   "100Gbps", "--db", db)
    assert rc == 0
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}"]
    png = tmp_path / "shot.png"
    subprocess.run(base + [f"--screenshot={png}", "--window-size=1200,3000", out.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000
    dom = subprocess.run(base + ["--dump-dom", out.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    # the page as the browser built it shows the run's figures, escaped hostnames, no injected script
    assert "Comparison: A = env=native, B = env=container" in dom
    assert "<script" not in dom and "&lt;script&gt;alert(1)&lt;/script&gt;node0" in dom
    assert dom.count("<img") >= 1 and "all_reduce busbw vs message size" in dom
    # verdict first: the browser's page opens with it, before any section
    assert dom.index('id="verdict"') < dom.index("<h2") and _verdict_of_html(dom)[0] == "REGRESSION"
    assert '<nav class="toc">' in dom
    assert "optimal GB/s" in dom  # efficiency vs theory from --link-speed
    assert "<th>p</th><th>p adj</th>" in dom and "p adj: p-values adjusted by fdr over" in dom


# -- verdict first, A/B curves with bands, folding, contents, environment, telemetry, noise ----

def _ab_store(db: str) -> None:
    """Three runs per side; B is 10% slower; the sides' environments differ in one version; every
    run has telemetry; one A run has a noisy stream row."""
    from clusterbench.records import Run, TelemetrySample
    from clusterbench.store import Store

    rng = random.Random(7)
    for side, scale, torch in (("a", 1.0, "2.4.0"), ("b", 0.9, "2.5.1")):
        for i in range(3):
            ms = coll_rows(scale, rng)
            ms += [Measurement("all_reduce", "wrong", 0.0, "", dict(m.params)) for m in ms if m.metric == "busbw"]
            if side == "a" and i == 0:
                base = {"kernel": "Copy", "array_size": 1 << 25, "dtype": "double", "device": "cuda:0"}
                ms += [Measurement("stream", "bandwidth", 3000.0, "GB/s", dict(base))]
                ms += [Measurement("stream", "time_us", v, "us", {**base, "stat": s})
                       for s, v in (("min", 100.0), ("max", 9400.0), ("avg", 300.0))]
            run = Run("coll", hosts=["node-a", "node-b"], ranks=16, tags={"env": side},
                      versions={"torch": torch, "nccl": "2.21.5"}, devices=["NVIDIA H100 80GB HBM3"] * 16)
            t0 = 1_700_000_000.0 + i * 100
            tele = [TelemetrySample(t0 + k, metric, v + k, unit, host, "gpu0")
                    for k in range(5) for host in ("node-a", "node-b")
                    for metric, v, unit in (("gpu_power", 500.0, "W"), ("gpu_temperature", 60.0, "C"))]
            with Store.open(db) as s:
                s.save_run(run, ms, tele)


def _verdict_of_html(page: str) -> tuple[str, list[str]]:
    import html as htmlmod
    import re

    block = re.search(r'<div class="verdict v-[a-z]+" id="verdict"><span class="word">([A-Z]+)</span><ul>(.*?)</ul>',
                      page)
    assert block, "no verdict block"
    return block.group(1), [htmlmod.unescape(x) for x in re.findall(r"<li>(.*?)</li>", block.group(2))]


def _verdict_of_markdown(md: str) -> tuple[str, list[str]]:
    lines = md.splitlines()
    status = lines[2].strip("*")
    reasons = []
    for line in lines[4:]:
        if not line.startswith("- "):
            break
        reasons.append(line[2:].replace("\\|", "|"))
    return status, reasons


def test_report_says_its_verdict_first_with_the_markdowns_counts(tmp_path, db, capsys):
    _ab_store(db)
    out = tmp_path / "ab.html"
    rc, stdout, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db, "--json")
    assert rc == 0
    (info,) = json_lines(stdout)
    page, md = out.read_text(), out.with_suffix(".md").read_text()
    status, reasons = _verdict_of_html(page)
    assert (status, reasons) == _verdict_of_markdown(md) == (info["verdict"], info["reasons"])
    assert status == "REGRESSION"
    comparison = next(r for r in reasons if r.startswith("comparison env=a vs env=b: "))
    assert " worse, " in comparison and not comparison.startswith("comparison env=a vs env=b: 0 worse")
    # the default adjustment counts each measurement once: busbw, not algbw beside it, nor #wrong (0 throughout)
    assert comparison.endswith(" of 32 rows (p adjusted by fdr over 32 measurements)")
    assert "1 noise warning(s) inside runs" in reasons
    # the verdict comes before any section, then a table of contents of every section
    assert page.index('id="verdict"') < page.index("<h2")
    toc = page[page.index('<nav class="toc">'):page.index("</nav>")]
    for anchor in ("comparison-a-env-a-b-env-b", "environment-differences", "telemetry", "noise-inside-runs"):
        assert f'href="#{anchor}"' in toc and f'<h2 id="{anchor}">' in page
    # redundant rows fold away: algbw, time and all-zero #wrong are not counted, only listed
    assert "redundant row(s) folded away (algbw, wrong" in page
    assert "redundant row(s) folded away (algbw, wrong)" in md
    plots = {Path(p).name for p in info["plots"]}
    assert "all-reduce-busbw.png" in plots and "all-reduce-algbw.png" not in plots
    # A and B on one plot per op, bands over each side's runs; telemetry per group
    assert "all_reduce busbw vs message size (mean and 95% CI over each group&#x27;s runs)" in page
    assert {"telemetry-env-a.png", "telemetry-env-b.png"} <= plots
    # what differs between the groups' environments, as env diff says it
    env = page[page.index('<h2 id="environment-differences">'):]
    assert "versions.torch" in env and "2.4.0" in env and "2.5.1" in env and "versions.nccl" not in env
    assert "| versions | versions.torch | 2.4.0 | 2.5.1 |" in md
    # the noisy stream row, with what to do
    assert "slowest iteration 94.0x the fastest" in page and "run more iterations" in page


def test_a_clean_single_group_passes(tmp_path, db, capsys):
    rng = random.Random(3)
    for _ in range(2):
        save(db, coll_rows(1.0, rng, noise_small=0.01), tags={"env": "x"})
    out = tmp_path / "x.html"
    rc, stdout, _ = cli(capsys, "report", "env=x", "-o", str(out), "--db", db)
    assert rc == 0 and stdout.startswith("PASS")
    assert _verdict_of_html(out.read_text())[0] == "PASS"
    assert _verdict_of_markdown(out.with_suffix(".md").read_text())[0] == "PASS"


def test_confidence_band_is_the_t_interval_over_runs():
    from clusterbench.report.plots import band_points

    def run(v: float) -> list[Measurement]:
        return [Measurement("all_reduce", "busbw", v, "GB/s", {"bytes": 1024}),
                Measurement("all_reduce", "busbw", v + 2, "GB/s", {"bytes": 1024, "host": "b"})]

    xs, means, lows, highs = band_points([run(1.0), run(2.0), run(3.0)], "bytes")
    # per run the mean over its rows (2, 3, 4); over runs: mean 3, sd 1, t(0.975, 2) = 4.303
    assert xs == [1024.0] and means == [3.0]
    assert abs(highs[0] - 3.0 - 4.302653 / 3 ** 0.5) < 1e-4 and abs(means[0] - lows[0] - (highs[0] - 3.0)) < 1e-9
    one = band_points([run(1.0)], "bytes")
    assert one[1] == [2.0] and math.isnan(one[2][0]) and math.isnan(one[3][0])  # one run: no band


def test_a_point_one_run_backs_gets_no_band_and_says_n_1():
    """Three runs measured 1 KiB..4 KiB, one of them 8 KiB too: the band stopped at zero width
    on 8 KiB, as if that value were certain."""
    from clusterbench.report.plots import Curve, band_points, close, size_curve

    def run(v: float, sizes: tuple[int, ...]) -> list[Measurement]:
        return [Measurement("all_reduce", "busbw", v * b / 1024, "GB/s", {"bytes": b}) for b in sizes]

    runs = [run(1.0, (1024, 2048, 4096, 8192)), run(1.1, (1024, 2048, 4096)), run(0.9, (1024, 2048, 4096))]
    xs, means, lows, highs = band_points(runs, "bytes")
    assert xs == [1024.0, 2048.0, 4096.0, 8192.0] and means[3] == 8.0
    assert all(lo < m < hi for lo, m, hi in zip(lows[:3], means[:3], highs[:3]))
    assert math.isnan(lows[3]) and math.isnan(highs[3])   # was lows[3] == highs[3] == 8.0
    fig = size_curve("t", "busbw (GB/s)", [Curve("A", runs)], "bytes", "size")
    ax = fig.axes[0]
    (band,) = ax.collections
    band_xs = {float(x) for path in band.get_paths() for x, _ in path.vertices}
    assert 4096.0 in band_xs and 8192.0 not in band_xs
    assert ax.get_legend_handles_labels()[1] == ["A, n=3 (n=1 at 1 size: no band)"]
    close(fig)
    # a single run: no band at all, and the legend says n=1
    fig = size_curve("t", "busbw (GB/s)", [Curve("B", runs[:1])], "bytes", "size")
    assert not fig.axes[0].collections and fig.axes[0].get_legend_handles_labels()[1] == ["B, n=1"]
    close(fig)


def test_report_shows_no_spread_for_a_single_value(tmp_path, db, capsys):
    # One run a side: every row has one value, whose sd is undefined, not "± 0".
    rng = random.Random(3)
    save(db, coll_rows(1.0, rng), tags={"env": "a"})
    save(db, coll_rows(0.9, rng), tags={"env": "b"})
    out = tmp_path / "r.html"
    rc, _, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db)
    page = out.read_text()
    assert rc == 0 and "insufficient" in page
    assert "± 0<" not in page and "± 0.0<" not in page


def test_noisy_for_want_of_repetitions_says_so_plainly(tmp_path, db, capsys):
    # one run a side: every row is untestable, and the verdict's reasons used to give only the
    # counts under the word NOISY, as if the hardware were noisy
    rng = random.Random(5)
    save(db, coll_rows(1.0, rng, noise_small=0.01), tags={"env": "a"})
    save(db, coll_rows(1.0, rng, noise_small=0.01), tags={"env": "b"})
    out = tmp_path / "one.html"
    rc, stdout, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db, "--json")
    assert rc == 0
    (info,) = json_lines(stdout)
    html_verdict = _verdict_of_html(out.read_text())
    assert html_verdict == _verdict_of_markdown(out.with_suffix(".md").read_text()) \
        == (info["verdict"], info["reasons"])
    status, reasons = html_verdict
    assert status == "NOISY"
    assert reasons[-1] == ("not enough repetitions to judge 32 row(s) (n=1 vs 1; a test needs 2 per side): "
                           "nothing measured was noisy")
    rc, stdout, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db)
    assert stdout.startswith("NOISY: ") and "not enough repetitions to judge 32 row(s) (n=1 vs 1" in stdout


def test_reasons_for_untestable_rows_tell_few_values_from_infinite_ones():
    from clusterbench.judge.compare import compare
    from clusterbench.judge.findings import Findings, Group
    from clusterbench.judge.select import Row
    from clusterbench.records import Run

    def rows(values, bench, start):
        return [Row(Run("coll", id=start + i), Measurement(bench, "bandwidth", v, "GB/s", {"kernel": "Copy"}))
                for i, v in enumerate(values)]

    a = rows([100.0, 101.0, 99.0], "stream", 1) + rows([5.0], "transfer", 1)
    b = rows([100.0, float("inf"), 99.0], "stream", 10) + rows([5.0, 5.1, 4.9], "transfer", 10)
    f = Findings([Group("a", []), Group("b", [])], comparisons=compare(a, b))
    reasons = f.verdict().reasons
    assert "not enough repetitions to judge 1 row(s) (n=1 vs 3; a test needs 2 per side): nothing measured " \
           "was noisy" in reasons
    assert "1 row(s) not tested: a value, or the difference of the means, is not finite" in reasons


def _table_rows(md: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row is ``header``."""
    lines = md.splitlines()
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        rows.append([c.strip() for c in line.strip("| ").split(" | ")])
    return rows


def test_report_tables_show_the_adjusted_p_the_verdict_went_by(tmp_path, db, capsys):
    """The tables showed only Welch's own p while the verdict went by the adjusted one: a row
    with p=0.03 could read "no significant difference" with nothing on the page to say why."""
    import html as htmlmod
    import re

    _ab_store(db)
    out = tmp_path / "ab.html"
    rc, _, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db)
    assert rc == 0
    page, md = out.read_text(), out.with_suffix(".md").read_text()
    note = ("p adj: p-values adjusted by fdr over 32 measurement(s) (algbw and time follow their busbw row); "
            "a verdict needs p adj below alpha")
    # the method is named once beside the tables, as compare's terminal table names it
    assert htmlmod.unescape(page).count(note) == 1 and md.count(note) == 1
    # every comparison table of the page has the column right after p
    tables = re.findall(r"<table><thead><tr>(.*?)</tr></thead>", page)
    compared = [t for t in tables if "<th>verdict</th>" in t]
    assert len(compared) >= 3 and all("<th>p</th><th>p adj</th><th>verdict</th>" in t for t in compared)
    header = "| benchmark | metric | params | n A/B | delta | p | p adj | verdict |"
    rows = _table_rows(md, header)
    assert rows and all(r[-1].startswith("B is ") for r in rows)
    for r in rows:   # fdr never lowers a p-value, and the changed rows are changed by the adjusted one
        p, p_adj = float(r[5]), float(r[6])
        assert p <= p_adj < 0.05 and "adj. p&lt;" in r[-1]   # Markdown escapes "<"
    # the page's cells are the same numbers
    first = page[page.index("<th>p adj</th>"):]
    cells = re.findall(r'<td class="n">([^<]*)</td>', first[:first.index("</table>")])
    assert rows[0][5] in cells and rows[0][6] in cells
    # without an adjustment there is nothing beside p to show
    rc, _, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(out), "--db", db, "--adjust", "none")
    page, md = out.read_text(), out.with_suffix(".md").read_text()
    assert rc == 0 and "p adj" not in page and "p adj" not in md
    assert "| benchmark | metric | params | n A/B | delta | p | verdict |" in md


def _error_segments(ax) -> list[tuple[float, float, float]]:
    """(x, low, high) of every vertical error bar drawn on ``ax``."""
    from matplotlib.collections import LineCollection

    return [(float(seg[0][0]), float(min(seg[0][1], seg[1][1])), float(max(seg[0][1], seg[1][1])))
            for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()]


def test_a_bar_one_value_backs_gets_no_error_bar_and_says_n_1():
    """A's Triad was measured once, its Copy three times: the Triad bar carried an error bar of
    length 0, as if that one value were certain; B, measured once, had no sign of it at all."""
    from clusterbench.report.plots import bars, close

    def rows(kernel: str, values: list[float], size: int = 1 << 25) -> list[Measurement]:
        return [Measurement("stream", "bandwidth", v, "GB/s", {"kernel": kernel, "array_size": size})
                for v in values]

    a = rows("Copy", [100.0, 110.0, 90.0]) + rows("Triad", [95.0])
    b = rows("Copy", [80.0]) + rows("Triad", [70.0])
    fig = bars("t", "bandwidth (GB/s)", [("A", a), ("B", b)], lambda m: m.params["kernel"], "array_size", "size")
    ax = fig.axes[0]
    # one error bar: A's Copy, one sd (10) either side of its mean; none of length 0 anywhere
    (seg,) = _error_segments(ax)
    assert seg[0] == 0.0 and abs(seg[1] - 90.0) < 1e-9 and abs(seg[2] - 110.0) < 1e-9
    assert ax.get_legend_handles_labels()[1] == ["A, n=3 (n=1 at 1 bar: no error bar)", "B, n=1"]
    close(fig)
    # lines against the array size (stream over several sizes): the same rule per point
    small = rows("Copy", [50.0, 60.0], 1 << 20) + rows("Copy", [100.0], 1 << 25)
    fig = bars("t", "bandwidth (GB/s)", [("A", small)], lambda m: m.params["kernel"], "array_size", "size")
    ax = fig.axes[0]
    assert [s[0] for s in _error_segments(ax)] == [float(1 << 20)]
    assert all(hi > lo for _, lo, hi in _error_segments(ax))
    assert ax.get_legend_handles_labels()[1] == ["Copy, n=2 (n=1 at 1 size: no error bar)"]
    close(fig)
