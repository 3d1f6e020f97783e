"""Tests of clusterbench.cli.commands.report: ``clusterbench report``."""

import html.parser
import json
import os
import random
import re
import stat
import xml.dom.minidom
from pathlib import Path

import pytest
from fleet_helpers import real_measurements, store_history
from histories import A3MEGA, HOSTS, _busbw_step, _history, _step
from hostile_text import HOSTILE
from judge_helpers import cli, coll_rows, json_lines, run_cli, save
from judged_rows import PARAMS
from report_runs import (
    _busbw,
    _report_busbw,
    _save_with_telemetry,
    _store,
    _transfer,
    _verdict_of_html,
)
from special_files import _is, _special
from stored_runs import (
    WALL,
    _ok,
    _one_line,
    _one_line_usage_error,
    _run_cli,
    cli_store_options,
)
from synthetic_runs import _fill

from clusterbench.judge.efficiency import nodes_of
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.report.outfile import MANIFEST
from clusterbench.store import Store


def _ab_store(db: str) -> None:
    """Three runs per side; B is 10% slower; the sides' environments differ in one version; every
    run has telemetry; one A run has a noisy stream row."""
    from clusterbench.records import Run

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


def _verdict_of_markdown(md: str) -> tuple[str, list[str]]:
    lines = md.splitlines()
    status = lines[2].strip("*")
    reasons = []
    for line in lines[4:]:
        if not line.startswith("- "):
            break
        reasons.append(line[2:].replace("\\|", "|"))
    return status, reasons


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


EVIL_HOST = "h$\\frac{$x\x1b[31m\x07\x7f"


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs += [(name, value or "") for name, value in attrs]
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


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


def test_report_plots_the_history_and_lists_the_change(capsys, db, tmp_path):
    base = [m for m in real_measurements(A3MEGA) if m.metric == "busbw"]
    ids = store_history(db, base, HOSTS[:3], 12, factor=_busbw_step("gpu02", 7, 0.85), seed=7)
    out = tmp_path / "fleet.html"
    rc, _, err = cli(capsys, "report", "fleet=test", "-o", str(out), "--db", db)
    assert rc == 0, err
    page = out.read_text()
    assert '<h2 id="history">History</h2>' in page and "all_reduce 8G float sum -1 in 16 busbw over time" in page
    assert f'<td class="n">{ids[("gpu02", 7)]}</td><td class="w">2025-03-08</td>' in page
    plots = sorted(p.name for p in (tmp_path / "fleet_plots").glob("history-*.png"))
    assert len(plots) == 2   # in- and out-of-place 8 GiB rows


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
    for anchor in ("comparison-a-env-a-b-env-b", "what-differs-between-the-groups", "telemetry", "noise-inside-runs"):
        assert f'href="#{anchor}"' in toc and f'<h2 id="{anchor}">' in page
    # redundant rows fold away: algbw, time and all-zero #wrong are not counted, only listed
    assert "redundant row(s) folded away (algbw, wrong" in page
    assert "redundant row(s) folded away (algbw, wrong)" in md
    plots = {Path(p).name for p in info["plots"]}
    assert "all-reduce-busbw.png" in plots and "all-reduce-algbw.png" not in plots
    # A and B on one plot per op, bands over each side's runs; telemetry per group
    assert "all_reduce busbw vs message size (mean and 95% CI over each group&#x27;s runs)" in page
    assert {"telemetry-env-a.png", "telemetry-env-b.png"} <= plots
    # what differs between the groups' environments, as env diff says it, at the top
    env = page[page.index('<h2 id="what-differs-between-the-groups">'):page.index('<h2 id="comparison-a-env-a-b-env-b">')]
    assert page.index('<h2 id="summary">') < page.index('<h2 id="what-differs-between-the-groups">')
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


