"""Tests of clusterbench.ingest.perftest."""

import pytest
from ingest_helpers import pick, runs
from paths import DATA

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.ingest.perftest import _columns


# -- perftest --out_json -------------------------------------------------------------------------
@pytest.mark.parametrize("name", [
    "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json",
    "SYNTHETIC-out_json-v25.04-ib_send_bw-bidir-D10-report_gbits.json",
    "SYNTHETIC-out_json-v25.04-ib_write_lat.json",
    "SYNTHETIC-out_json-v23.10-before-standard-json-ib_read_bw.json",
])
def test_perftest_out_json_is_detected(name):
    assert detect_tool((DATA / "perftest" / name).read_text()) == "perftest"


def test_perftest_out_json_bandwidth_in_mib_per_sec():
    (r,) = runs("perftest", "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json")
    assert r.run.meta["benchmark"] == "ib_write_bw" and r.run.meta["bw_unit"] == "MiB/sec"
    params = {"device": "mlx5_0", "qps": 1, "bytes": 65536, "bidirectional": False, "iterations": 5000}
    avg = pick(r.measurements, "bw_avg", bytes=65536)
    assert avg.params == params and avg.value == pytest.approx(46585.03 * 2**20 / 1e9) and avg.unit == "GB/s"
    assert pick(r.measurements, "bw_peak", bytes=65536).value == pytest.approx(46602.48 * 2**20 / 1e9)
    assert pick(r.measurements, "msg_rate", bytes=65536).value == pytest.approx(0.74536)
    assert r.run.devices == ["mlx5_0"] and r.run.meta["link_type"] == "IB"


def test_perftest_out_json_same_records_as_the_text_row():
    # the same figures printed as perftest's text table (RESULT_FMT / REPORT_FMT)
    text = ("                    RDMA_Write BW Test\n Device         : mlx5_0\n Number of qps   : 1\n"
            " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
            " 65536      5000             46602.48            46585.03\t\t     0.745360\n")
    (t,) = parse_text(text, name="t")
    (j,) = runs("perftest", "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json")
    assert {(m.metric, m.unit, tuple(sorted(m.params.items()))) for m in t.measurements} == \
        {(m.metric, m.unit, tuple(sorted(m.params.items()))) for m in j.measurements}
    for m in t.measurements:
        assert pick(j.measurements, m.metric, bytes=65536).value == pytest.approx(m.value, rel=1e-5)


def test_perftest_out_json_gbits_and_peak_not_measured():
    (r,) = runs("perftest", "SYNTHETIC-out_json-v25.04-ib_send_bw-bidir-D10-report_gbits.json")
    assert r.run.meta["bw_unit"] == "Gb/sec" and r.run.meta["benchmark"] == "ib_send_bw"
    assert pick(r.measurements, "bw_avg").value == pytest.approx(389.41 / 8)
    assert pick(r.measurements, "bw_avg").params["bidirectional"] is True
    assert not [m for m in r.measurements if m.metric == "bw_peak"] and "not measured" in r.run.meta["bw_peak"]


def test_perftest_out_json_latency():
    (r,) = runs("perftest", "SYNTHETIC-out_json-v25.04-ib_write_lat.json")
    stats = {m.params["stat"]: m.value for m in r.measurements}
    assert stats == {"min": 0.98, "max": 3.61, "typical": 1.01, "avg": 1.03, "stdev": 0.07, "p99": 1.29,
                     "p99.9": 3.61}
    assert r.run.meta["benchmark"] == "ib_write_lat" and {m.unit for m in r.measurements} == {"us"}


def test_perftest_out_json_before_standard_json():
    (r,) = runs("perftest", "SYNTHETIC-out_json-v23.10-before-standard-json-ib_read_bw.json")
    assert r.run.meta["benchmark"] == "ib_read_bw" and r.run.devices == ["mlx5_1"]
    assert pick(r.measurements, "bw_avg", bytes=8192).value == pytest.approx(11234.56 * 2**20 / 1e9)


def test_perftest_out_json_without_a_unit_it_can_tell_stores_no_bandwidth():
    text = (DATA / "perftest" / "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json").read_text()
    (r,) = parse_text(text.replace('"MsgRate": 0.745360', '"MsgRate": 0.000000'), name="x")
    assert not [m for m in r.measurements if m.metric.startswith("bw_")]
    assert any("names no unit" in w for w in r.run.meta["warnings"])
    (r,) = parse_text(text.replace('"MsgRate": 0.745360', '"MsgRate": 0.020000'), name="x")   # neither unit
    assert not [m for m in r.measurements if m.metric.startswith("bw_")]


