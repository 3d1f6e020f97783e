"""iperf3 text variants (ingest/iperf3_text.py) on real logs (tests/data/iperf3, sources in its
README): iperf 3.0's UDP summary without side words, and a summary a mail client wrapped."""

from pathlib import Path

import pytest

from clusterbench.ingest import detect_tool, parse_text

DATA = Path(__file__).parent.parent / "data" / "iperf3"


def one(name: str):
    text = (DATA / name).read_text()
    assert detect_tool(text) == "iperf3"
    (r,) = parse_text(text, name=name)
    return r


def by(r, metric, **params):
    return [m for m in r.measurements if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]


def test_udp_parallel_summary_without_sender_or_receiver():
    # iperf 3.0 -u -P 4 -b 100G: four stream rows and [SUM], each with the receiver's jitter and
    # loss, followed by 'Sent N datagrams'; no sender/receiver word (as -J's end.sum)
    r = one("sriov-udp-P4-b100G-text.txt")
    assert r.run.status == "complete" and r.run.hosts == ["10.0.32.34"]
    (bw,) = by(r, "bandwidth")
    assert bw.value == pytest.approx(14.1 / 8) and bw.unit == "GB/s"
    assert bw.params == {"src_host": "", "dst_host": "10.0.32.34", "protocol": "udp", "streams": 4,
                         "side": "sent", "bytes": int(16.4 * 1024 ** 3)}
    assert by(r, "lost_percent")[0].value == 0.027 and by(r, "jitter_us")[0].value == pytest.approx(1.0)
    assert len(r.measurements) == 3


def test_bidirectional_summary_with_its_side_words_wrapped_onto_their_own_lines():
    # iperf3 --bidir -P 4 quoted in a mail: 'sender'/'receiver' each on the line after its row,
    # the command line after 'iperf Done.'
    r = one("lkml-thunderbolt-bond-bidir-P4-text-email-wrapped-summary.txt")
    assert r.run.status == "complete" and r.run.hosts == ["10.10.13.1"]
    fwd = {m.params["side"]: m.value for m in by(r, "bandwidth", leg="forward")}
    rev = {m.params["side"]: m.value for m in by(r, "bandwidth", leg="reverse")}
    assert fwd == pytest.approx({"sent": 19.1 / 8, "received": 19.1 / 8})
    assert rev == pytest.approx({"sent": 19.0 / 8, "received": 19.0 / 8})
    assert {m.params["streams"] for m in r.measurements} == {4}
    assert {m.params["bidirectional"] for m in r.measurements} == {True}
    assert by(r, "retransmits", leg="reverse")[0].value == 7.0
    assert len(by(r, "bandwidth")) == 4   # the [SUM] rows only, never a stream's share


def test_two_invocations_without_banner_lines_are_two_runs():
    # a script's log of the same test twice, each with its prompt line: the second summary's
    # header ends the first run (no 'Connecting to host' line says so)
    text = (DATA / "sriov-udp-P4-b100G-text.txt").read_text()
    second = text.replace("10.0.32.34", "10.0.32.35").replace("14.1 Gbits/sec", "14.2 Gbits/sec")
    first, again = parse_text(text + second, name="two.txt")
    assert (first.run.hosts, again.run.hosts) == (["10.0.32.34"], ["10.0.32.35"])
    assert [m.value for m in by(first, "bandwidth")] == pytest.approx([14.1 / 8])
    assert [m.value for m in by(again, "bandwidth")] == pytest.approx([14.2 / 8])
