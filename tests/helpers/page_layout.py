"""Layout facts of an HTML report as headless Chromium lays it out, and screenshots of it.

The report has no script of its own (it is mailed and attached to tickets). A copy of it gets a
small script that, once the page has loaded, measures every table cell and writes what it found
into the page as JSON; ``chromium --dump-dom`` prints the page with it. A word of a cell is
wrapped when its text range has boxes on more than one line (``Range.getClientRects``): "PAS/S",
"+42./9%" and "env=barem/etal" were such words.

``print_rules``: the copy's ``@media print`` rules are made to apply on screen and the window
is as wide as the printed page (A4 landscape less the page margins), so the print layout is
measured the same way.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# A4 landscape (297 mm) less 2 x 12 mm margins (the page's @page rule), at 96 CSS px per inch
PRINT_WIDTH = round((297 - 24) / 25.4 * 96)
FACTS_ID = "layout-facts"

_MEASURE = """
<script>
window.addEventListener('load', function () {
  var wrapped = [], numbers = [], cells = 0, breakable = 0;
  function lines(range) {
    var tops = {};
    var rects = range.getClientRects();
    for (var i = 0; i < rects.length; i++) {
      if (rects[i].width > 0) tops[Math.round(rects[i].top)] = 1;
    }
    return Object.keys(tops).length;
  }
  var all = document.querySelectorAll('td, th');
  for (var c = 0; c < all.length; c++) {
    var cell = all[c];
    cells++;
    if (cell.classList.contains('brk')) { breakable++; continue; }
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    var node;
    while ((node = walker.nextNode())) {
      var re = /\\S+/g, m;
      while ((m = re.exec(node.data))) {
        var r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        if (lines(r) > 1) wrapped.push(m[0]);
      }
    }
    if (cell.classList.contains('n')) {
      var whole = document.createRange();
      whole.selectNodeContents(cell);
      if (lines(whole) > 1) numbers.push(cell.textContent);
    }
  }
  var right = 0;
  var boxes = document.querySelectorAll('table, figure, img, .verdict');
  for (var b = 0; b < boxes.length; b++) right = Math.max(right, boxes[b].getBoundingClientRect().right);
  var facts = {cells: cells, wrapped: wrapped, numbers: numbers, breakable: breakable,
               window: window.innerWidth, scroll_width: document.documentElement.scrollWidth,
               content_right: Math.round(right), body_width: Math.round(document.body.getBoundingClientRect().width),
               height: document.documentElement.scrollHeight,
               collapsed: document.querySelectorAll('details:not([open])').length,
               collapsed_tables: document.querySelectorAll('details:not([open]) table').length};
  var pre = document.createElement('pre');
  pre.id = '""" + FACTS_ID + """';
  pre.textContent = JSON.stringify(facts);
  document.body.appendChild(pre);
});
</script>
"""


@dataclass(frozen=True)
class Layout:
    cells: int                 # table cells (td and th) measured
    wrapped: list[str]         # words (text without spaces) split over two lines
    numbers: list[str]         # numeric cells on more than one line
    breakable: int             # cells allowed to break anywhere (a token longer than the page takes)
    window: int                # the window's width, px
    scroll_width: int          # the page's width as laid out (beyond the window: a scroll bar)
    content_right: int         # the right edge of the rightmost table, figure or verdict
    body_width: int            # the width the page's blocks may use
    height: int
    collapsed: int             # closed <details> sections
    collapsed_tables: int      # tables inside them


def _base(profile: Path) -> list[str]:
    assert CHROMIUM is not None
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={profile}"]


def _copy(page: Path, work: Path, print_rules: bool, script: bool) -> Path:
    text = page.read_text(encoding="utf-8")
    if print_rules:
        assert "@media print{" in text, "the page has no print rules"
        text = text.replace("@media print{", "@media all{")
    if script:
        text = text.replace("</body>", _MEASURE + "</body>", 1)
    copy = work / f"{page.stem}-{'print' if print_rules else 'screen'}{'-measured' if script else ''}.html"
    copy.write_text(text, encoding="utf-8")
    return copy


def measure(page: Path, work: Path, width: int = 1400, print_rules: bool = False) -> Layout:
    """The layout facts of ``page`` in a window ``width`` px wide."""
    copy = _copy(page, work, print_rules, script=True)
    dom = subprocess.run(_base(work / "profile") + [f"--window-size={width},1000", "--virtual-time-budget=10000",
                                                    "--dump-dom", copy.as_uri()],
                         check=True, capture_output=True, text=True, timeout=180).stdout
    found = re.search(rf'<pre id="{FACTS_ID}">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script wrote nothing into the page"
    import html

    return Layout(**json.loads(html.unescape(found.group(1))))


def screenshot(page: Path, png: Path, work: Path, width: int = 1400, height: int = 2000,
               print_rules: bool = False) -> Path:
    """A PNG of the top ``height`` px of ``page`` in a window ``width`` px wide."""
    copy = _copy(page, work, print_rules, script=False)
    subprocess.run(_base(work / "profile") + [f"--window-size={width},{height}", "--virtual-time-budget=10000",
                                              f"--screenshot={png}", copy.as_uri()],
                   check=True, capture_output=True, timeout=180)
    return png


def print_pdf(page: Path, pdf: Path, work: Path) -> Path:
    subprocess.run(_base(work / "profile") + ["--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri()],
                   check=True, capture_output=True, timeout=180)
    return pdf
