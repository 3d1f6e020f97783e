"""Tests of clusterbench.report.markdown."""

from __future__ import annotations

from hostile_text import HOSTILE


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