def test_report_percentages(probe_db, tmp_path):
    page = tmp_path / "r.html"
    rc, _, err = run_cli("report", "x=coll", "x=stream", "-o", page, "--link-speed", "1bps", "--db", probe_db)
    assert rc == 0, err
    md, html = (tmp_path / "r.md").read_text(), page.read_text()
    for text in (md, html):
        assert "inf%" not in text and "nan" not in text
    assert "| 1.36e+320% |" in md and "| 3.95253e-312% |" in md      # efficiency over 1 bps
    assert "| 3.20755e+306% |" in md and "| 9.32199e-326% |" in md    # stream vs datasheet
    assert "| 1.25e-10 |" in md                                       # the optimum is not 0.00


def test_a_nodes_tag_of_400_digits_is_no_internal_error(tmp_path, capsys) -> None:
    """report of such a run: OverflowError (int too large to convert to float), an internal error."""
    from judge_helpers import cli, save

    db = str(tmp_path / "n.db")
    save(db, [Measurement("all_reduce", "algbw", 10.0, "GB/s", dict(PARAMS))],
         tags={"nodes": "9" * 400, "link_speed": "100Gbps"})
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "9" * 400})) == 2**53
    rc, _, err = cli(capsys, "report", "1", "-o", str(tmp_path / "r.html"), "--db", db)
    assert rc == 0 and "internal error" not in err, err


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_output_naming_a_device_or_fifo_without_a_suffix_is_refused(capsys, db, tmp_path, kind):
    # before: `-o /dev/null` wrote /dev/null.html, /dev/null.md and /dev/null_plots/ into /dev
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    save(db, _busbw(1.0))
    special = tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(special)
    else:   # /dev/null's numbers, made in the test's directory
        os.mknod(special, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    rc, out, err = cli(capsys, "report", "1", "-o", special, "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "not a regular file" in err and str(special) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", "special"]


def test_labels_with_tex_dollars_and_control_characters_are_drawn_as_text(capsys, db, tmp_path):
    # before: an internal error (matplotlib parsed "$\frac{$" as TeX), and the control characters
    # went raw into the SVGs, which are then not XML
    for i in range(7):   # enough runs of one host for its history figure
        save(db, _busbw(1.0 + i, host=EVIL_HOST), hosts=[EVIL_HOST], tags={"t": "$\\frac{$"})
    page = tmp_path / "r.html"
    rc, _, err = cli(capsys, "report", 't="$\\\\frac{$"', "-o", page, "--db", db)
    assert rc == 0, err
    svgs = sorted((tmp_path / "r_plots").glob("*.svg"))
    assert [p.name.split("-")[0] for p in svgs] == ["all", "history"]
    for svg in svgs:
        xml.dom.minidom.parseString(svg.read_bytes())   # raises on a raw \x1b
    # the history's legend names the host as results show prints it
    assert "\\x1b[31m\\x07\\x7f" in svgs[1].read_text()


def test_rows_only_at_size_zero_get_their_table_and_no_empty_figure(capsys, db, tmp_path):
    save(db, _busbw(3.0, size=0))
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "1", "-o", page, "--db", db)
    assert rc == 0, err
    assert "(0 figure(s))" in out and not (tmp_path / "r_plots").exists()
    assert "<h3>all_reduce busbw (GB/s)</h3>" in page.read_text()


