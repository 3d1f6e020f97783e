"""Tests of clusterbench.ingest.transferbench: transferBench output."""


import pytest
from paths import TESTS
from tool_log_texts import SWEEP, text_tool_logs

from clusterbench.ingest import detect_tool, iter_runs, parse_text
from clusterbench.ingest.common import Lines, LogFormatError

DATA = TESTS / "data" / "transferbench"


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


# SYNTHETIC: the real values of pr281-show-percentiles-box-table.txt re-printed in the layout
# TransferBench's client prints with OUTPUT_TO_CSV=1 (Utilities.hpp TableHelper::PrintTable: no
# borders, no "Test N:" line, each padded cell followed by a comma).
CSV_CONFIG = """\
 Executor: CPU 00 , 12.058 GB/s , 89.050 ms , 1073741824 bytes , 12.091 GB/s (sum),
    Transfer 0    , 12.091 GB/s , 88.802 ms , 1073741824 bytes , C0 -> C0:1 -> C1,
              p50 , 12.090 GB/s , 88.814 ms ,                  ,,
  Aggregate (CPU) , 12.014 GB/s , 89.374 ms , 1073741824 bytes , Overhead 0.325 ms,
"""


# SYNTHETIC: the real rows of pr50-show-iterations-p2p-min-max-rows.txt re-printed in the layout
# TransferBench 1.5x prints with OUTPUT_TO_CSV=1 (a comma after the row label and after each value).
CSV_P2P = """\
Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
SRC+EXE\\DST,    CPU 00,    CPU 01,    GPU 00,    GPU 01,    GPU 02,    GPU 03,
  CPU 00  ->,     15.54,     19.80,      9.88,      8.77,      9.65,      6.87,
  CPU 00 min,     14.24,     18.77,      9.82,      8.72,      9.46,      6.78,
"""


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


def load_import_transferbench(name):
    runs = parse_text((DATA / name).read_text(), name=name)
    assert len(runs) == 1
    assert {m.benchmark for m in runs[0].measurements} == {"transfer"}
    return runs[0]


def pick_import_transferbench(ms, **params):
    found = [m for m in ms if all(m.params.get(k) == v for k, v in params.items())]
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


def test_csv_config_output():
    [r] = parse_text(CSV_CONFIG, tool="transferbench")
    ms = r.measurements
    assert pick(ms, stat="executor").value == 12.058
    assert pick(ms, stat="executor_sum").value == 12.091
    assert pick(ms, stat="transfer").params["dst"] == "C1"
    assert pick(ms, stat="p50").value == 12.09
    assert pick(ms, stat="aggregate").value == 12.014
    assert pick(ms, "time_us", stat="aggregate").value == pytest.approx(89374.0)


def test_csv_p2p_rows():
    [r] = parse_text(CSV_P2P, tool="transferbench")
    ms = r.measurements
    assert pick(ms, stat="pair", src="C0", dst="G0").value == 9.88
    assert pick(ms, stat="min", src="C0", dst="C1").value == 18.77
    assert len(ms) == 12


def test_multi_rank_config_table():
    [r] = parse_text(MULTI_RANK, tool="transferbench")
    ms = r.measurements
    exe = pick(ms, stat="executor")
    assert (exe.value, exe.params["executor"], exe.params["rank"], exe.params["method"]) == (12.058, "C0", 1, "CPU")
    t = pick(ms, stat="transfer")
    assert (t.params["src"], t.params["dst"], t.params["method"], t.params["rank"]) == ("R1C0", "R0C1", "CPU", 1)


@pytest.mark.parametrize(("text", "word"), [(HEALTHCHECK, "healthcheck"), (SCHMOO, "schmoo")])
def test_presets_without_a_bandwidth_table_are_refused(text, word):
    assert detect_tool(text) == "transferbench"
    with pytest.raises(LogFormatError, match=f"{word}.*not a bandwidth table"):
        parse_text(text, tool="transferbench")