def test_perftest_interleaved_server_and_client_counted_once():
    (r,) = runs("perftest", "superbench-ib_loopback_8M_size.log")
    assert {m.benchmark for m in r.measurements} == {"ib_write_bw"}
    avg = pick(r.measurements, "bw_avg", bytes=8388608)
    # MB/sec is 2^20 B/s: 24056.72 MiB/s = 25.225 GB/s, and bytes x MsgRate agrees
    assert avg.value == pytest.approx(24056.72 * 1048576 / 1e9)
    assert avg.value == pytest.approx(8388608 * 0.003007e6 / 1e9, rel=2e-4)
    assert avg.params == {"device": "ib0", "qps": 1, "bytes": 8388608, "bidirectional": False, "iterations": 20000}
    assert pick(r.measurements, "msg_rate", bytes=8388608).unit == "Mpps"


def test_perftest_all_sizes_with_duplicated_lines():
    (r,) = runs("perftest", "superbench-ib_loopback_all_sizes.log")
    sizes = [m.params["bytes"] for m in r.measurements if m.metric == "bw_peak"]
    assert sizes == [2 ** i for i in range(1, 24)]  # 2 B .. 8 MiB, the repeated last row read once
    assert pick(r.measurements, "bw_peak", bytes=4096).value == pytest.approx(10034.02 * 1048576 / 1e9)


def test_perftest_gbits_and_post_list_title():
    (r,) = runs("perftest", "perftest-issue273-post-list-gbits.txt")
    assert r.run.meta["variant"] == "Post List" and r.run.meta["link_type"] == "Ethernet"
    assert pick(r.measurements, "bw_avg", bytes=8).value == pytest.approx(0.48 / 8)  # Gb/s -> GB/s
    # 224958464 iterations: perftest does not measure the peak and prints 0.00 (not a bandwidth)
    assert not [m for m in r.measurements if m.metric == "bw_peak"]
    assert "not measured" in r.run.meta["bw_peak"]


def test_perftest_mib_sec_is_the_same_2_20_unit_and_four_tools_in_one_log():
    found = runs("perftest", "cx7-ndr-4-tools-mib-sec-default-cpu-freq-warnings.txt")
    assert [r.run.meta["benchmark"] for r in found] == ["ib_send_bw", "ib_send_lat", "ib_read_bw", "ib_write_bw"]
    send = pick(found[0].measurements, "bw_avg", bytes=65536)
    assert send.value == pytest.approx(46557.03 * 2**20 / 1e9)        # 'BW average[MiB/sec]'
    assert send.value == pytest.approx(65536 * 0.744912e6 / 1e9, rel=1e-4)   # bytes x MsgRate
    assert pick(found[2].measurements, "bw_avg").value == pytest.approx(328.61 / 8)   # --report_gbits
    lat = found[1].measurements
    assert pick(lat, "latency_us", stat="p99.9").value == 5.19 and pick(lat, "latency_us", stat="typical").value == 1.27
    assert found[1].run.meta["warnings"] == [
        "Conflicting CPU frequency values detected: 3295.212000 != 5023.444000. CPU Frequency is not max.",
        "Conflicting CPU frequency values detected: 3295.212000 != 4983.665000. CPU Frequency is not max."]


@pytest.mark.parametrize("name, avg", [
    ("roce100g-write-bidir-D5-gbits-bw-peak-zero.txt", 98.02 / 8),
    ("send-bw-RC-D10-mb-sec-bw-peak-zero.txt", 10958.41 * 2**20 / 1e9),
    ("send-bw-UD-D10-mb-sec-bw-peak-zero.txt", 11288.12 * 2**20 / 1e9),
])
def test_perftest_duration_mode_peak_is_not_measured_not_zero(name, avg):
    (r,) = runs("perftest", name)
    assert [m.metric for m in r.measurements] == ["bw_avg", "msg_rate"]
    assert r.measurements[0].value == pytest.approx(avg)
    assert r.run.meta["bw_peak"].startswith("BW peak not measured")


def test_perftest_bidirectional_title():
    (r,) = runs("perftest", "roce100g-write-bidir-D5-gbits-bw-peak-zero.txt")
    assert r.measurements[0].params["bidirectional"] is True and r.measurements[0].params["iterations"] == 560845


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
