"""What the reports print for ratios near the float limits (a value of 1.7e308 against a link of
12.5 GB/s, 5e-324 against a datasheet peak), the ddp-comm bucket cap's unit, and the train
table's model shape."""

from __future__ import annotations

import json
import math
import re

import pytest
from judge_helpers import run_cli

from clusterbench.families.workloads.table import DdpCommTable, TrainTable
from clusterbench.judge import compare
from clusterbench.judge.efficiency import DevicePercent
from clusterbench.judge.scaling import ScalingRow, format_table
from clusterbench.judge.stats import summarize
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines

G8 = 8 << 30
# what must never be printed for a ratio: inf, nan, or a zero of a value that is not 0
BAD = re.compile(r"\binf\b|\bnan\b|(?<![\d.])0(\.0+)?%")


def _coll(v: float) -> list[Measurement]:
    return [Measurement("all_reduce", metric, v, "GB/s", {"bytes": G8, "count": G8 // 4, "dtype": "float",
                                                           "redop": "sum", "root": -1, "placement": place})
            for metric in ("busbw", "algbw") for place in ("out", "in")]


def _stream(v: float) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", v, "GB/s",
                        {"kernel": "Triad", "dtype": "double", "device": "0", "array_size": 1 << 28})]


@pytest.fixture(scope="module")
def probe_db(tmp_path_factory) -> str:
    """Runs stored as a user would: a clusterbench JSON lines file imported."""
    where = tmp_path_factory.mktemp("probe")
    lines: list[str] = []
    for i, v in enumerate((1.7e308, 5e-324)):
        lines += run_lines(Run("coll", hosts=["h1", "h2"], ranks=2, id=2 * i + 1,
                               tags={"x": "coll", "link_speed": "100Gbps"}), _coll(v))
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, devices=["AMD Instinct MI300X"], id=2 * i + 2,
                               tags={"x": "stream"}), _stream(v))
    for i, (tag, v) in enumerate([("a", 1e-300), ("a", 1.1e-300), ("a", 0.9e-300),
                                  ("b", 1.7e308), ("b", 1.6e308), ("b", 1.65e308)]):
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, id=10 + i, tags={"cmp": tag}), _stream(v))
    (where / "runs.jsonl").write_text("\n".join(lines) + "\n")
    db = str(where / "probe.db")
    rc, _, err = run_cli("import", where / "runs.jsonl", "--db", db)
    assert rc == 0, err
    return db


def test_percent_text_past_and_below_the_float_range():
    assert compare.percent_text(1.7e308, 12.5) == "1.36e+309%"      # 100 x ratio is inf as a float
    assert compare.percent_text(5e-324, 12.5) == "3.95253e-323%"    # the float ratio is 0
    assert compare.percent_text(1e300, 12.5, 0) == "8e+300%"
    assert compare.percent_text(12.5, 12.5) == "100.0%" and compare.percent_text(0.0, 5.0) == "0.0%"
    assert compare.percent_text(0.4, 100, 0) == "0.4%"              # not "0%" for a value that is not 0
    assert compare.percent_text(1.0, 0.0) == "-"
    assert compare.change_text_pct(-1.7e308, 1.7e308) == "+200.0%"  # b - a overflows as a float
    assert compare.change_text_pct(1e-300, 1.7e308) == "+1.7e+610%"


def test_device_percent_is_finite_where_the_percent_is():
    d = DevicePercent("stream", "bandwidth", {}, 1.7e308, "GB/s", 5300.0, "AMD Instinct MI300X")
    assert d.percent == pytest.approx(1.7e308 / 5300 * 100) and d.percent_text() == "3.20755e+306%"
    tiny = DevicePercent("stream", "bandwidth", {}, 5e-324, "GB/s", 0.5, "x")
    assert tiny.percent > 0 and tiny.percent_text() == "9.88131e-322%"


def test_results_show_efficiency_line(probe_db):
    rc, out, err = run_cli("results", "show", "1", "3", "--db", probe_db)
    assert rc == 0, err
    lines = [line for line in out.splitlines() if line.startswith("# efficiency")]
    assert lines and not [line for line in lines if BAD.search(line)], lines
    assert "= 1.36e+309% of the optimal 12.5 GB/s" in out and "= 3.95253e-323% of the optimal" in out


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


