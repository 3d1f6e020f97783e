"""perftest, iperf3 -J and OSU micro-benchmark output (real logs) -> RDMA, net and osu_* records."""

from pathlib import Path

import pytest
from ingest_helpers import pick, runs

from clusterbench.ingest import LogFormatError, detect_tool, parse_text

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("tool", ["perftest", "iperf3", "osu"])
def test_every_log_is_detected(tool):
    for path in sorted((DATA / tool).iterdir()):
        if path.name != "README.md" and "invalid" not in path.name and "version" not in path.name:
            assert detect_tool(path.read_text()) == tool, path.name


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


def test_perftest_without_a_complete_row_is_refused():
    with pytest.raises(LogFormatError, match="no perftest results"):
        runs("perftest", "perftest-issue234-server-truncated-row.txt")


def test_iperf3_tcp_sent_and_received():
    (r,) = runs("iperf3", "cloudpilot-bw_proxy_target_direct-10s-omit3.json")
    sent = pick(r.measurements, "bandwidth", side="sent")
    assert sent.value == pytest.approx(464521026.08410436 / 8e9) and sent.unit == "GB/s"
    assert sent.params["src_host"] == "10.120.0.11" and sent.params["dst_host"] == "169.44.160.3"
    assert sent.params["streams"] == 1 and sent.params["protocol"] == "tcp" and sent.params["duration_s"] == 10
    assert pick(r.measurements, "bandwidth", side="received").params["bytes"] == 584581120
    assert pick(r.measurements, "retransmits", side="sent").value == 0
    assert r.run.source == "iperf3 3.9" and r.run.hosts == ["10.120.0.11", "169.44.160.3"]


@pytest.mark.parametrize("name", ["cloudpilot-10k_file-bytes-mode.json",
                                  "cloudpilot-small_file-london-uswest2-receiver-zero.json"])
def test_iperf3_bytes_mode(name):
    (r,) = runs("iperf3", name)
    assert "duration_s" not in pick(r.measurements, "bandwidth", side="sent").params  # -n mode: duration 0
    assert pick(r.measurements, "bandwidth", side="received").value >= 0


def test_iperf3_invalid_json_is_refused():
    with pytest.raises(LogFormatError):
        parse_text((DATA / "iperf3" / "iperf-issue613-udp-invalid-json-nan.txt").read_text(), tool="iperf3")


def test_osu_bw_seven_runs_with_their_environment():
    rs = runs("osu", "rocm-blogs-gpu-aware-mpi-osu_bw-rocm-DD-16MiB.txt")
    assert len(rs) == 7
    assert [r.run.env["HIP_VISIBLE_DEVICES"] for r in rs] == [f"0,{i}" for i in range(1, 8)]
    assert rs[0].run.env["HSA_ENABLE_SDMA"] == "0" and rs[0].run.source == "osu 7.0"
    bw = pick(rs[0].measurements, "bandwidth", bytes=16777216)
    assert bw.benchmark == "osu_bw" and bw.value == pytest.approx(142.23539) and bw.params["buffers"] == "D D"
    assert pick(rs[6].measurements, "bandwidth").value == pytest.approx(68.7888)


def test_osu_collective_latency_columns():
    (r,) = runs("osu", "ompi-pr12318-osu_reduce-cuda-192ranks-truncated.txt")
    assert r.run.meta["benchmark"] == "osu_reduce" and r.run.meta["variant"] == "MPI-CUDA"
    assert pick(r.measurements, "latency_us", bytes=1, stat="avg").value == 53.34
    assert pick(r.measurements, "latency_us", bytes=1024, stat="max").value == 134.61
    assert pick(r.measurements, "latency_us", bytes=2048, stat="min").value == 25.93  # row cut after Max
    assert "osu_reduce -d cuda -f" in r.run.meta["log_command"]


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


def test_perftest_unknown_unit_is_refused():
    text = (DATA / "perftest" / "elizabetht-spark-ib_write_bw-roce-gb10-mtu1024.txt").read_text()
    with pytest.raises(LogFormatError, match="unknown unit 'KB/sec'"):
        parse_text(text.replace("MB/sec", "KB/sec"), name="x.txt")


