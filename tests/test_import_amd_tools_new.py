"""Newer TransferBench output options and presets (tests/data/transferbench, README "Newer output
options and presets"): per-iteration and percentile rows, p2p min/max rows, the scaling preset,
OUTPUT_TO_CSV, multi-rank tables, and presets that print no bandwidth table."""

from pathlib import Path

import pytest

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.ingest.common import LogFormatError

DATA = Path(__file__).parent / "data" / "transferbench"


def load(name):
    text = (DATA / name).read_text()
    assert detect_tool(text) == "transferbench"
    runs = parse_text(text, name=name)
    assert len(runs) == 1
    return runs[0]


def pick(ms, metric="bandwidth", **params):
    found = [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (params, found)
    return found[0]


def test_show_iterations_rows_are_iterations_of_their_transfer():
    r = load("pr50-show-iterations-config-legacy-table.txt")
    ms = r.measurements
    t = pick(ms, stat="transfer")
    assert (t.value, t.params["src"], t.params["dst"], t.params["subexecutors"]) == (33.52, "G0", "G1", 4)
    iters = [m for m in ms if m.params["stat"] == "iteration" and m.metric == "bandwidth"]
    assert sorted(m.params["iteration"] for m in iters) == list(range(1, 11))
    assert pick(ms, stat="iteration", iteration=6).value == 33.616
    assert pick(ms, stat="iteration", iteration=1).value == 33.307
    assert pick(ms, "time_us", stat="iteration", iteration=5).value == pytest.approx(2006.0)
    assert all(m.params["bytes"] == 67108864 and m.params["transfer"] == 0 for m in iters)
    # StandardDev (4.887e-03, no unit) is a spread: no record of it
    assert not [m for m in ms if m.value == pytest.approx(4.887e-03)]
    assert pick(ms, stat="aggregate").value == 29.349
    assert not r.run.errors


def test_p2p_min_max_rows_are_not_shifted_into_pairs():
    ms = load("pr50-show-iterations-p2p-min-max-rows.txt").measurements
    assert pick(ms, stat="pair", src="C0", dst="C0").value == 15.54
    assert pick(ms, stat="pair", src="C0", dst="G3").value == 6.87
    assert pick(ms, stat="min", src="C0", dst="C0").value == 14.24
    assert pick(ms, stat="min", src="C0", dst="G3").value == 6.78
    assert pick(ms, stat="max", src="C0", dst="C1").value == 20.63
    assert len([m for m in ms if m.params["stat"] == "pair"]) == 6


def test_show_percentiles_rows():
    ms = load("pr281-show-percentiles-box-table.txt").measurements
    assert pick(ms, stat="transfer").value == 12.091
    assert pick(ms, stat="p50").value == 12.09
    assert pick(ms, stat="p90").value == 11.72
    assert pick(ms, "time_us", stat="p99").value == pytest.approx(91757.0)
    assert pick(ms, stat="p99").params["src"] == "C0" and pick(ms, stat="p99").params["dst"] == "C1"
    assert pick(ms, stat="executor").value == 12.058
    assert pick(ms, stat="aggregate").value == 12.014


def test_scaling_preset():
    ms = load("pr45-scaling-preset.txt").measurements
    assert len(ms) == 12 * 6
    assert all(m.params["test"] == "scaling" and m.params["src"] == "G0" and m.params["bytes"] == 67108864
               for m in ms)
    assert pick(ms, subexecutors=1, dst="C0").value == 14.11
    assert pick(ms, subexecutors=12, dst="G0").value == 175.03
    assert pick(ms, subexecutors=7, dst="G3").value == 32.62


# SYNTHETIC: the real values of pr281-show-percentiles-box-table.txt re-printed in the layout
# TransferBench's client prints with OUTPUT_TO_CSV=1 (Utilities.hpp TableHelper::PrintTable: no
# borders, no "Test N:" line, each padded cell followed by a comma).
CSV_CONFIG = """\
 Executor: CPU 00 , 12.058 GB/s , 89.050 ms , 1073741824 bytes , 12.091 GB/s (sum),
    Transfer 0    , 12.091 GB/s , 88.802 ms , 1073741824 bytes , C0 -> C0:1 -> C1,
              p50 , 12.090 GB/s , 88.814 ms ,                  ,,
  Aggregate (CPU) , 12.014 GB/s , 89.374 ms , 1073741824 bytes , Overhead 0.325 ms,
"""


def test_csv_config_output():
    [r] = parse_text(CSV_CONFIG, tool="transferbench")
    ms = r.measurements
    assert pick(ms, stat="executor").value == 12.058
    assert pick(ms, stat="executor_sum").value == 12.091
    assert pick(ms, stat="transfer").params["dst"] == "C1"
    assert pick(ms, stat="p50").value == 12.09
    assert pick(ms, stat="aggregate").value == 12.014
    assert pick(ms, "time_us", stat="aggregate").value == pytest.approx(89374.0)


# SYNTHETIC: the real rows of pr50-show-iterations-p2p-min-max-rows.txt re-printed in the layout
# TransferBench 1.5x prints with OUTPUT_TO_CSV=1 (a comma after the row label and after each value).
CSV_P2P = """\
Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
SRC+EXE\\DST,    CPU 00,    CPU 01,    GPU 00,    GPU 01,    GPU 02,    GPU 03,
  CPU 00  ->,     15.54,     19.80,      9.88,      8.77,      9.65,      6.87,
  CPU 00 min,     14.24,     18.77,      9.82,      8.72,      9.46,      6.78,
"""


def test_csv_p2p_rows():
    [r] = parse_text(CSV_P2P, tool="transferbench")
    ms = r.measurements
    assert pick(ms, stat="pair", src="C0", dst="G0").value == 9.88
    assert pick(ms, stat="min", src="C0", dst="C1").value == 18.77
    assert len(ms) == 12


# SYNTHETIC: pr281's real values re-printed in the multi-rank layout of Utilities.hpp PrintResults
# ("Executor: Rank %d %3s %02d", sum cell with "[host]", memory and executor prefixed "R<rank>");
# the host name is a placeholder.
MULTI_RANK = """\
Test 1:
---------------------------┬--------------┬------------┬-------------------┬---------------------------
  Executor: Rank 1 CPU 00  │  12.058 GB/s │  89.050 ms │  1073741824 bytes │  12.091 GB/s (sum) [node-b]
---------------------------┼--------------┼------------┼-------------------┼---------------------------
     Transfer 0            │  12.091 GB/s │  88.802 ms │  1073741824 bytes │ R1C0 -> R1C0:1 -> R0C1
---------------------------┼--------------┼------------┼-------------------┼---------------------------
   Aggregate (CPU)         │  12.014 GB/s │  89.374 ms │  1073741824 bytes │ Overhead 0.325 ms
"""


def test_multi_rank_config_table():
    [r] = parse_text(MULTI_RANK, tool="transferbench")
    ms = r.measurements
    exe = pick(ms, stat="executor")
    assert (exe.value, exe.params["executor"], exe.params["rank"], exe.params["method"]) == (12.058, "C0", 1, "CPU")
    t = pick(ms, stat="transfer")
    assert (t.params["src"], t.params["dst"], t.params["method"], t.params["rank"]) == ("R1C0", "R0C1", "CPU", 1)


# SYNTHETIC: the fixed lines the healthcheck preset prints (HealthCheck.hpp), no figure in them.
HEALTHCHECK = """\
Disclaimer:
==================================================================
NOTE: This is an experimental feature and may be subject to change
Testing HBM performance [READ]             ........PASS
Testing all-to-all XGMI copies             ........PASS
"""

# SYNTHETIC: the header the schmoo preset prints (TransferBench 1.5x RunSchmooBenchmark).
SCHMOO = """\
Bytes to transfer: 67108864 Local GPU: 0 Remote GPU: 1
       | Local Read  | Local Write | Local Copy  | Remote Read | Remote Write| Remote Copy |
  #CUs |G00->G00->N00|N00->G00->G00|G00->G00->G00|G01->G00->N00|N00->G00->G01|G00->G00->G01|
"""


@pytest.mark.parametrize(("text", "word"), [(HEALTHCHECK, "healthcheck"), (SCHMOO, "schmoo")])
def test_presets_without_a_bandwidth_table_are_refused(text, word):
    assert detect_tool(text) == "transferbench"
    with pytest.raises(LogFormatError, match=f"{word}.*not a bandwidth table"):
        parse_text(text, tool="transferbench")


def test_an_iteration_row_without_its_transfer_is_refused():
    with pytest.raises(LogFormatError, match="line 1: per-iteration row 'Iter 006' has no Transfer"):
        parse_text("      Iter 006    |  33.616 GB/s |    1.996 ms |\n", tool="transferbench")


def test_iteration_and_scaling_rows_have_labels_of_their_own():
    # the transfer family's row params name what tells these rows apart (labels, report tables)
    from clusterbench.families import family_of

    fam = family_of("transfer")
    base = {"test": "config", "src": "G0", "dst": "G1", "stat": "iteration", "bytes": 1 << 20}
    assert fam.row_label({**base, "iteration": 1}) != fam.row_label({**base, "iteration": 2})
    scale = {"test": "scaling", "src": "G0", "dst": "G1", "stat": "scaling", "bytes": 1 << 20}
    assert fam.row_label({**scale, "subexecutors": 4}) != fam.row_label({**scale, "subexecutors": 8})