def test_compare_of_a_change_past_the_float_range(probe_db, tmp_path):
    rc, out, err = run_cli("compare", "cmp=a", "cmp=b", "--db", probe_db)
    assert rc in (0, 1), err
    assert "inf" not in out and "B is 1.65e+610% faster" in out and " +1.65e+610% " in out
    rc, out, err = run_cli("compare", "cmp=a", "cmp=b", "--json", "--db", probe_db)

    def refuse(token: str) -> None:
        raise AssertionError(token)

    for line in out.splitlines():
        json.loads(line, parse_constant=refuse)
    rc, _, err = run_cli("report", "cmp=a", "cmp=b", "-o", tmp_path / "c.html", "--db", probe_db)
    assert rc == 0, err
    assert "+1.65e+610%" in (tmp_path / "c.md").read_text() and "inf%" not in (tmp_path / "c.html").read_text()


def test_opposite_means_near_the_limit_are_not_called_too_few():
    a, b = summarize([-1.7e308, -1.6e308, -1.65e308]), summarize([1.7e308, 1.6e308, 1.65e308])
    status, verdict = compare.judge(a, b, None, True, alpha=0.05, min_effect=0.02, max_cv=0.1)
    assert verdict == ("the difference of the means is past the largest float: cannot test "
                       "(delta +200.0%)"), verdict


def test_scaling_past_the_float_range_keeps_its_columns():
    rows = [ScalingRow("g", 1, 1, 1, 5e-324, 1, 5e-324), ScalingRow("g", 2, 2, 1, 1.7e308, 1, 5e-324)]
    first, _, one, two = format_table(rows, "samples/s")
    assert "inf" not in two and two.split()[-2:] == ["3.4e+631", "1.72e+631"]
    assert len(two) == len(one) == len(first)


def test_ddp_comm_footer_says_mib():
    ms = [Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 536 << 20, "layers": 16, "bucket_cap_mb": 25.0,
                                                         "stat": "avg"})]
    assert DdpCommTable().footer(Run("ddp_comm"), ms) == [
        "# 16 dummy layers, 536 MiB of gradients, bucket cap 25 MiB"]
    ms[0].params["bucket_cap_mb"] = 0.5
    assert DdpCommTable().footer(Run("ddp_comm"), ms)[0].endswith("bucket cap 0.5 MiB")


SHAPE = {"model": "custom", "strategy": "full", "dtype": "fp32", "batch": 8, "seq": 16, "layers": 3,
         "hidden": 64, "ranks": 2}


def test_train_footer_says_layers_and_sequence_length():
    ms = [Measurement("train", "samples_per_s", 300.0, "samples/s", {**SHAPE, "stat": "avg"})]
    meta = {"train": {**SHAPE, "params": 140000, "shard_size": 2}}
    want = ("# model custom: 0.14M parameters, 3 layers, hidden 64, strategy full (shard size 2), fp32, "
            "global batch 8 sequences, sequence length 16 tokens")
    assert TrainTable().footer(Run("train", meta=meta), ms) == [want]
    # a run stored without its meta (imported from a tool's log) still says the shape its rows carry
    assert TrainTable().footer(Run("train"), ms) == [
        "# model custom: 3 layers, hidden 64, strategy full, fp32, global batch 8 sequences, "
        "sequence length 16 tokens"]


def test_train_footer_of_a_stored_run(tmp_path):
    lines = list(run_lines(Run("train", hosts=["h"], ranks=2, id=1),
                           [Measurement("train", "loss", 4.0, "", {**SHAPE, "step": 0}),
                            Measurement("train", "samples_per_s", 300.0, "samples/s", {**SHAPE, "stat": "avg"})]))
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "t.db")
    assert run_cli("import", tmp_path / "t.jsonl", "--db", db)[0] == 0
    rc, out, err = run_cli("results", "show", "1", "--db", db)
    assert rc == 0, err
    assert "3 layers" in out and "sequence length 16 tokens" in out


def test_peak_percent_neither_overflows_nor_reads_zero() -> None:
    from clusterbench import peaks
    from clusterbench.families.device_table import percent_cell
    assert peaks.percent(1.7e308, 5300.0) == pytest.approx(1.7e308 / 5300.0 * 100)
    assert peaks.percent(5e-324, 1e-3) > 0
    assert percent_cell(1.7e308, 5300.0) != "inf%"
    tiny = percent_cell(1e-10, 5300.0)
    assert tiny.endswith("%") and tiny.strip("%") and float(tiny.strip("%")) > 0
    assert percent_cell(4988.0, 5300.0) == "94.1%"


def test_outlier_off_a_median_of_zero_says_the_difference() -> None:
    from clusterbench.judge.outliers import Outlier
    text = Outlier("host3", 2.5, 0.0, 9.0, math.inf).describe("GB/s")
    assert "inf" not in text and "+2.5 GB/s vs median 0 GB/s" in text


def test_fmt_value_prints_a_value_past_the_floats() -> None:
    from clusterbench.families.base import fmt_value
    assert fmt_value(math.inf) == "inf" and fmt_value(-math.inf) == "-inf" and fmt_value(2.0) == "2"