# -- iperf3 text output ----------------------------------------------------------------------
def test_iperf3_text_old_bandwidth_header_tcp():
    (r,) = runs("iperf3", "hpcbench-tcp-1stream-old-bandwidth-header.txt")
    sent = pick(r.measurements, "bandwidth", side="sent")
    assert sent.value == pytest.approx(5.76e9 / 8 / 1e9)                  # Gbits/sec: steps of 1000
    assert sent.params == {"src_host": "148.187.84.12", "dst_host": "148.187.84.48", "protocol": "tcp",
                           "streams": 1, "side": "sent", "bytes": int(6.70 * 1024**3)}   # GBytes: 1024
    assert pick(r.measurements, "retransmits", side="sent").value == 19
    assert pick(r.measurements, "bandwidth", side="received").value == pytest.approx(5.75 / 8)


def test_iperf3_text_parallel_streams_use_the_sum_rows_and_byte_rates():
    (r,) = runs("iperf3", "tcp-client-P2-format-M-mbytes-per-sec-sum.txt")
    sent = pick(r.measurements, "bandwidth", side="sent")
    assert sent.value == pytest.approx(989 * 1024**2 / 1e9)                 # -f M: MBytes/sec are bytes
    assert sent.params["streams"] == 2 and pick(r.measurements, "retransmits").value == 2138


def test_iperf3_text_udp_client_jitter_and_loss_from_the_receiver_only():
    (r,) = runs("iperf3", "moler-udp-client-P2-fk-kbits-sum.txt")
    assert pick(r.measurements, "bandwidth", side="sent").value == pytest.approx(2113e3 / 8 / 1e9)   # -f k
    assert pick(r.measurements, "jitter_us").params["side"] == "received"     # the sender's 0.000 ms is not stored
    assert pick(r.measurements, "jitter_us").value == pytest.approx(18.0)
    assert pick(r.measurements, "lost_percent").value == 0.0


@pytest.mark.parametrize("name, streams, gbs", [("moler-tcp-server-3streams-fk-kbits-sum.txt", 3, 41720300e3 / 8e9),
                                               ("moler-udp-server-3streams-sum-jitter.txt", 3, 3145e3 / 8e9),
                                               ("moler-v3.6-verbose-tcp-server-sender-stats-not-available.txt", 1,
                                                22.0 / 8)])
def test_iperf3_text_server_side_receives_from_its_client(name, streams, gbs):
    (r,) = runs("iperf3", name)
    bw = pick(r.measurements, "bandwidth", side="received")
    assert bw.value == pytest.approx(gbs) and bw.params["streams"] == streams
    assert r.run.meta["role"] == "server" and not [m for m in r.measurements if m.params["side"] == "sent"]


def test_iperf3_text_verbose_client_version_and_test_settings():
    (r,) = runs("iperf3", "moler-v3.6-verbose-tcp-ipv6-client-summary-cpu.txt")
    assert r.run.source == "iperf3 3.6"
    sent = pick(r.measurements, "bandwidth", side="sent")
    assert sent.params["duration_s"] == 10 and sent.params["block_bytes"] == 131072
    assert sent.params["src_host"] == "fd00::2:0" and sent.value == pytest.approx(25.8 / 8)


def test_iperf3_text_reverse_mode_swaps_source_and_destination():
    (r,) = runs("iperf3", "v3.7-udp-reverse-negative-lost-out-of-order-sum.txt")
    recv = pick(r.measurements, "bandwidth", side="received")
    assert recv.params["src_host"] == "10.45.0.1" and recv.params["dst_host"] == "10.45.0.2"
    assert pick(r.measurements, "lost_percent").value == 0.36 and r.run.meta["out_of_order_datagrams"] == 3409


def test_iperf3_text_interrupted_runs_keep_what_moved_and_say_so():
    (r,) = runs("iperf3", "v3.7-udp-reverse-ctrl-c-interrupted-zero-intervals.txt")
    assert r.run.status == "incomplete" and r.run.errors == ["iperf3: interrupt - the client has terminated"]
    assert [m.params["side"] for m in r.measurements if m.metric == "bandwidth"] == ["received"]
    assert "moved no byte" in r.run.meta["notes"][0]
    (r,) = runs("iperf3", "v3.7-udp-reverse-interrupted-bogus-interval-476225s.txt")
    assert r.run.status == "incomplete" and r.measurements == []      # no 0 GB/s over 476225 s


def test_iperf2_output_is_refused():
    with pytest.raises(LogFormatError, match="iperf 2 output"):
        runs("iperf3", "pkb-NOT-iperf3-iperf2-enhanced-udp-tcp-multi.txt")
    with pytest.raises(LogFormatError, match="unknown format"):   # iperf3 --version: no result at all
        runs("iperf3", "moler-version-3.12.txt")


