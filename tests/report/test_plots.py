"""Tests of clusterbench.report.plots: figures with matplotlib (Agg, no display)."""

import math
import warnings

import pytest

from clusterbench.records import Measurement
from clusterbench.report import plots
from clusterbench.report.plots import mean_sd


def _error_segments(ax) -> list[tuple[float, float, float]]:
    """(x, low, high) of every vertical error bar drawn on ``ax``."""
    from matplotlib.collections import LineCollection

    return [(float(seg[0][0]), float(min(seg[0][1], seg[1][1])), float(max(seg[0][1], seg[1][1])))
            for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()]


def _busbw(value: float, size: int = 8, **params: object) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s",
                        {"bytes": size, "count": max(1, size // 4), "dtype": "float", "redop": "sum", "root": -1,
                         "placement": "out", **params})]


plt = pytest.importorskip("matplotlib.pyplot")


def test_mean_sd_of_values_whose_sum_overflows():
    assert mean_sd([1.7e308, 1.7e308]) == (1.7e308, 0.0)
    mean, sd = mean_sd([1.7e308, -1.7e308, 5e-324])
    assert math.isfinite(mean) and math.isfinite(sd)
    assert mean_sd([1.0, 2.0, 3.0]) == (2.0, 1.0)


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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = plots.size_curve("t", "busbw (GB/s)", curves, "bytes", "size")
        try:
            legend = fig.axes[0].get_legend()
            assert legend is not None and len(legend.get_texts()) <= plots.LEGEND_ENTRIES + 1
            assert "more" in legend.get_texts()[-1].get_text()
            plots.render(fig, "png")
        finally:
            plots.close(fig)
    # what a user would see (matplotlib's UserWarnings); a library's deprecation notice met on its
    # first import in this process (which test imports it first depends on the order) is not that
    shown = [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    assert shown == [], [str(w.message) for w in shown]


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


def _p2p_rows(path):
    from clusterbench.ingest import parse_text

    runs = parse_text(path.read_text(), tool="transferbench", name=path.name)
    return [m for r in runs for m in r.measurements
            if m.benchmark == "transfer" and m.params.get("test") == "p2p" and m.params.get("direction") == "uni"
            and m.params.get("src") and m.params.get("dst")]


def test_local_copies_get_a_colour_scale_of_their_own():
    # the MI300X guide's p2p matrix: GPU local copies near 1690 GB/s, links near 48 GB/s; on one
    # scale every link was one colour
    from paths import DATA

    rows = _p2p_rows(DATA / "transferbench" / "seed-mi300x-p2p.txt")
    assert rows
    fig = plots.matrix(rows, "p2p", "GB/s")
    try:
        links, local = fig.axes[0].images
        assert local.get_cmap().name != links.get_cmap().name
        lo, hi = links.get_clim()
        assert 30 < lo and hi < 60   # the links' scale ends below the slowest local copy by far
        assert local.get_clim()[1] > 1600
        assert {a.get_ylabel() for a in fig.axes[1:]} == {"GB/s (links)", "GB/s (local copy, src = dst)"}
    finally:
        plots.close(fig)


def test_a_diagonal_as_fast_as_the_links_stays_on_their_scale():
    srcs = dsts = ["C0", "C1", "G0", "G1"]
    data = [[42.8, 38.9, 40.0, 41.0], [32.9, 43.4, 41.5, 41.6], [55.2, 55.3, 1690.0, 48.5],
            [55.2, 55.2, 48.5, 1673.0]]
    # the CPUs' own memory (42.8, 43.4) is no faster than a link; the GPUs' local copies are
    assert plots.local_cells(srcs, dsts, data) == {(2, 2), (3, 3)}
    assert plots.local_cells(srcs, dsts, [[1.0, 2.0, 3.0, 4.0]] * 4) == set()
    assert plots.local_cells(["a"], ["a"], [[5.0]]) == set()   # no link: nothing to flatten


def test_history_of_two_groups_draws_each_with_its_band():
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    a = plots.HistoryLine("env=a on n1", [t0 + timedelta(hours=i) for i in range(4)], [10.0, 11.0, 10.5, 9.5],
                          color=0, band=True)
    b = plots.HistoryLine("env=b on n1", [t0 + timedelta(hours=5 + i) for i in range(4)], [6.0, 6.5, 5.5, 6.2],
                          color=1, band=True)
    fig = plots.history("busbw over time", "busbw (GB/s)", [a, b])
    try:
        ax = fig.axes[0]
        bands = ax.collections
        assert len(bands) == 2   # one shaded confidence band per group
        colours = [tuple(c.get_facecolor()[0][:3]) for c in bands]
        assert colours[0] != colours[1]
        lows = sorted(float(c.get_paths()[0].vertices[:, 1].min()) for c in bands)
        mean_a, low_a, high_a = plots.mean_band(a.ys)
        assert low_a < mean_a < high_a and pytest.approx(lows[1]) == low_a
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["env=a on n1, n=4", "env=b on n1, n=4"]
    finally:
        plots.close(fig)
    assert plots.mean_band([1.0]) is None
