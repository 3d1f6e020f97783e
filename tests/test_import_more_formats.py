"""osu_mbw_mr -v, OSU -G tty graphs, perftest --out_json files and logs cut inside their last row.

The logs here are SYNTHETIC (hand-made figures in the layout of the tools' sources); their README
says which source file and version each follows.
"""

import pytest
from ingest_helpers import pick, runs
from paths import DATA

from clusterbench.ingest import LogFormatError, detect_tool, parse_text

MBW_V = "SYNTHETIC-osu_mbw_mr-v7.4-vary-window-v.txt"
BW_GRAPHS = "SYNTHETIC-osu_bw-v7.4-G-tty-graphs-after-table.txt"
WINDOWS = [1, 2, 4, 8, 16, 32, 64, 128]


# -- osu_mbw_mr -v -------------------------------------------------------------------------------
def test_osu_mbw_mr_vary_window_gives_one_record_per_size_and_window():
    assert detect_tool((DATA / "osu" / MBW_V).read_text()) == "osu"
    (r,) = runs("osu", MBW_V)
    assert r.run.status == "complete" and r.run.meta["benchmark"] == "osu_mbw_mr"
    bws = [m for m in r.measurements if m.metric == "bandwidth"]
    rates = [m for m in r.measurements if m.metric == "msg_rate"]
    assert len(bws) == len(rates) == 11 * 8
    assert sorted({m.params["window"] for m in bws}) == WINDOWS
    # 1024-byte row, window 16: 6002.35 MB/s and 5861669.92 messages/s
    bw = pick(bws, "bandwidth", bytes=1024, window=16)
    assert bw.value == pytest.approx(6.00235) and bw.unit == "GB/s" and bw.params["pairs"] == 1
    rate = pick(rates, "msg_rate", bytes=1, window=128)
    assert rate.value == pytest.approx(13.32) and rate.unit == "Mpps"
    # the same cell in both matrices: rate = 1e6 x MB/s / bytes (osu_mbw_mr.c)
    for m in bws:
        other = pick(rates, "msg_rate", bytes=m.params["bytes"], window=m.params["window"])
        assert other.value == pytest.approx(m.value * 1000 / m.params["bytes"], rel=1e-6)


def test_osu_mbw_mr_single_window_reads_as_before():
    (r,) = runs("osu", "hpcbench-osu_mbw_mr-v5.3.2.txt")
    assert len(r.measurements) == 10 and {m.params["window"] for m in r.measurements} == {64}
    assert pick(r.measurements, "bandwidth", bytes=1024).value == pytest.approx(4.30641)


def test_osu_mbw_mr_vary_window_with_two_datatypes_starts_each_bandwidth_matrix_at_its_datatype():
    # OSU 7.x -v -T prints the bandwidth title once, before the first '# Datatype:' line
    lines = (DATA / "osu" / MBW_V).read_text().splitlines()
    second = [ln.replace("MPI_CHAR", "MPI_INT") for ln in lines[5:]]
    (r,) = parse_text("\n".join(lines + second) + "\n", name="x")
    ints = [m for m in r.measurements if m.params.get("dtype") == "int"]
    assert len(r.measurements) == 2 * 176 and len(ints) == 176
    assert {m.metric for m in ints if m.params["bytes"] == 2} == {"bandwidth", "msg_rate"}
    assert pick(ints, "bandwidth", bytes=2, window=1).value == pytest.approx(0.00404)


def test_osu_mbw_mr_vary_window_cut_row_keeps_the_values_before_the_cut():
    lines = (DATA / "osu" / MBW_V).read_text().splitlines()
    cut = lines[:9] + [" ".join(lines[9].split()[:4])]   # the 4-byte row, three of its eight values
    (r,) = parse_text("\n".join(cut) + "\n", name="x")
    assert [m.params["window"] for m in r.measurements if m.params["bytes"] == 4] == [1, 2]
    assert any("3 of its 8 values" in w for w in r.run.meta["warnings"])


# -- -G tty --------------------------------------------------------------------------------------
def test_osu_graphs_after_the_table_are_not_rows():
    text = (DATA / "osu" / BW_GRAPHS).read_text()
    assert detect_tool(text) == "osu"
    (r,) = runs("osu", BW_GRAPHS)
    assert [(m.params["bytes"], m.value) for m in r.measurements] == [
        (1024, pytest.approx(3.87652)), (2048, pytest.approx(6.51208)), (4096, pytest.approx(9.02577))]
    assert r.run.status == "complete" and not r.run.meta.get("warnings")


def test_osu_graphs_end_at_the_next_test():
    text = (DATA / "osu" / BW_GRAPHS).read_text()
    latency = (DATA / "osu" / "hpcbench-osu_latency-v5.3.2-host.txt").read_text()
    first, second = parse_text(text + latency, name="x")
    assert len(first.measurements) == 3 and second.run.meta["benchmark"] == "osu_latency"
    assert len(second.measurements) == len(parse_text(latency, name="y")[0].measurements) > 0


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


@pytest.mark.parametrize("results, message", [
    ('"bw_avg": 46585.030000,\n\n', "without a message size"),                     # --output=bandwidth
    ('"MsgSize": 65536,\nbroken line\n', "a line it does not write"),
])
def test_perftest_out_json_refused(results, message):
    text = (DATA / "perftest" / "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json").read_text()
    head = text[:text.index('"results": {') + len('"results": {\n')]
    with pytest.raises(LogFormatError, match=message):
        parse_text(head + results + "}\n}\n", name="x")
