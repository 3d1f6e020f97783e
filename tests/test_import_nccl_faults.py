"""nccl-tests logs that must never store a wrong number (issue 18), each a real public log in
tests/data/nccl-tests (sources in the README there): failures, elided rows, truncated rank lists,
launcher prefixes, ops named only by a command line, old column meanings."""

from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, parse_text

DATA = Path(__file__).parent / "data" / "nccl-tests"


def runs(name: str, as_name: str | None = None):
    return parse_text((DATA / name).read_text(), name=as_name or name)


def one(name: str, as_name: str | None = None):
    (r,) = runs(name, as_name)
    return r


def by(ms, metric, **params):
    return [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]


def records(imported):
    return sorted((m.benchmark, m.metric, m.value, tuple(sorted(m.params.items()))) for m in imported.measurements)


# -- failures ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, message", [
    ("issue287-5090-2gpu-test-nccl-failure-no-rows.txt",
     "GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"),
    ("issue287-5090-2gpu-nccl-debug-info-warn-cuda-failure.txt", "enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'"),
    ("issue355-v2.17.6-h800-test-cuda-failure-mid-row.txt",
     "node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'"),
    ("issue369-v2.17.8-gh200-8rank-test-cuda-failure-before-header.txt",
     "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'"),
    ("issue5-2018-nccl1.0-res-column-bytes-N-op-header-failure.txt", "NCCL failure all_reduce.cu:95 'unhandled cuda error'"),
    ("dgx-spark-timestamped-ncclwarn-multiline-then-test-nccl-failure.txt",
     "gx10-9c8c: Test NCCL failure common.cu:401 'remote process exited or there was a network error / '"),
])
def test_a_test_failure_is_a_failed_run_carrying_the_message(name, message):
    r = one(name)
    assert r.run.status == "failed"
    assert any(message in e for e in r.run.errors), r.run.errors
    assert r.measurements == []   # the test died before its first row


def test_a_row_cut_by_a_failure_keeps_the_message_not_a_value():
    r = one("issue355-v2.17.6-h800-test-cuda-failure-mid-row.txt")
    assert r.run.meta["partial_last_row"] and r.run.meta["op"] == "alltoall" and r.run.ranks == 16
    assert r.run.versions == {"nccl": "2.28.7", "nccl-tests": "2.17.6"}   # from nccl-library=22807


def test_a_timestamp_prefix_is_stripped_from_the_warning():
    r = one("dgx-spark-timestamped-ncclwarn-multiline-then-test-nccl-failure.txt")
    assert r.run.errors[0].startswith("gx10-9c8c:22890:22900 [0] transport/net_ib.cc:2470 NCCL WARN NET/IB:")


def test_failure_lines_after_the_footer_stay_with_their_run():
    (r,) = runs("issue369-v2.17.8-gh200-wrong-nonzero-oob-failed.txt")
    assert r.run.status == "failed"
    assert r.run.errors == [".. gpu-1-1 pid 662195: Test failure common.cu:1189",
                            ".. gpu-1-7 pid 2448661: Test failure common.cu:1189",
                            "# Out of bounds values : 4 FAILED"]
    assert [m.value for m in by(r.measurements, "wrong", bytes=1048576)] == [96, 32]
    assert by(r.measurements, "out_of_bounds")[0].value == 4


def test_out_of_bounds_failed_with_exponent_wrong_counts():
    r = one("rtx3090-2node-inc-wrong-exponent-oob-108-failed.txt")
    assert r.run.status == "failed" and r.run.ranks == 2
    assert r.run.errors == ["# Out of bounds values : 108 FAILED"]   # why it failed, where errors are read
    assert by(r.measurements, "wrong", bytes=536870912, placement="out")[0].value == 2.68435e+08


# -- rows missing --------------------------------------------------------------------------
def test_rows_elided_from_a_sweep_make_it_incomplete_even_with_a_footer():
    r = one("coreweave-kubectl-logs-minbytes4-rows-elided-start-512M.txt")
    assert r.run.status == "incomplete" and by(r.measurements, "avg_busbw")[0].value == 373.187
    assert r.run.meta["rows_missing"] == [
        "the header promises 30 sizes 4..2147483648 per table; the float sum table shows 5 (536870912..8589934592)"]
    assert r.run.meta["rows_missing"][0] in r.run.meta["warnings"]


