"""A report draws each figure through plots.render_all: every figure it made is closed, the one
whose drawing failed halfway included (pyplot would otherwise hold it to the end of the command)."""

from __future__ import annotations

import pytest

from clusterbench.report import plots

plt = pytest.importorskip("matplotlib.pyplot")


def test_a_figure_that_fails_halfway_is_closed() -> None:
    before = set(plt.get_fignums())

    def broken():
        plt.subplots()
        raise ValueError("drawing failed")

    with pytest.raises(ValueError, match="drawing failed"):
        plots.render_all(broken)
    assert set(plt.get_fignums()) == before


def test_a_drawn_figure_is_rendered_in_every_format_and_closed() -> None:
    before = set(plt.get_fignums())
    out = plots.render_all(lambda: plots.validation_figure(["a", "b"], [5.0, -2.0], ["pass", "fail"]))
    assert set(out) == set(plots.FORMATS) and out["png"][:4] == b"\x89PNG" and b"<svg" in out["svg"]
    assert set(plt.get_fignums()) == before
