"""Real logs of options the importers misread before: iperf3 ``--bidir`` text output and OSU's
one-sided (MPI_Put/Get/Accumulate) tests. Values are compared with the numbers printed in the log."""

from pathlib import Path

import pytest

from clusterbench.ingest import detect_tool, parse_text

DATA = Path(__file__).parent / "data"
BIDIR = "cm4-tcp-bidir-get-server-output-role-tags.txt"
ONE_SIDED = "wukan-blog-one-sided-v5.6.3-openmpi-put-get-acc.txt"
GIB = 1024**3


def runs(tool: str, name: str) -> list:
    text = (DATA / tool / name).read_text()
    assert detect_tool(text) == tool
    return parse_text(text, name=name)


def one(ms: list, metric: str, **params: object):
    found = [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, params, found)
    return found[0]


def test_iperf3_bidir_client_keeps_both_directions():
    client, server = runs("iperf3", BIDIR)
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
    _, server = runs("iperf3", BIDIR)   # the server's view names the same legs
    assert {(m.params["leg"], m.params["side"]) for m in server.measurements if m.metric == "bandwidth"} == \
        {("forward", "received"), ("reverse", "sent")}


def test_iperf3_bidir_json_stores_the_reverse_direction_too():
    """--bidir's JSON puts the server's sending in end.sum_*_bidir_reverse, which was dropped: only
    one direction was stored. A loopback test (iperf3 3.12 on this project's test machine) also
    shows that the legs, not the hosts, tell the directions apart."""
    (run,) = parse_text((DATA / "iperf3" / "v3.12-bidir-loopback-json.json").read_text(), name="bidir.json")
    assert run.run.hosts == ["127.0.0.1"]
    got = {(m.params["leg"], m.params["side"]): m.value for m in run.measurements if m.metric == "bandwidth"}
    assert got == {("forward", "sent"): 9498056477.85726 / 8e9, ("forward", "received"): 9455891011.978907 / 8e9,
                   ("reverse", "sent"): 12559240243.34768 / 8e9,
                   ("reverse", "received"): 12502232598.867632 / 8e9}
    assert all(m.params["bidirectional"] is True for m in run.measurements)


def test_iperf3_bidir_server_report_holds_only_its_own_rows():
    _, server = runs("iperf3", BIDIR)
    ms = server.measurements
    assert sorted((m.metric, m.params["side"], m.value) for m in ms) == sorted([
        ("bandwidth", "received", pytest.approx(919e6 / 8 / 1e9)),   # [  5][RX-S]
        ("bandwidth", "sent", pytest.approx(933e6 / 8 / 1e9)),       # [  8][TX-S]
        ("retransmits", "sent", 0.0),
    ])


ONE_SIDED_TESTS = [
    # program, first size, its value, last size, its value, synchronization
    ("osu_acc_latency", 1, 0.04, 4194304, 3008.60, "MPI_Win_flush"),
    ("osu_fop_latency", 8, 0.04, 8, 0.04, "MPI_Win_flush"),
    ("osu_get_bw", 1, 32.07, 4194304, 4720.81, "MPI_Win_flush"),
    ("osu_put_bibw", 1, 43.58, 4194304, 8805.68, "MPI_Win_post/start/complete/wait"),
    ("osu_put_latency", 1, 0.06, 4194304, 347.49, "MPI_Win_flush"),
    ("osu_cas_latency", 8, 0.04, 8, 0.04, "MPI_Win_flush"),
    ("osu_get_acc_latency", 1, 1.83, 4194304, 4497.17, "MPI_Win_lock/unlock"),
    ("osu_get_latency", 1, 0.04, 4194304, 352.69, "MPI_Win_flush"),
    ("osu_put_bw", 1, 24.48, 4194304, 4395.14, "MPI_Win_flush"),
]


def test_osu_one_sided_tests_are_named_by_their_program():
    found = runs("osu", ONE_SIDED)
    assert [r.run.meta["benchmark"] for r in found] == [t[0] for t in ONE_SIDED_TESTS]
    for r, (program, first, v_first, last, v_last, sync) in zip(found, ONE_SIDED_TESTS):
        assert {m.benchmark for m in r.measurements} == {program}
        assert len(r.measurements) == (1 if first == last else 23)
        metric = "latency_us" if program.endswith("latency") else "bandwidth"
        scale = 1 if metric == "latency_us" else 1 / 1000   # OSU's MB/s is 10^6 B/s
        assert one(r.measurements, metric, bytes=first).value == pytest.approx(v_first * scale)
        assert one(r.measurements, metric, bytes=last).value == pytest.approx(v_last * scale)
        for m in r.measurements:
            assert m.params["synchronization"] == sync
            assert m.params["window_creation"] == ("MPI_Win_create" if program == "osu_get_acc_latency"
                                                   else "MPI_Win_allocate")


def test_osu_nonblocking_overlap_table_is_kept_with_a_warning_not_dropped():
    """The non-blocking collectives' table (Overall, Compute, Pure Comm., Overlap) holds no column
    clusterbench stores: each such test was dropped without a word, so a log mixing it with other
    tests lost it silently. Each is now a run saying its rows were not stored."""
    text = (DATA / "osu" / "ompi-pr7735-osu_iallgather-v5.3.2-nonblocking-overlap.txt").read_text()
    runs = parse_text(text, name="iallgather.log")
    assert len(runs) == 2 and all(len(r) == 0 for r in runs)
    for r in runs:
        assert r.run.status == "incomplete" and not r.run.errors
        assert r.run.meta["warnings"] == ["1 row not stored: no column of 'Size           Overall(us)       "
                                          "Compute(us)    Pure Comm.(us)        Overlap(%)' is one clusterbench "
                                          "reads (latency, bandwidth, message rate)"]