def test_a_footer_average_far_from_the_rows_shown_makes_it_incomplete():
    r = one("dgx-spark-alltoall-elided-collapsed-whitespace-doc-excerpt.txt")
    assert r.run.status == "incomplete" and r.run.meta["op"] == "alltoall"
    assert any("footer's average busbw 6.72901 GB/s is not the mean 17.365 GB/s of the 2 busbw values"
               in w for w in r.run.meta["rows_missing"])
    assert by(r.measurements, "busbw", placement="in")[0].value == 17.52   # the row shown is kept


@pytest.mark.parametrize("name", ["gke-kubectl-exec-run_nccl_tests-allgather-op-only-in-command.txt",
                                  "pkb-2019-v100-2node-old-error-column-nccl-2.4.6.txt",
                                  "issue294-h100-2node-16rank-rows-only-no-header.txt",
                                  "mpirun-tag-output-v2.18.0-rtx5090-stderr-lines-perf_mpi-binary.txt"])
def test_whole_sweeps_stay_complete(name):
    r = one(name)
    assert r.run.status == "complete" and "rows_missing" not in r.run.meta and not r.run.meta.get("warnings")


def test_gather_sizes_rounded_to_the_rank_count_are_the_promised_sweep():
    # 12 ranks: 8, 16, 32 B print as 0, 64 as 48 ...; -e 10240M ends at 8 GiB
    all_gather, all_reduce, broadcast, reduce, reduce_scatter = runs(
        "wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt")
    assert "rows_missing" not in reduce_scatter.run.meta and reduce_scatter.run.status == "complete"
    assert sorted({m.params["bytes"] for m in reduce_scatter.measurements if "bytes" in m.params})[:5] == \
        [0, 48, 96, 240, 480]


# -- rank counts -----------------------------------------------------------------------------
def test_a_rank_list_cut_to_its_last_line_does_not_count_ranks():
    r = one("coreweave-gb200-20racks-1440ranks-rank-list-truncated-to-last.txt")
    # busbw/algbw = 2(n-1)/n is 1.9986 for 1440 ranks: two decimals allow 1440 to 1472 ranks
    # (the list's last line bounds it from below): not proven, so null, never 0
    assert r.run.ranks is None and r.run.meta["ranks_at_least"] == 1440
    assert r.run.meta["ranks_at_most"] == 1472
    assert {m.params["ranks"] for m in r.measurements} == {None}
    assert any("number of ranks is unknown" in w for w in r.run.meta["warnings"])
    r = one("coreweave-gb200-nvl72-72ranks-rank-list-truncated-to-last.txt")
    assert r.run.ranks == 72 and r.run.meta["ranks_from"] == ["busbw factor"]


def test_ranks_come_from_busbw_over_algbw_not_from_a_shortened_rank_list():
    text = (DATA / "a3mega-h100-2node-all_reduce.txt").read_text()
    shortened = "".join(ln for ln in text.splitlines(keepends=True)
                        if not any(f"Rank {i:2d} " in ln for i in range(8, 16)))   # a wrapper kept ranks 0-7
    (r,) = parse_text(shortened, name="a3mega.txt")
    assert r.run.ranks == 16
    assert r.run.meta["warnings"] == ["the log lists 8 ranks but busbw/algbw says 16: stored as 16"]


def test_nccl_info_nranks_and_busbw_agree_without_a_header():
    r = one("issue294-h100-2node-16rank-rows-only-no-header.txt")
    assert r.run.ranks == 16 and r.run.meta["op"] == "all_reduce"


def test_one_gpu_busbw_zero_is_one_rank():
    r = one("issue287-5090-1gpu-busbw-zero-overflowing-algbw.txt")
    assert r.run.ranks == 1 and r.run.status == "complete"
    assert by(r.measurements, "algbw", bytes=134217728, placement="in")[0].value == 1777718.25


def test_interleaved_output_of_several_processes_is_refused():
    with pytest.raises(LogFormatError, match=r"sizes repeat out of order .*134217728, 134217728, 536870912"):
        runs("issue294-h100-non-mpi-build-under-mpirun-interleaved-duplicate-rows.txt")


# -- launcher prefixes -----------------------------------------------------------------------
def test_srun_label_padded_to_the_task_width():
    r = one("issue290-srun-label-space-padded-h100-2node-validation0.txt")
    assert r.run.status == "complete" and r.run.ranks == 16 and r.run.hosts == ["node005", "node007"]
    assert not by(r.measurements, "wrong")   # validation: 0 prints N/A
    assert by(r.measurements, "busbw", bytes=8589934592, placement="out")[0].value == 155.57