# -- OSU ---------------------------------------------------------------------------------------
def test_osu_name_is_the_program_not_the_title():
    (r,) = runs("osu", "oci-osu_xccl_allreduce-v7.5-nccl-16rank-using-nccl-lines.txt")
    # title 'OSU NCCL-CUDA Allreduce Latency Test': the program is osu_xccl_allreduce, not osu_allreduce
    assert {m.benchmark for m in r.measurements} == {"osu_xccl_allreduce"}
    assert pick(r.measurements, "latency_us", bytes=1073741824).value == 13482.19
    text = (DATA / "osu" / "oci-osu_xccl_allreduce-v7.5-nccl-16rank-using-nccl-lines.txt").read_text()
    (r,) = parse_text("".join(ln for ln in text.splitlines(keepends=True) if "mpirun" not in ln), name="x")
    assert r.run.meta["benchmark"] == "osu_xccl_allreduce"   # from the title of the NCCL variant alone


@pytest.mark.parametrize("name, bench, buffers", [
    ("mvapich2-cuda-v5.6.3-latency-and-bibw-DD-two-tests-one-file.txt", "osu_latency", "D D"),
    ("ompi-osu_latency-v5.3.2-cuda-build-HH-host-buffers.txt", "osu_latency", "H H"),
    ("ucx-issue3984-osu_bw-v5.6.1-HD-host-to-device-elided.txt", "osu_bw", "H D"),
    ("oci-osu_bw-v7.5-cuda-DD-no-buffer-line-datatype.txt", "osu_bw", "D D"),   # from '-d cuda D D'
    ("jsc-osu_allreduce-v7.0-cuda-full-min-max-iterations-srun-lines.txt", "osu_allreduce", "D D"),  # '-d cuda'
])
def test_osu_buffer_placement_is_a_parameter(name, bench, buffers):
    r = runs("osu", name)[0]
    assert {m.benchmark for m in r.measurements} == {bench}
    assert {m.params["buffers"] for m in r.measurements} == {buffers}


def test_osu_two_tests_in_one_file_are_two_runs():
    lat, bibw = runs("osu", "mvapich2-cuda-v5.6.3-latency-and-bibw-DD-two-tests-one-file.txt")
    assert lat.run.meta["benchmark"] == "osu_latency" and bibw.run.meta["benchmark"] == "osu_bibw"
    assert pick(lat.measurements, "latency_us", bytes=0).value == 0.95
    assert pick(bibw.measurements, "bandwidth", bytes=64).value == pytest.approx(5.76 / 1000)


def test_osu_mpi_chatter_inside_the_table_is_not_a_row_or_a_failure():
    (r,) = runs("osu", "ompi-osu_latency-v5.3.2-cuda-DD-help-messages-mid-table.txt")
    assert r.run.status == "complete" and r.run.errors == [] and len(r.measurements) == 24
    (r,) = runs("osu", "mvapich2-gdr-osu_allreduce-v5.9-cuda-warnings-mid-table.txt")
    assert r.run.status == "complete" and len(r.measurements) == 19
    assert len(r.run.meta["warnings"]) == 2 and "Performance Impact Warning" in r.run.meta["warnings"][0]


def test_osu_hung_test_is_incomplete_without_a_value():
    (r,) = runs("osu", "cray-mpich-osu_bw-v7.1-cuda-DD-hang-libfabric-warnings-no-rows.txt")
    assert r.run.status == "incomplete" and r.measurements == []
    assert r.run.errors == ["no result row: the test printed its header and nothing after it"]
    assert any("<warn>" in w for w in r.run.meta["warnings"])


def test_osu_elided_rows_make_the_run_incomplete():
    (r,) = runs("osu", "ucx-issue3984-osu_bw-v5.6.1-HD-host-to-device-elided.txt")
    assert r.run.status == "incomplete" and r.run.meta["rows_elided"] == 1
    assert [m.params["bytes"] for m in r.measurements] == [1, 2, 4, 1048576, 2097152, 4194304]


def test_osu_full_columns_and_mbw_mr_window():
    (r,) = runs("osu", "jsc-osu_allreduce-v7.0-cuda-full-min-max-iterations-srun-lines.txt")
    assert {m.params["stat"]: m.value for m in r.measurements} == {"avg": 8630.58, "min": 8619.50, "max": 8642.46}
    (r,) = runs("osu", "hpcbench-osu_mbw_mr-v5.3.2.txt")
    rate = pick(r.measurements, "msg_rate", bytes=64)
    assert rate.value == pytest.approx(7.64337859) and rate.params["window"] == 64 and rate.params["pairs"] == 1
