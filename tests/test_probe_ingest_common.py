"""What every importer shares (ingest/common.py): figures below zero that no tool measures,
pdsh's ``host: `` before the lines of a short log, and JSON behind a launcher's prefixes. Each
test starts from a real log in tests/data, damaged or wrapped as logs reach clusterbench."""

import json
from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, parse_text
from clusterbench.ingest.common import clean_lines, text_lines
from clusterbench.records import INCOMPLETE, WARNINGS

DATA = Path(__file__).parent / "data"


def text(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text()


def records(runs: list) -> list[tuple]:
    return [(m.benchmark, m.metric, m.value, m.params) for r in runs for m in r.measurements]


def warnings(run) -> list[str]:
    return run.run.meta.get(WARNINGS, [])


# -- values below zero -------------------------------------------------------------------------
def test_osu_bandwidth_below_zero_is_dropped_with_a_warning():
    log = text("osu", "hpcbench-osu_bw-v5.3.2-host.txt").replace("11923.92", "-1.5")
    (run,) = parse_text(log)
    assert [m.value for m in run.measurements] == [pytest.approx(11.95224)]
    assert warnings(run) == ["osu_bw bandwidth -0.0015 GB/s not stored: a time or rate below zero is no measurement"]


def test_vllm_json_duration_below_zero_is_dropped_the_rest_kept():
    doc = json.loads(text("vllm-serving", "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"))
    (plain,) = parse_text(json.dumps(doc))
    doc["duration"] = -1.5
    (run,) = parse_text(json.dumps(doc))
    assert records([run]) == [r for r in records([plain]) if r[1] != "duration_s"]
    assert any("duration_s -1.5 s not stored" in w for w in warnings(run))


def test_nccl_tests_row_below_zero_keeps_the_row_s_other_values():
    log = text("nccl-tests", "a3mega-h100-2node-all_reduce.txt")
    row = next(ln for ln in log.split("\n") if ln.split()[:1] == ["1048576"])
    toks = row.split()
    toks[5], toks[7] = "-1500000.00", "-0.0015"   # out-of-place time and busbw
    (plain,) = parse_text(log)
    (run,) = parse_text(log.replace(row, "  ".join(toks)))
    dropped = [r for r in records([plain]) if r[3].get("bytes") == 1048576 and r[3].get("placement") == "out"
               and r[1] in ("time_us", "busbw")]
    assert len(dropped) == 2
    assert records([run]) == [r for r in records([plain]) if r not in dropped]
    assert len(run) == len(plain) - 2   # the stored pack's count
    assert [w for w in warnings(run) if "below zero" in w] == [
        "all_reduce time_us -1.5e+06 us not stored: a time or rate below zero is no measurement",
        "all_reduce busbw -0.0015 GB/s not stored: a time or rate below zero is no measurement"]


def test_nccl_tests_root_of_minus_one_and_small_errors_are_no_negative_figure():
    # every row's root is -1 and old logs print errors such as 1e-07: nothing may be dropped
    (run,) = parse_text(text("nccl-tests", "a3mega-h100-2node-all_reduce.txt"))
    assert not [w for w in warnings(run) if "below zero" in w]
    assert {m.params["root"] for m in run.measurements if "root" in m.params} == {-1}


def test_iperf3_negative_lost_packets_are_kept():
    # iperf3 counts datagrams arriving out of order as lost: a negative loss is real output
    log = text("iperf3", "v3.7-udp-reverse-negative-lost-out-of-order-sum.txt")
    (run,) = parse_text(log.replace("1174/322045 (0.36%)", "-3409/322045 (-1.1%)"))
    assert [m.value for m in run.measurements if m.metric == "lost_percent"] == [-1.1]
    assert not [w for w in warnings(run) if "below zero" in w]


def test_a_run_whose_every_figure_is_below_zero_is_not_complete():
    log = "# OSU MPI Bandwidth Test v5.3.2\n# Size      Bandwidth (MB/s)\n2097152             -11923.92\n"
    (run,) = parse_text(log)
    assert run.measurements == []
    assert run.run.status == INCOMPLETE


# -- pdsh's host before the lines of a short log -----------------------------------------------
@pytest.mark.parametrize("host", ["node1", "gpu-a.cluster", "DGX01"])
def test_short_osu_log_behind_pdsh_reads_as_without(host):
    log = text("osu", "hpcbench-osu_bw-v5.3.2-host.txt")
    assert len([ln for ln in log.split("\n") if ln.strip()]) < 5
    prefixed = "".join(f"{host}: {ln}\n" for ln in log.split("\n") if ln)
    assert records(parse_text(prefixed)) == records(parse_text(log))


@pytest.mark.parametrize("lines", [["Duration: 1.2", "Duration: 1.3"], ["error: x", "error: y"],
                                   ["iperf3: error - the server is busy", "iperf3: interrupt - the client has terminated"]])
def test_a_tool_s_own_label_on_every_line_of_a_short_log_is_no_host(lines):
    assert list(clean_lines(lines)) == lines


def test_a_single_line_keeps_what_looks_like_a_host():
    assert list(clean_lines(["node1: Test NCCL failure"])) == ["node1: Test NCCL failure"]


def test_a_short_log_behind_two_hosts_keeps_them():
    lines = ["node1: a", "node2: b", "node1: c"]
    assert list(clean_lines(text_lines("\n".join(lines)))) == lines


# -- JSON behind a launcher's prefixes ----------------------------------------------------------
PREFIXES = ["0: ", "  3: ", "[1,0]<stdout>:", "node1: ", "2025-01-31T10:00:00Z ", "node1: 0: "]


@pytest.mark.parametrize("path", ["iperf3/v3.12-bidir-loopback-json.json",
                                  "vllm-serving/ascend-qwen2.5-vl-3b-bench-serve-save-result.json"])
@pytest.mark.parametrize("prefix", PREFIXES, ids=["srun-label", "srun-padded", "mpirun-tag", "pdsh", "timestamp",
                                                  "pdsh-srun"])
def test_json_behind_a_launcher_prefix_reads_as_without(path, prefix):
    log = (DATA / path).read_text()
    prefixed = "".join(prefix + ln + "\n" for ln in log.split("\n"))
    assert records(parse_text(prefixed)) == records(parse_text(log))


def test_iperf3_json_of_two_ranks_interleaved_is_one_run_each():
    log = text("iperf3", "v3.12-bidir-loopback-json.json")
    mixed = "".join(f"0: {ln}\n1: {ln}\n" for ln in log.split("\n"))
    runs = parse_text(mixed)
    assert len(runs) == 2
    assert records(runs[:1]) == records(runs[1:]) == records(parse_text(log))


def test_json_behind_prefixes_with_a_bare_line_says_why():
    lines = [f"0: {ln}" for ln in text("iperf3", "v3.12-bidir-loopback-json.json").split("\n")]
    lines.insert(3, "srun: error: task 1 exited")
    with pytest.raises(LogFormatError, match=r"prefix \('0: '\) but line 4 has none"):
        parse_text("\n".join(lines))