@pytest.mark.parametrize("path", sorted(p for p in DATA.iterdir() if p.name != "README.md"), ids=lambda p: p.name)
def test_every_log_is_detected(path):
    assert detect_tool(path.read_text()) == "transferbench"


@pytest.mark.parametrize("name", ["seed-mi300x-a2a.txt", "sysaccept-mi300x-a2a.txt"])
def test_a2a_summary(name):
    ms = load_import_transferbench(name).measurements
    assert len([m for m in ms if m.params["stat"] == "pair"]) == 56  # 8x8 without the diagonal
    assert pick_import_transferbench(ms, stat="pair", src="G0", dst="G1").value == 43.666
    assert pick_import_transferbench(ms, stat="pair", src="G7", dst="G6").value == 42.553
    assert pick_import_transferbench(ms, stat="row_total", src="G3").value == 209.546
    assert pick_import_transferbench(ms, stat="row_actual", src="G3").value == 199.797
    assert pick_import_transferbench(ms, stat="col_total", dst="G0").value == 244.827
    assert pick_import_transferbench(ms, stat="average").value == 35.776
    assert pick_import_transferbench(ms, stat="aggregate", timing="gpu").value == 2003.44
    assert pick_import_transferbench(ms, stat="aggregate", timing="cpu").value == 1411.163
    assert all(m.params["test"] == "a2a" and m.unit == "GB/s" for m in ms)


def test_a2a_with_env_dump_and_transfer_table():
    r = load_import_transferbench("rocm-blogs-mi300x-a2a-v1.60.txt")
    ms = r.measurements
    assert r.run.source == "transferbench 1.60.00"
    assert pick_import_transferbench(ms, stat="average").value == 46.552
    assert pick_import_transferbench(ms, stat="pair", src="G1", dst="G0").value == 47.0
    assert pick_import_transferbench(ms, stat="pair", src="G0", dst="G1").params["bytes"] == 67108864
    t = pick_import_transferbench(ms, stat="transfer", transfer=8, metric=None) if False else None
    transfers = [m for m in ms if m.params.get("stat") == "transfer" and m.metric == "bandwidth"]
    assert len(transfers) == 56 and transfers[0].params["src"] == "F0" and transfers[0].params["dst"] == "F1"
    assert t is None and not r.run.errors  # env lines like CONTINUE_ON_ERROR are not errors


@pytest.mark.parametrize("name", ["seed-mi300x-p2p.txt", "sysaccept-mi300x-p2p.txt"])
def test_p2p_uni_and_bidirectional(name):
    ms = load_import_transferbench(name).measurements
    uni = [m for m in ms if m.params["direction"] == "uni" and m.params["stat"] == "pair"]
    assert len(uni) == 100 and all(m.params["bytes"] == 67108864 and m.params["method"] == "GFX" for m in uni)
    assert pick_import_transferbench(ms, direction="uni", stat="pair", src="G0", dst="G0").value == 1689.85
    assert pick_import_transferbench(ms, direction="uni", stat="pair", src="C1", dst="G7").value == 42.6
    assert pick_import_transferbench(ms, direction="uni", stat="average", src="G", dst="G").value == 48.44
    assert pick_import_transferbench(ms, direction="bi", stat="average", src="G", dst="G").value == 46.24
    assert pick_import_transferbench(ms, direction="bi", stat="average", src="C", dst="C").value == 30.72
    both = pick_import_transferbench(ms, direction="bi", stat="pair", src="G0", dst="G1", leg=None)
    assert both.value == 92.2
    assert pick_import_transferbench(ms, direction="bi", stat="pair", src="G0", dst="G1", leg="src_to_dst").value == 46.11
    assert pick_import_transferbench(ms, direction="bi", stat="pair", src="G0", dst="G1", leg="dst_to_src").value == 46.09
    assert not [m for m in ms if m.params.get("src") == "C0" and m.params.get("dst") == "C0"
                and m.params["direction"] == "bi"]  # N/A