def test_skypilot_prefix_before_an_mpi_tag():
    r = one("skypilot-head-prefix-plus-tag-output-h200-16rank-allgather-unnamed.txt")
    assert r.run.meta["op"] == "all_gather"   # only the file name says so
    assert r.run.ranks == 16 and r.run.hosts == ["nc-d87e1263-head", "nc-d87e1263-worker1"]
    assert len(by(r.measurements, "busbw")) == 48


def test_mpi_binary_and_stderr_tags():
    r = one("mpirun-tag-output-v2.18.0-rtx5090-stderr-lines-perf_mpi-binary.txt")
    assert r.run.meta["op"] == "all_reduce" and r.run.source == "nccl-tests 2.18.0"
    assert r.run.versions["nccl"] == "2.29.7" and r.run.errors == []


@pytest.mark.parametrize("wrap", [
    lambda i, ln: f"gpu-node-07: {ln}",                                       # pdsh
    lambda i, ln: f"2025-11-19T18:02:{i % 60:02d}.123456789Z {ln}",           # kubectl --timestamps
    lambda i, ln: f"[pod/nccl-launcher-x7/mpi] {ln}",                         # kubectl --prefix
    lambda i, ln: f"{' 0' if i % 2 else '0'}: {ln}",                          # srun --label, padded or not
    lambda i, ln: f"(head, rank=0, pid=3808) [1,0]<stdout>:{ln}",             # SkyPilot + mpirun
], ids=["pdsh", "timestamps", "kubectl-prefix", "srun-label", "skypilot"])
@pytest.mark.parametrize("name", ["a3mega-h100-2node-all_reduce.txt", "superbench-nccl_alltoall.log",
                                  "pkb-2019-v100-2node-old-error-column-nccl-2.4.6.txt"])
def test_a_wrapper_prefix_never_changes_a_record(name, wrap):
    plain = one(name)
    lines = (DATA / name).read_text().splitlines(keepends=True)
    (wrapped,) = parse_text("".join(wrap(i, ln) for i, ln in enumerate(lines)), name=name)
    assert records(wrapped) == records(plain)
    assert (wrapped.run.status, wrapped.run.ranks, wrapped.run.hosts) == (plain.run.status, plain.run.ranks,
                                                                           plain.run.hosts)


# -- which collective ------------------------------------------------------------------------
def test_op_from_a_wrapper_script_command_line():
    r = one("gke-kubectl-exec-run_nccl_tests-allgather-op-only-in-command.txt", as_name="gke.txt")
    assert r.run.meta["op"] == "all_gather" and {m.benchmark for m in r.measurements} == {"all_gather"}


def test_running_lines_name_each_run_of_a_file():
    found = runs("wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt", as_name="dgx2.txt")
    assert [r.run.meta["op"] for r in found] == ["all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"]
    assert [r.run.status for r in found] == ["failed", "complete", "complete", "complete", "complete"]
    assert all(r.run.ranks == 12 for r in found)


def test_a_table_nothing_names_is_refused_not_stored_as_a_generic_collective():
    # validation 0 (#wrong N/A in both placements), no redop or root column: all_gather,
    # alltoall and alltoallv print such a table alike
    with pytest.raises(LogFormatError, match="does not say which collective it measured.*fit all_gather, "
                                             "alltoall, alltoallv"):
        one("superbench-nccl_alltoall.log", as_name="sb.log")
    # no version line: before nccl-tests 2.13.1 alltoall printed a number in place too, so the
    # table's own columns cannot tell all_gather from alltoall; the file name can
    with pytest.raises(LogFormatError, match="does not say which collective it measured"):
        one("skypilot-head-prefix-plus-tag-output-h200-16rank-allgather-unnamed.txt", as_name="sky.log")


def test_old_all_gather_algbw_column_is_not_stored_as_algbw():
    all_gather, *_, reduce_scatter = runs("wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt")
    for r in (all_gather, reduce_scatter):
        assert not by(r.measurements, "algbw") and by(r.measurements, "busbw")
        assert "printed busbw in its algbw column" in r.run.meta["algbw_not_stored"]
    # the old error column is the largest error, not a count of wrong elements
    assert by(all_gather.measurements, "max_error", bytes=8589934560, placement="out")[0].value == 1.0