def test_hostile_text_stays_text_in_every_output(capsys, db, tmp_path):
    for i in range(3):
        save(db, _report_busbw(1.0 + i) + _report_busbw(2.0 + i, 1024, host=HOSTILE), hosts=[HOSTILE], devices=[HOSTILE],
             tags={"g": "a", "k" + HOSTILE: HOSTILE}, errors=[HOSTILE])
        save(db, _report_busbw(1.5 + i) + _report_busbw(2.5 + i, 1024, host=HOSTILE), hosts=["n"], tags={"g": "b"})
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "g=a", "g=b", "-o", page, "--title", HOSTILE, "--db", db, "--json")
    assert rc == 0 and err == "", err
    (summary,) = json_lines(out)
    text = page.read_text(encoding="utf-8")
    parsed = _Tags()
    parsed.feed(text)
    assert parsed.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "div", "span",
                           "ul", "li", "p", "nav", "a", "b", "table", "thead", "tbody", "tr", "th", "td",
                           "details", "summary", "figure", "img", "figcaption", "code"}, parsed.tags
    assert not [a for a, _ in parsed.attrs if a.startswith("on")], parsed.attrs
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    # self-contained: nothing the page or its figures would fetch
    sources = [v for a, v in parsed.attrs if a == "src"]
    assert len(sources) >= 2 and all(v.startswith("data:image/png;base64,") for v in sources)
    assert all(v.startswith("#") for a, v in parsed.attrs if a == "href")
    assert "url(" not in parsed.style and "@import" not in parsed.style and "@font-face" not in parsed.style
    for svg in summary["plots"]:
        if svg.endswith(".svg"):
            body = Path(svg).read_text(encoding="utf-8")
            xml.dom.minidom.parseString(body.encode())
            assert not re.search(r"""(href|src)=["'](https?:|//)""", body)


def test_the_terminal_line_shows_escape_codes_as_text(capsys, db, tmp_path):
    # before: a tag's ESC[2J (clear screen) in a selector and the -o path went raw to the terminal
    for i in range(3):
        save(db, _report_busbw(1.0 + i * 0.01), tags={"t": "a\x1b[2J"})
        save(db, _report_busbw(2.0 + i * 0.01), tags={"t": "b\u202e"})
    page = tmp_path / "\x1b[31mr.html"
    rc, out, err = cli(capsys, "report", 't="a\x1b[2J"', 't="b\u202e"', "-o", page, "--db", db)
    assert rc == 0, err
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\x1b[31mr.html" in out
    assert page.exists()


def test_figures_whose_names_collide_keep_a_file_each(capsys, db, tmp_path):
    # before: "team=a-b" and "team=a_b" made one file name; B's matrix and telemetry replaced A's,
    # and the page showed B's figure twice, once under A's caption
    _save_with_telemetry(db, _transfer(1.0), {"team": "a-b"})
    _save_with_telemetry(db, _transfer(0.5), {"team": "a_b"})
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "team=a-b", "team=a_b", "-o", page, "--db", db, "--json")
    assert rc == 0, err
    (summary,) = json_lines(out)
    assert len(summary["plots"]) == len(set(summary["plots"])) == 8
    assert all(Path(p).exists() for p in summary["plots"])
    images = re.findall(r'src="(data:image/png;base64,[^"]+)"', page.read_text())
    assert len(images) == len(set(images)) == 4


def test_each_figure_is_drawn_once_as_png(capsys, db, tmp_path, monkeypatch):
    # before: every figure was drawn to PNG twice, for the page and for its file
    from matplotlib.figure import Figure

    drawn: list[str] = []
    real = Figure.savefig

    def counting(self, fname, *args, **kw):
        drawn.append(kw.get("format") or "")
        return real(self, fname, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", counting)
    _save_with_telemetry(db, _transfer(1.0), {"team": "a"})
    rc, out, err = cli(capsys, "report", "team=a", "-o", tmp_path / "r.html", "--db", db)
    assert rc == 0, err
    assert sorted(drawn) == ["png", "png", "svg", "svg"]   # the matrix and the telemetry


def test_a_figure_that_fails_to_draw_is_skipped_in_one_line(capsys, db, tmp_path, monkeypatch):
    # before: whatever matplotlib raised for one figure cost the whole report (an internal error)
    from clusterbench.report import plots

    real = plots.timeline

    def failing(*args, **kw):
        fig = real(*args, **kw)

        def savefig(*_a, **_k):
            raise RuntimeError("renderer gave up")

        fig.savefig = savefig
        return fig

    monkeypatch.setattr(plots, "timeline", failing)
    _save_with_telemetry(db, _transfer(1.0), {"team": "a"})
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "team=a", "-o", page, "--db", db, "--json")
    assert rc == 0, err
    assert len(err.splitlines()) == 1 and "telemetry of team=a" in err and "renderer gave up" in err
    (summary,) = json_lines(out)
    assert [Path(p).name for p in summary["plots"]] == ["transfer-p2p-uni-team-a.png", "transfer-p2p-uni-team-a.svg"]
    assert summary["figures_skipped"] == [{"figure": "telemetry of team=a", "why": "RuntimeError: renderer gave up"}]
    assert page.read_text().count("<img") == 1


