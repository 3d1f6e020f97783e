"""Tests of clusterbench.ingest.iperf3."""

import json

import pytest
from ingest_helpers import _iperf3, pick, runs
from paths import DATA
from tool_log_texts import (
    DATA_more_tool_logs,
    one,
    records,
    runs_more_tool_logs,
    text_tool_logs,
    values,
    warnings,
)

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.records import INCOMPLETE

# -- iperf3 -J -------------------------------------------------------------------------------
BIDIR = "cm4-tcp-bidir-get-server-output-role-tags.txt"


GIB = 1024**3


def cut_at(log: str, line: str) -> str:
    """``log`` up to and including the first line that starts with ``line``."""
    lines = log.split("\n")
    n = next(i for i, ln in enumerate(lines) if ln.startswith(line))
    return "\n".join(lines[:n + 1]) + "\n"


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


def test_iperf3_the_original_still_imports(tmp_path):
    (run,) = parse_text(_iperf3(tmp_path, lambda doc: None).read_text())
    assert len(run.measurements) == 3 and run.run.status == "complete"


def test_iperf3_negative_lost_packets_are_kept():
    # iperf3 counts datagrams arriving out of order as lost: a negative loss is real output
    log = text_tool_logs("iperf3", "v3.7-udp-reverse-negative-lost-out-of-order-sum.txt")
    (run,) = parse_text(log.replace("1174/322045 (0.36%)", "-3409/322045 (-1.1%)"))
    assert [m.value for m in run.measurements if m.metric == "lost_percent"] == [-1.1]
    assert not [w for w in warnings(run) if "below zero" in w]


def test_iperf3_json_of_two_ranks_interleaved_is_one_run_each():
    log = text_tool_logs("iperf3", "v3.12-bidir-loopback-json.json")
    mixed = "".join(f"0: {ln}\n1: {ln}\n" for ln in log.split("\n"))
    runs = parse_text(mixed)
    assert len(runs) == 2
    assert records(runs[:1]) == records(runs[1:]) == records(parse_text(log))


def test_iperf3_bidir_client_keeps_both_directions():
    client, server = runs_more_tool_logs("iperf3", BIDIR)
    assert client.run.meta["role"] == "client" and server.run.meta["role"] == "server"
    ms = client.measurements
    assert len(ms) == 6
    assert all(m.params["bidirectional"] is True and m.params["streams"] == 1 for m in ms)
    # [  5][TX-C]: the client (its address elided in the log) sends to oak
    sent = one(ms, "bandwidth", src_host="", dst_host="oak", side="sent")
    assert sent.value == pytest.approx(924e6 / 8 / 1e9)
    assert sent.params["bytes"] == int(1.08 * GIB)
    assert one(ms, "retransmits", dst_host="oak", side="sent").value == 0
    assert one(ms, "bandwidth", dst_host="oak", side="received").value == pytest.approx(919e6 / 8 / 1e9)
    # [  7][RX-C], printed after the server's report: oak sends to the client
    back = one(ms, "bandwidth", src_host="oak", side="sent")
    assert back.value == pytest.approx(936e6 / 8 / 1e9)
    assert back.params["bytes"] == int(1.09 * GIB)
    assert one(ms, "bandwidth", src_host="oak", side="received").value == pytest.approx(931e6 / 8 / 1e9)
    assert {m.params["leg"] for m in ms if m.params["dst_host"] == "oak"} == {"forward"}   # the client sends
    assert {m.params["leg"] for m in ms if m.params["src_host"] == "oak"} == {"reverse"}
    _, server = runs_more_tool_logs("iperf3", BIDIR)   # the server's view names the same legs
    assert {(m.params["leg"], m.params["side"]) for m in server.measurements if m.metric == "bandwidth"} == \
        {("forward", "received"), ("reverse", "sent")}


def test_iperf3_bidir_json_stores_the_reverse_direction_too():
    """--bidir's JSON puts the server's sending in end.sum_*_bidir_reverse, which was dropped: only
    one direction was stored. A loopback test (iperf3 3.12 on this project's test machine) also
    shows that the legs, not the hosts, tell the directions apart."""
    (run,) = parse_text((DATA_more_tool_logs / "iperf3" / "v3.12-bidir-loopback-json.json").read_text(), name="bidir.json")
    assert run.run.hosts == ["127.0.0.1"]
    got = {(m.params["leg"], m.params["side"]): m.value for m in run.measurements if m.metric == "bandwidth"}
    assert got == {("forward", "sent"): 9498056477.85726 / 8e9, ("forward", "received"): 9455891011.978907 / 8e9,
                   ("reverse", "sent"): 12559240243.34768 / 8e9,
                   ("reverse", "received"): 12502232598.867632 / 8e9}
    assert all(m.params["bidirectional"] is True for m in run.measurements)


def test_iperf3_bidir_server_report_holds_only_its_own_rows():
    _, server = runs_more_tool_logs("iperf3", BIDIR)
    ms = server.measurements
    assert sorted((m.metric, m.params["side"], m.value) for m in ms) == sorted([
        ("bandwidth", "received", pytest.approx(919e6 / 8 / 1e9)),   # [  5][RX-S]
        ("bandwidth", "sent", pytest.approx(933e6 / 8 / 1e9)),       # [  8][TX-S]
        ("retransmits", "sent", 0.0),
    ])


def test_iperf3_text_cut_before_the_sum_row_stores_no_single_stream_as_the_total():
    log = text_tool_logs("iperf3", "tcp-client-P2-format-M-mbytes-per-sec-sum.txt")
    cut = cut_at(log, "[  5]   0.00-10.00  sec  5.12 GBytes   524 MBytes/sec  1352             sender")
    (run,) = parse_text(cut)
    # one of the two streams' 524 MBytes/sec is not the -P 2 test's bandwidth
    assert values([run], "bandwidth") == []
    assert run.run.status == INCOMPLETE
    assert any("[SUM]" in e for e in run.run.errors)
    (whole,) = parse_text(log)   # the whole summary still gives the [SUM] rows, complete
    sent = [m for m in whole.measurements if m.metric == "bandwidth" and m.params["side"] == "sent"]
    assert [(m.value, m.params["streams"]) for m in sent] == [(pytest.approx(989 * 2**20 / 1e9), 2)]
    assert whole.run.status != INCOMPLETE
