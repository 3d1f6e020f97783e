"""Real tool logs as they reach clusterbench damaged or wrapped: cut short inside a row or before
a summary's last row, behind pdsh's ``host: `` on a log too short for the cleaners to see it, a
launcher's ``[1,0]<stdout>:`` tag before a text block, several result blocks in one log. Each
test starts from a real log in tests/data and compares with the numbers printed in it."""

from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, parse_text
from clusterbench.records import INCOMPLETE

DATA = Path(__file__).parent / "data"


def text(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text()


def cut_at(log: str, line: str) -> str:
    """``log`` up to and including the first line that starts with ``line``."""
    lines = log.split("\n")
    n = next(i for i, ln in enumerate(lines) if ln.startswith(line))
    return "\n".join(lines[:n + 1]) + "\n"


def values(runs: list, metric: str) -> list[float]:
    return [m.value for r in runs for m in r.measurements if m.metric == metric]


def test_iperf3_text_cut_before_the_sum_row_stores_no_single_stream_as_the_total():
    log = text("iperf3", "tcp-client-P2-format-M-mbytes-per-sec-sum.txt")
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


def test_hipblaslt_short_log_behind_pdsh_host_prefix_keeps_every_column():
    log = text("hipblaslt-bench", "doc-v-validation-cpu-gflops-norm-error.txt")
    plain = parse_text(log)
    prefixed = parse_text("".join(f"node1: {ln}\n" for ln in log.split("\n")))
    assert [(m.metric, m.value, m.params) for m in prefixed[0].measurements] == \
        [(m.metric, m.value, m.params) for m in plain[0].measurements]
    assert prefixed[0].measurements[0].params["transA"] == "N"


def test_vllm_text_behind_mpirun_tag_output_is_read_as_text_not_json():
    log = text("vllm-serving", "vllm-pr7062-serving-result-text-truncated.txt")
    tagged = "".join(f"[1,0]<stdout>:{ln}\n" for ln in log.split("\n"))
    (run,) = parse_text(tagged)
    assert values([run], "request_throughput") == [7.79]


def test_vllm_text_log_with_one_block_per_request_rate_gives_one_run_each():
    one = text("vllm-serving", "vllm-pr7062-serving-result-text-truncated.txt").rstrip("\n")
    closed = one + "\n" + "=" * 50 + "\n"
    sweep = "Traffic request rate: 4.0\n" + closed + "Traffic request rate: 8.0\n" + closed
    runs = parse_text(sweep)
    assert [r.measurements[0].params["request_rate"] for r in runs] == [4.0, 8.0]
    assert values(runs, "request_throughput") == [7.79, 7.79]
    assert all(r.run.status != INCOMPLETE for r in runs)


def test_transferbench_a2a_row_cut_mid_number_keeps_only_whole_cells():
    log = text("transferbench", "sysaccept-mi300x-a2a.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("GPU 00 N/A"))
    head = log[:log.index(full)] + "GPU 00 N/A 43.666 36.624 43.480 36.67"   # cut in 36.677
    (run,) = parse_text(head)
    pairs = {m.params["dst"]: m.value for m in run.measurements if m.params.get("src") == "G0"}
    assert pairs == {"G1": 43.666, "G2": 36.624, "G3": 43.48}
    assert any("cut short" in w for w in run.run.meta["warnings"])


def test_transferbench_p2p_row_cut_stores_no_partial_number():
    log = text("transferbench", "sysaccept-mi300x-p2p.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("GPU 02 ->"))
    (run,) = parse_text(log[:log.index(full)] + "GPU 02 -> 55.25 55.24 48.83 48.53 1")
    from_g2 = [m.value for m in run.measurements if m.params.get("src") == "G2"]
    assert from_g2 == [55.25, 55.24, 48.83, 48.53]   # the cut '1' of 1690.87 is not kept


def test_osu_row_cut_before_its_last_column_does_not_store_a_partial_number():
    log = text("osu", "hpcbench-osu_mbw_mr-v5.3.2.txt")
    (run,) = parse_text(log[:log.index("64                    489.18")] + "64                    4")
    assert values([run], "bandwidth") == []
    assert any("cut short" in w for w in run.run.meta["warnings"])


def test_babelstream_csv_row_cut_mid_line_is_not_stored():
    log = text("babelstream", "hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("Mul,"))
    (run,) = parse_text(log[:log.index(full)] + "Mul,100,33554432,8,152026,0.0")
    assert {m.params["kernel"] for m in run.measurements} == {"Copy"}
    assert values([run], "bandwidth") == [pytest.approx(152.212)]
    assert any("cut short" in w for w in run.run.meta["warnings"])


def test_babelstream_csv_with_only_a_cut_row_says_why_nothing_is_stored():
    log = text("babelstream", "hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("Copy,"))
    with pytest.raises(LogFormatError, match="cut short"):
        parse_text(log[:log.index(full)] + "Copy,100,33554432,8,152212,0.0")
