"""``report`` and its output forms against hostile text, many series, broken plotting and paths
that cannot be written: figures whose names collide, a terminal line carrying a tag's escape
codes, Markdown that fetches an image, JUnit text that reorders itself, file names near the
limit, figures too large to draw, a legend of hundreds of groups, matplotlib that cannot be
imported or fails on one figure, full and read-only file systems."""

from __future__ import annotations

import html.parser
import json
import os
import re
import subprocess
import sys
import warnings
import xml.dom.minidom
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from judge_helpers import cli, json_lines, save
from tmpfs_helpers import small_tmpfs

import clusterbench
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store

SRC = Path(clusterbench.__file__).resolve().parents[1]   # the tree under test, for a child process
HOSTILE = ("</script><script>alert(1)</script><img src=x onerror=alert(2)>\"' onload=x `code` "
           "![t](https://e.invalid/t.png) [l](javascript:alert(3)) | ]]> \x1b[31m\x07\x7f\x9b \u202egnp.\u2066")


def _busbw(value: float, size: int = 8, **params: object) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s",
                        {"bytes": size, "count": max(1, size // 4), "dtype": "float", "redop": "sum", "root": -1,
                         "placement": "out", **params})]


def _transfer(scale: float) -> list[Measurement]:
    return [Measurement("transfer", "bandwidth", scale * (48.0 + i + j), "GB/s",
                        {"src": f"G{i}", "dst": f"G{j}", "test": "p2p", "direction": "uni", "stat": "pair"})
            for i in range(3) for j in range(3) if i != j]


def _save_with_telemetry(db: str, ms: list[Measurement], tags: dict[str, str]) -> None:
    tele = [TelemetrySample(1.7e9 + k, "gpu_power", 300.0 + k, "W", "h", "gpu0") for k in range(5)]
    with Store.open(db) as s:
        s.save_run(Run("transfer", hosts=["h"], ranks=1, tags=tags), ms, tele)


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


# -- HTML and Markdown against hostile text ------------------------------------------------------

def test_hostile_text_stays_text_in_every_output(capsys, db, tmp_path):
    for i in range(3):
        save(db, _busbw(1.0 + i) + _busbw(2.0 + i, 1024, host=HOSTILE), hosts=[HOSTILE], devices=[HOSTILE],
             tags={"g": "a", "k" + HOSTILE: HOSTILE}, errors=[HOSTILE])
        save(db, _busbw(1.5 + i) + _busbw(2.5 + i, 1024, host=HOSTILE), hosts=["n"], tags={"g": "b"})
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


def test_markdown_cells_make_no_link_image_or_code_span():
    # before: a host "![t](https://...)" became an image the reader's browser fetched, and a tag
    # "[l](javascript:...)" a link
    from markdown_it import MarkdownIt

    from clusterbench.report.markdown import _table

    md = "\n".join(_table(["host", "tag"], [[HOSTILE, "`a|b` [x]"]]))
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert rendered.count("<td>") == 2 and rendered.count("<th>") == 2
    for made in ("<img", "<a ", "<code", "<script", "\x1b", "\u202e"):
        assert made not in rendered, made
    assert "![t](https://e.invalid/t.png)" in rendered and "`a|b` [x]" in rendered


def test_junit_text_keeps_no_reordering_or_control_characters():
    from clusterbench.report import junit

    text = "crit \u202eLIAF\u202c \u2066x\u2069 \x7f\x85\x9b[2J ok\nline two"
    xml_doc = junit.render([junit.Suite(text, [junit.Case(text, text, junit.FAIL, text, text)],
                                        properties={text: text}, hostname=text)])
    root = ET.fromstring(xml_doc.encode())
    case = root.find("testsuite/testcase")
    failure = case.find("failure")
    for value in (case.get("name"), failure.get("message"), failure.text,
                  root.find("testsuite/properties/property").get("value")):
        assert not re.search("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]", value), value
        assert "crit \ufffdLIAF\ufffd" in value
    assert failure.text.endswith("ok\nline two")


# -- the terminal line -------------------------------------------------------------------------

