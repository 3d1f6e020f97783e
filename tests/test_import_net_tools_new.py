"""Newer OSU (7.x), perftest and iperf3 output forms -> records (real logs; synthetic ones say so)."""

import json

import pytest
from ingest_helpers import pick, runs
from paths import DATA

from clusterbench.ingest import LogFormatError, detect_tool, parse_text
from clusterbench.ingest.perftest import _columns


# -- OSU 7.x ------------------------------------------------------------------------------------
def test_osu_validation_fail_makes_the_run_failed_and_its_row_is_not_stored():
    name = "ompi-issue12717-osu_allreduce-v7.4-validation-fail.txt"
    assert detect_tool((DATA / "osu" / name).read_text()) == "osu"
    (r,) = runs("osu", name)
    assert r.run.status == "failed" and r.run.meta["validation_failed_sizes"] == [16]
    assert [(m.params["bytes"], m.value) for m in r.measurements] == [(1, 1.53), (2, 2.58), (4, 2.57), (8, 1.51)]
    assert {m.params["stat"] for m in r.measurements} == {"avg"} and r.run.meta["benchmark"] == "osu_allreduce"
    # the error line names the program's path: it is an error, not the log's command line
    assert r.run.errors[0].startswith("DATA VALIDATION ERROR:") and "-c" in r.run.meta["log_command"]
    assert "failed at message size 16" in r.run.errors[1]
    assert "dtype" not in r.measurements[0].params and r.run.meta["datatypes"] == ["MPI_CHAR"]


def _passing_block() -> list[str]:
    """The same issue's rows with every row 'Pass' (the second block of that comment passes)."""
    text = (DATA / "osu" / "ompi-issue12717-osu_allreduce-v7.4-validation-fail.txt").read_text()
    return [ln.replace("Fail", "Pass") for ln in text.splitlines()[2:10]]


def test_osu_validation_pass_is_a_complete_run():
    (r,) = parse_text("\n".join(_passing_block()) + "\n", name="x")
    assert r.run.status == "complete" and r.run.errors == [] and len(r.measurements) == 5
    assert pick(r.measurements, "latency_us", bytes=16).value == 1.51


def test_osu_several_datatypes_under_one_title_carry_dtype():
    # SYNTHETIC: the real v7.4 table above re-printed as `-T mpi_char,mpi_int` prints it (osu_allreduce.c:
    # one title, then '# Datatype: X.', the header and the rows for each type); values repeated, not measured
    title, dtype, header, *rows = _passing_block()
    text = "\n".join([title, dtype, header, *rows, "# Datatype: MPI_INT.", header, *rows[2:]]) + "\n"
    (r,) = parse_text(text, name="x")
    assert r.run.meta["datatypes"] == ["MPI_CHAR", "MPI_INT"]
    assert pick(r.measurements, "latency_us", bytes=4, dtype="char").value == 2.57
    assert pick(r.measurements, "latency_us", bytes=4, dtype="int").value == 2.57
    assert len(r.measurements) == 5 + 3


def test_osu_tail_bandwidth_and_transmit_size_columns_are_not_a_second_bandwidth():
    # SYNTHETIC: the real osu_bw v7.5 row of oci-osu_bw-v7.5-cuda-DD-no-buffer-line-datatype.txt
    # re-printed with the columns `-c -z 99 -D` add (osu_util_mpi.c print_only_header; osu_bw.c);
    # the P99 and Transmit Size values are not measured
    src = (DATA / "osu" / "oci-osu_bw-v7.5-cuda-DD-no-buffer-line-datatype.txt").read_text().splitlines()
    title = next(ln for ln in src if ln.startswith("# OSU"))
    size, bw = next(ln for ln in src if ln[:1].isdigit()).split()[:2]
    header = "# Size      Bandwidth (MB/s)          Validation   P99 Tail BW(MB/s)       Transmit Size"
    text = f"{title}\n{header}\n{size:<10}{bw:>20}{'Pass':>20}{'1.00':>20}{size:>20}\n"
    (r,) = parse_text(text, name="x")
    assert pick(r.measurements, "bandwidth", stat="p99").value == pytest.approx(0.001)
    main = [m for m in r.measurements if "stat" not in m.params]
    assert len(main) == 1 and main[0].value == pytest.approx(float(bw) / 1000)
    assert len(r.measurements) == 2