def test_a_name_near_the_limit_is_written(capsys, db, tmp_path):
    # before: the temporary file beside it (".NAME.tmpPID") was longer than a name may be
    save(db, _report_busbw(1.0) + _report_busbw(2.0, 1024), tags={"g": "a"})
    page = tmp_path / ("x" * 248 + ".html")   # its plot directory's name is 254 bytes
    rc, out, err = cli(capsys, "report", "g=a", "-o", page, "--db", db)
    assert rc == 0, err
    assert page.exists() and page.with_suffix(".md").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_name_whose_plot_directory_is_too_long_is_one_line(capsys, db, tmp_path):
    # before: "internal error: OSError: [Errno 36]", exit 1
    save(db, _report_busbw(1.0) + _report_busbw(2.0, 1024), tags={"g": "a"})
    page = tmp_path / ("x" * 250 + ".html")
    rc, out, err = cli(capsys, "report", "g=a", "-o", page, "--db", db, "--json")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "internal error" not in err and "too long" in err and "_plots" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]


@pytest.mark.parametrize("name", ["dir.html", "dir"])
def test_an_output_that_is_a_directory_is_one_line(capsys, db, tmp_path, name):
    save(db, _report_busbw(1.0), tags={"g": "a"})
    (tmp_path / "dir.html").mkdir()
    rc, out, err = cli(capsys, "report", "g=a", "-o", tmp_path / name, "--db", db, "--json")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "directory" in err, err
    assert list((tmp_path / "dir.html").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.html", "results.db"]


def test_a_group_with_one_run_and_groups_with_nothing_in_common(capsys, db, tmp_path):
    save(db, _report_busbw(1.0), tags={"g": "a"})
    save(db, [Measurement("stream", "bandwidth", 1.7e308, "GB/s",
                          {"kernel": "Copy", "array_size": 8, "dtype": "double", "device": 0})], tags={"g": "b"})
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "g=a", "g=b", "-o", page, "--db", db, "--json")
    assert rc == 0 and err == "", err
    (summary,) = json_lines(out)
    assert summary["runs"] == [1, 2] and "share no" in json.dumps(summary["reasons"])
    assert "share no" in page.with_suffix(".md").read_text()


def test_report_runs_as_many_statements_for_many_runs_as_for_few(tmp_path, capsys, statements):
    counts = []
    for n in (4, 16):
        db = str(tmp_path / f"runs{n}.db")
        _fill(db, n)
        statements.clear()
        _run_cli(capsys, ["report", "grp=a", "grp=b", "kind=stream", "-o", str(tmp_path / f"r{n}.html"),
                          "--db", db])
        counts.append(len(statements))
    assert counts[0] == counts[1]


def test_report_refuses_a_file_where_its_plots_go_before_writing_anything(capsys, stored, tmp_path):
    (tmp_path / "z_plots").write_text("mine\n")
    _one_line(*cli(capsys, "report", "1", "-o", str(tmp_path / "z.html"), "--db", stored), tmp_path / "z_plots")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", "z_plots"]
    assert (tmp_path / "z_plots").read_text() == "mine\n"