def test_p2p_preset_with_env_block():
    ms = load_import_transferbench("docs-presets-p2p-mi350x-v1.67.txt").measurements
    assert pick_import_transferbench(ms, direction="uni", stat="pair", src="G6", dst="G6").params["bytes"] == 268435456
    assert pick_import_transferbench(ms, direction="bi", stat="average", src="G", dst="G").value == 54.66


@pytest.mark.parametrize("name", ["seed-mi300x-example-cfg.txt", "sysaccept-mi300x-examplecfg.txt"])
def test_config_file_tests(name):
    ms = [m for m in load_import_transferbench(name).measurements if m.metric == "bandwidth"]
    t1 = pick_import_transferbench(ms, test_index=1, stat="transfer")
    assert t1.value == 47.774 and t1.params["src"] == "G0" and t1.params["dst"] == "G1"
    assert t1.params["method"] == "GFX" and t1.params["subexecutors"] == 4
    assert t1.params["name"] == "Single GPU-executed Transfer between GPUs 0 and 1 using 4 CUs"
    assert pick_import_transferbench(ms, test_index=2, stat="transfer").params["method"] == "DMA"
    assert pick_import_transferbench(ms, test_index=3, stat="transfer", src="G1").value == 39.603
    assert pick_import_transferbench(ms, test_index=4, stat="transfer").params["src"] == "N"
    assert pick_import_transferbench(ms, test_index=6, stat="transfer").params["dst"] == "G0G1"
    assert pick_import_transferbench(ms, test_index=5, stat="executor").params["method"] == "CPU"
    assert pick_import_transferbench(ms, test_index=1, stat="aggregate").value == 42.49
    times = [m for m in load_import_transferbench(name).measurements if m.metric == "time_us"]
    assert pick_import_transferbench(times, test_index=1, stat="transfer").value == pytest.approx(1405.0)


def test_box_drawing_tables_and_doc_annotations():
    ms = load_import_transferbench("docs-presets-sweep-v1.67.txt").measurements
    t = pick_import_transferbench([m for m in ms if m.metric == "bandwidth"], stat="transfer", transfer=11)
    assert (t.params["src"], t.params["dst"], t.params["method"], t.value) == ("G1", "C1", "GFX", 22.151)
    assert pick_import_transferbench([m for m in ms if m.metric == "bandwidth"], stat="executor", executor="D6").value == 53.665
    assert pick_import_transferbench([m for m in ms if m.metric == "bandwidth"], stat="aggregate").value == 295.108
    ms = load_import_transferbench("docs-timing-config-example-v1.6x.txt").measurements
    bw = [m for m in ms if m.metric == "bandwidth" and m.params["stat"] == "transfer"]
    assert [m.value for m in bw] == [4.476, 0.014, 80.886, 48.807]  # "Transfer N Time =" lines ignored


def test_a_line_of_16_mib_is_still_text(tmp_path):
    path = tmp_path / "long.log"
    path.write_text(SWEEP.read_text() + "#" + "x" * ((16 << 20) - 2) + "\n")
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        (run,) = iter_runs(f)
    assert len(run.measurements) == len(parse_text(SWEEP.read_text())[0].measurements)


@pytest.mark.parametrize("end", ["\n", "\r\n"])
@pytest.mark.parametrize("at", [20, 42, 80])   # the executor cell, the byte count, the line end
def test_a_row_across_the_64_kib_the_format_is_told_from_is_read_whole(tmp_path, end, at):
    log = SWEEP.read_text().replace("\n", end)
    row = log.index("  Executor: GPU 06")
    text = log + "#" * (65536 - len(log) - at - len(end)) + end + log[row:]
    assert text.index("  Executor: GPU 06", len(log)) + at == 65536
    path = tmp_path / "log.txt"
    path.write_bytes(text.encode())
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        (run,) = iter_runs(f)
    (want,) = parse_text(text)
    assert run.measurements == want.measurements
    executors = [m for m in run.measurements if m.params.get("executor") == "G6" and m.metric == "bandwidth"]
    assert len(executors) == 2 * 2   # per copy: its bandwidth and its sum