def test_the_terminal_line_shows_escape_codes_as_text(capsys, db, tmp_path):
    # before: a tag's ESC[2J (clear screen) in a selector and the -o path went raw to the terminal
    for i in range(3):
        save(db, _busbw(1.0 + i * 0.01), tags={"t": "a\x1b[2J"})
        save(db, _busbw(2.0 + i * 0.01), tags={"t": "b\u202e"})
    page = tmp_path / "\x1b[31mr.html"
    rc, out, err = cli(capsys, "report", 't="a\x1b[2J"', 't="b\u202e"', "-o", page, "--db", db)
    assert rc == 0, err
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\x1b[31mr.html" in out
    assert page.exists()


# -- figures -----------------------------------------------------------------------------------

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


def test_validation_figure_of_thousands_of_criteria_can_be_drawn():
    # before: 0.32 inch per criterion: past ~2,000 the image was over matplotlib's 2^16 pixels
    # and the whole report ended in an internal error
    from clusterbench.report import plots

    n = 2500
    fig = plots.validation_figure([f"criterion {i}" for i in range(n)],
                                  [float(i % 7 - 3) for i in range(n)],
                                  ["fail" if i % 7 < 3 else "pass" for i in range(n)])
    try:
        width, height = fig.get_size_inches() * 110
        assert width < 4000 and height < 4000
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert all(label.startswith("criterion") for label in labels)
        # what is left out is said, and the failed criteria are the ones kept
        assert "of 2500" in fig.axes[0].get_title()
        assert plots.render(fig, "png")[:4] == b"\x89PNG"
    finally:
        plots.close(fig)


def test_matrix_of_many_endpoints_can_be_drawn():
    from clusterbench.report import plots

    rows = [Measurement("transfer", "bandwidth", 10.0 + i % 5, "GB/s", {"src": f"C{i}", "dst": "G0"})
            for i in range(1200)]
    fig = plots.matrix(rows, "many", "GB/s")
    try:
        width, height = fig.get_size_inches() * 110
        assert width < 4000 and height < 4000
        assert plots.render(fig, "png")[:4] == b"\x89PNG"
    finally:
        plots.close(fig)


def test_hundreds_of_groups_make_a_figure_without_warnings():
    # before: a legend line per group pushed the axes out of the figure and matplotlib printed
    # its "Tight layout not applied" warning, with its source line, on stderr
    from clusterbench.report import plots

    curves = [plots.Curve(f"group {g}", [_busbw(1.0 + g, 8) + _busbw(2.0 + g, 64)], color=g) for g in range(300)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.size_curve("t", "busbw (GB/s)", curves, "bytes", "size")
        try:
            legend = fig.axes[0].get_legend()
            assert legend is not None and len(legend.get_texts()) <= plots.LEGEND_ENTRIES + 1
            assert "more" in legend.get_texts()[-1].get_text()
            plots.render(fig, "png")
        finally:
            plots.close(fig)


def test_bars_label_each_row_once():
    # before: the rows were scanned once per category, twice: quadratic in the rows
    from clusterbench.report import plots

    rows = [Measurement("gemm", "tflops", 1.0 + i, "TFLOP/s", {"m": i, "dtype": "bf16"}) for i in range(400)]
    calls = 0

    def label_of(m: Measurement) -> str:
        nonlocal calls
        calls += 1
        return f"m={m.params['m']}"

    for x_param in ("", "m"):
        calls = 0
        fig = plots.bars("t", "tflops", [("A", rows), ("B", rows[:200])], label_of, x_param, "m")
        plots.close(fig)
        assert calls <= 3 * 600, calls


# -- plotting that fails ---------------------------------------------------------------------

def _run_without_matplotlib(args: list[str]) -> subprocess.CompletedProcess[str]:
    code = ("import sys; sys.modules['matplotlib'] = None\n"   # `import matplotlib` raises ImportError
            "from clusterbench.cli import main\n"
            f"main({args!r})\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_without_matplotlib_the_page_and_summary_are_written(db, tmp_path):
    # before: the page itself imported matplotlib: no report at all, an internal error
    for i in range(3):
        save(db, _busbw(1.0 + i) + _busbw(2.0 + i, 1024), tags={"g": "a"})
    page = tmp_path / "r.html"
    r = _run_without_matplotlib(["report", "g=a", "-o", str(page), "--db", db, "--json"])
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "figures skipped" in r.stderr and "matplotlib" in r.stderr
    (summary,) = json_lines(r.stdout)
    assert summary["plots"] == [] and summary["html"] == str(page)
    assert [f["figure"] for f in summary["figures_skipped"]] == ["all"]
    assert "matplotlib" in summary["figures_skipped"][0]["why"]
    assert "<img" not in page.read_text() and page.with_suffix(".md").exists()
    assert not (tmp_path / "r_plots").exists()


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


# -- output paths --------------------------------------------------------------------------------

def test_a_name_near_the_limit_is_written(capsys, db, tmp_path):
    # before: the temporary file beside it (".NAME.tmpPID") was longer than a name may be
    save(db, _busbw(1.0) + _busbw(2.0, 1024), tags={"g": "a"})
    page = tmp_path / ("x" * 248 + ".html")   # its plot directory's name is 254 bytes
    rc, out, err = cli(capsys, "report", "g=a", "-o", page, "--db", db)
    assert rc == 0, err
    assert page.exists() and page.with_suffix(".md").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_name_whose_plot_directory_is_too_long_is_one_line(capsys, db, tmp_path):
    # before: "internal error: OSError: [Errno 36]", exit 1
    save(db, _busbw(1.0) + _busbw(2.0, 1024), tags={"g": "a"})
    page = tmp_path / ("x" * 250 + ".html")
    rc, out, err = cli(capsys, "report", "g=a", "-o", page, "--db", db, "--json")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "internal error" not in err and "too long" in err and "_plots" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]


def test_a_full_disk_leaves_nothing_behind(capsys, db, tmp_path):
    _save_with_telemetry(db, _transfer(1.0), {"team": "a"})
    _save_with_telemetry(db, _transfer(0.5), {"team": "b"})
    with small_tmpfs(tmp_path / "full", "64k") as where:
        rc, out, err = cli(capsys, "report", "team=a", "team=b", "-o", where / "r.html", "--db", db, "--json")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "No space left on device" in err
        assert list(where.iterdir()) == []


def test_a_read_only_file_system_is_refused_before_any_work(capsys, db, tmp_path):
    save(db, _busbw(1.0), tags={"g": "a"})
    with small_tmpfs(tmp_path / "ro", "1m") as where:
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        rc, out, err = cli(capsys, "report", "g=a", "-o", where / "r.html", "--db", db, "--json")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "read-only file system" in err
        assert list(where.iterdir()) == []


@pytest.mark.parametrize("name", ["dir.html", "dir"])
def test_an_output_that_is_a_directory_is_one_line(capsys, db, tmp_path, name):
    save(db, _busbw(1.0), tags={"g": "a"})
    (tmp_path / "dir.html").mkdir()
    rc, out, err = cli(capsys, "report", "g=a", "-o", tmp_path / name, "--db", db, "--json")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "directory" in err, err
    assert list((tmp_path / "dir.html").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.html", "results.db"]


def test_a_group_with_one_run_and_groups_with_nothing_in_common(capsys, db, tmp_path):
    save(db, _busbw(1.0), tags={"g": "a"})
    save(db, [Measurement("stream", "bandwidth", 1.7e308, "GB/s",
                          {"kernel": "Copy", "array_size": 8, "dtype": "double", "device": 0})], tags={"g": "b"})
    page = tmp_path / "r.html"
    rc, out, err = cli(capsys, "report", "g=a", "g=b", "-o", page, "--db", db, "--json")
    assert rc == 0 and err == "", err
    (summary,) = json_lines(out)
    assert summary["runs"] == [1, 2] and "share no" in json.dumps(summary["reasons"])
    assert "share no" in page.with_suffix(".md").read_text()