def test_report_names_the_summary_that_is_a_directory_and_writes_nothing(capsys, stored, tmp_path):
    (tmp_path / "v.md").mkdir()
    _one_line(*cli(capsys, "report", "1", "-o", str(tmp_path / "v.html"), "--db", stored),
              f"{tmp_path / 'v.md'}: it is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", "v.md"]


@pytest.mark.parametrize("name", ["", "x/.."])
def test_report_needs_a_file_name(capsys, stored, tmp_path, monkeypatch, name):
    # before: an internal error (pathlib cannot add a suffix to an empty name)
    monkeypatch.chdir(tmp_path)
    _one_line(*cli(capsys, "report", "1", "-o", name, "--db", stored), "give the HTML file's name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_report_never_replaces_a_device_or_fifo(capsys, stored, tmp_path, kind):
    page = tmp_path / "r.html"
    _special(page, kind)
    _one_line(*cli(capsys, "report", "1", "-o", str(page), "--db", stored), page, "not a regular file")
    assert _is(page, kind) and sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "results.db"]


def test_report_into_proc_is_one_line(capsys, stored):
    _one_line(*cli(capsys, "report", "1", "-o", "/proc/clusterbench-test.html", "--db", stored), "/proc/")


def test_report_through_a_symlink_writes_its_target(capsys, stored, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "r.html").write_text("old")
    link = tmp_path / "r.html"
    link.symlink_to(site / "r.html")
    rc, _, err = cli(capsys, "report", "1", "-o", str(link), "--db", stored)
    assert rc == 0, err
    assert link.is_symlink() and "<html" in (site / "r.html").read_text()
    assert (tmp_path / "r.md").is_file() and any((tmp_path / "r_plots").iterdir())
    assert not [p for p in tmp_path.rglob(".*tmp*")]


def test_report_written_again_with_fewer_figures_leaves_no_old_plots(capsys, db, tmp_path):
    for i in range(7):   # seven runs of one host: the report of them all has history figures
        save(db, coll_rows(1.0 + i / 10, random.Random(i), host="h1"), hosts=["h1"], tags={"t": "x"})
    page, plots = tmp_path / "r.html", tmp_path / "r_plots"
    rc, _, err = cli(capsys, "report", "t=x", "-o", page, "--db", db)
    assert rc == 0, err
    first = sorted(p.name for p in plots.glob("history-*"))
    assert first
    (plots / "mine.txt").write_text("notes")
    rc, out, err = cli(capsys, "report", "1", "-o", page, "--db", db)
    assert rc == 0 and err == "", err
    left = sorted(p.name for p in plots.iterdir() if p.name != MANIFEST)
    assert not set(first) & set(left) and "mine.txt" in left
    assert f"{len(left) - 1} plot file(s)" in out


@pytest.mark.parametrize("argv", [("report", "1", "-o", "{tmp}/r.html"), ("export", "openmetrics"),
                                  ("validate", "1")])
def test_a_profile_that_is_a_directory_is_named_as_one(capsys, stored_store_options, tmp_path, argv):
    profile = tmp_path / "profiles"
    profile.mkdir()
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = cli_store_options(capsys, *argv, "--profile", profile, "--db", stored_store_options)
    _one_line_usage_error(rc, out, err)
    assert err == f"clusterbench: error: profile file {profile} is a directory\n"
    assert not (tmp_path / "r.html").exists()


def test_the_report_lists_series_too_short_to_show_a_change(capsys, db, tmp_path):
    _history(db, _step(8, 4))
    out = tmp_path / "r.html"
    rc, _, err = cli(capsys, "report", "1..8", "-o", str(out), "--db", db)
    assert rc == 0, err
    page = out.read_text()
    history = page[page.index('<h2 id="history">'):]
    # "No change of level in any series" alone read as a stable history
    assert "No change of level in any series" in history
    assert "<li>h1 stream Triad bandwidth: 8 runs: at least 12 are needed to detect a change at alpha 0.01</li>" \
        in history