def test_lines_given_as_a_list_are_read_as_before():
    """Parsers fed lines (not a file) keep their lines whole: only files are read in bounded parts."""
    lines = SWEEP.read_text().splitlines(keepends=True)
    runs = list(iter_runs(Lines(lines, iter(()))))
    assert len(runs) == 1 and runs[0].measurements == parse_text(SWEEP.read_text())[0].measurements


def test_transferbench_a2a_row_cut_mid_number_keeps_only_whole_cells():
    log = text_tool_logs("transferbench", "sysaccept-mi300x-a2a.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("GPU 00 N/A"))
    head = log[:log.index(full)] + "GPU 00 N/A 43.666 36.624 43.480 36.67"   # cut in 36.677
    (run,) = parse_text(head)
    pairs = {m.params["dst"]: m.value for m in run.measurements if m.params.get("src") == "G0"}
    assert pairs == {"G1": 43.666, "G2": 36.624, "G3": 43.48}
    assert any("cut short" in w for w in run.run.meta["warnings"])


def test_transferbench_p2p_row_cut_stores_no_partial_number():
    log = text_tool_logs("transferbench", "sysaccept-mi300x-p2p.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("GPU 02 ->"))
    (run,) = parse_text(log[:log.index(full)] + "GPU 02 -> 55.25 55.24 48.83 48.53 1")
    from_g2 = [m.value for m in run.measurements if m.params.get("src") == "G2"]
    assert from_g2 == [55.25, 55.24, 48.83, 48.53]   # the cut '1' of 1690.87 is not kept


# -- issue 34: TransferBench 1.0x config output, one run per invocation ----------------------
V102 = "rccl-issue547-mi100-v1.02-config-4transfers-typo.txt"


def test_v1_02_transfer_rows_and_aggregate():
    # 'Test 1: [1073741824 bytes]', rows 'Transfer 01: G00 -> [GPU 00:004] -> G01 | 8.413 GB/s |
    # 127.626 ms | LOCAL-PCIE-2': the last cell is the link path, not a byte count
    text = (DATA / V102).read_text()
    assert detect_tool(text) == "transferbench"
    (r,) = parse_text(text, name=V102)
    assert r.run.status == "complete" and r.run.source == "transferbench 1.02"
    rows = {m.params["dst"]: m.value for m in r.measurements if m.metric == "bandwidth" and m.params["stat"] == "transfer"}
    assert rows == {"G0": 8.420, "G1": 8.413, "G2": 8.406, "G3": 8.416}
    (one,) = [m for m in r.measurements if m.metric == "bandwidth" and m.params.get("dst") == "G1"]
    assert one.params == {"test": "config", "test_index": 1, "bytes": 1073741824, "src": "G0", "dst": "G1",
                          "method": "GFX", "transfer": 1, "subexecutors": 4, "stat": "transfer"}
    (agg,) = [m for m in r.measurements if m.metric == "bandwidth" and m.params["stat"] == "aggregate"]
    # the four Transfers' bytes over the CPU time: 4 x 1073741824 B / 128.139 ms = 33.518 GB/s
    assert agg.value == 33.518 and agg.params["bytes"] == 4 * 1073741824 and agg.params["timing"] == "cpu"
    times = {m.params.get("dst"): m.value for m in r.measurements if m.metric == "time_us"}
    assert times["G1"] == 127626.0
    assert len(r.measurements) == 10


def test_each_invocation_is_a_run():
    text = (DATA / V102).read_text()
    first, second = parse_text(text + text.replace("8.413 GB/s", "8.500 GB/s"), name="twice.txt")
    assert [m.value for m in first.measurements if m.params.get("dst") == "G1" and m.metric == "bandwidth"] == [8.413]
    assert [m.value for m in second.measurements if m.params.get("dst") == "G1" and m.metric == "bandwidth"] == [8.5]