# -- perftest -------------------------------------------------------------------------------------
@pytest.mark.parametrize("header, names", [
    # perftest_parameters.h RESULT_FMT_LAT_DUR (-D on a _lat tool): 4 values a row
    (" #bytes        #iterations       t_avg[usec]    tps average",
     ["#bytes", "#iterations", "t_avg[usec]", "tps_average"]),
    # RESULT_FMT_PER_PORT (dual port): 9 values a row (REPORT_FMT_PER_PORT)
    (" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]   BW Port1[MiB/sec]"
     "   MsgRate Port1[Mpps]   BW Port2[MiB/sec]   MsgRate Port2[Mpps]",
     ["#bytes", "#iterations", "BW_peak[MiB/sec]", "BW_average[MiB/sec]", "MsgRate[Mpps]", "BW_Port1[MiB/sec]",
      "MsgRate_Port1[Mpps]", "BW_Port2[MiB/sec]", "MsgRate_Port2[Mpps]"]),
])
def test_perftest_two_word_column_names_are_one_column(header, names):
    assert _columns(header) == names


# -- iperf3 ---------------------------------------------------------------------------------------
def test_iperf3_text_with_default_timestamps():
    name = "v3.12-timestamps-default-tcp-P2-loopback.txt"
    assert detect_tool((DATA / "iperf3" / name).read_text()) == "iperf3"
    (r,) = runs("iperf3", name)
    assert r.run.status == "complete" and r.run.hosts == ["127.0.0.1"]
    sent = pick(r.measurements, "bandwidth", side="sent")
    assert sent.value == pytest.approx(24.6 / 8) and sent.params["streams"] == 2
    assert sent.params["bytes"] == int(5.73 * 1024 ** 3)
    assert pick(r.measurements, "retransmits", side="sent").value == 5
    assert len(r.measurements) == 3   # the [SUM] rows only, not the per-stream or interval rows


def test_iperf3_text_with_epoch_timestamps_udp_loss_from_the_receiver():
    name = "v3.12-timestamps-epoch-udp-loopback.txt"
    assert detect_tool((DATA / "iperf3" / name).read_text()) == "iperf3"
    (r,) = runs("iperf3", name)
    assert pick(r.measurements, "bandwidth", side="received").value == pytest.approx(50.1e6 / 8e9)
    assert pick(r.measurements, "jitter_us").value == pytest.approx(16.0)
    assert pick(r.measurements, "lost_percent").value == 0.0
    assert pick(r.measurements, "bandwidth", side="sent").params["protocol"] == "udp"


def test_iperf3_json_stream_is_read_as_its_json_document():
    # SYNTHETIC: the real v3.12-bidir-loopback-json.json re-printed as --json-stream prints it (README)
    stream = runs("iperf3", "SYNTHETIC-json-stream-from-v3.12-bidir-loopback.json")
    whole = runs("iperf3", "v3.12-bidir-loopback-json.json")
    assert len(stream) == 1 and stream[0].run.source == "iperf3 3.12"
    assert [(m.metric, m.value, m.params) for m in stream[0].measurements] == \
        [(m.metric, m.value, m.params) for m in whole[0].measurements]
    assert pick(stream[0].measurements, "bandwidth", side="sent", leg="reverse").value == \
        pytest.approx(1.5699050304184599)


def test_iperf3_json_stream_error_event_fails_the_run():
    # SYNTHETIC: a start event of the same real document, then the 'error' event iperf_api.c writes
    doc = json.loads((DATA / "iperf3" / "v3.12-bidir-loopback-json.json").read_text())
    text = (json.dumps({"event": "start", "data": doc["start"]}) + "\n"
            + json.dumps({"event": "error", "data": "the server has terminated"}) + "\n")
    (r,) = parse_text(text, name="x")
    assert r.run.status == "failed" and r.measurements == []
    assert r.run.errors == ["the server has terminated"]


def test_iperf3_json_stream_of_intervals_only_is_refused():
    doc = json.loads((DATA / "iperf3" / "v3.12-bidir-loopback-json.json").read_text())
    text = json.dumps({"event": "interval", "data": doc["intervals"][0]}) + "\n"
    with pytest.raises(LogFormatError, match="no iperf3 results"):   # a stream cut before its end event
        parse_text(text, name="x", tool="iperf3")
