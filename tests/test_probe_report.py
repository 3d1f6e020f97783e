"""``report`` against what logs and users hand it: ``-o`` naming a device or FIFO with no .html
suffix, plot labels holding control characters or TeX's ``$``, rows only at size 0, and a host
name of thousands of characters with no space in it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import xml.dom.minidom

import pytest
from judge_helpers import cli, save

from clusterbench.records import Measurement

EVIL_HOST = "h$\\frac{$x\x1b[31m\x07\x7f"


def _busbw(value: float, size: int = 8, **params: object) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s",
                        {"bytes": size, "count": size // 4, "dtype": "float", "redop": "sum", "root": -1,
                         "placement": "out", **params})]


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


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_a_long_host_name_keeps_the_page_in_its_width(capsys, db, tmp_path):
    save(db, _busbw(1.0), hosts=["n" * 3000], tags={"k": "v" * 3000})
    page = tmp_path / "r.html"
    rc, _, err = cli(capsys, "report", "1", "-o", page, "--db", db)
    assert rc == 0, err
    # the page has no script of its own: a frame around it measures how wide the browser lays it out
    frame = tmp_path / "frame.html"
    frame.write_text(f'<iframe id=f src="{page.name}" style="width:1200px;height:800px"></iframe><pre id=o></pre>'
                     "<script>document.getElementById('f').onload=function(){document.getElementById('o')"
                     ".textContent='W='+this.contentDocument.documentElement.scrollWidth;};</script>")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--allow-file-access-from-files", "--disable-background-networking",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                          "--dump-dom", frame.as_uri()], check=True, capture_output=True, text=True, timeout=120).stdout
    width = int(dom.split("W=", 1)[1].split("<", 1)[0])
    assert width <= 1300, width   # before: 30000 pixels and more, the host name on one line


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
