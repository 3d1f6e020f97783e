"""Tests of clusterbench.ingest.osu."""


import pytest
from ingest_helpers import pick, runs
from paths import DATA
from tool_log_texts import (
    DATA_import_net_tools,
    DATA_more_tool_logs,
    one,
    records,
    runs_more_tool_logs,
    text_tool_logs,
    values,
    warnings,
)

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.ingest.osu import bench_name

MBW_V = "SYNTHETIC-osu_mbw_mr-v7.4-vary-window-v.txt"


BW_GRAPHS = "SYNTHETIC-osu_bw-v7.4-G-tty-graphs-after-table.txt"


WINDOWS = [1, 2, 4, 8, 16, 32, 64, 128]


def _passing_block() -> list[str]:
    """The same issue's rows with every row 'Pass' (the second block of that comment passes)."""
    text = (DATA / "osu" / "ompi-issue12717-osu_allreduce-v7.4-validation-fail.txt").read_text()
    return [ln.replace("Fail", "Pass") for ln in text.splitlines()[2:10]]


ONE_SIDED = "wukan-blog-one-sided-v5.6.3-openmpi-put-get-acc.txt"


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


# -- OSU ---------------------------------------------------------------------------------------
def test_osu_name_is_the_program_not_the_title():
    (r,) = runs("osu", "oci-osu_xccl_allreduce-v7.5-nccl-16rank-using-nccl-lines.txt")
    # title 'OSU NCCL-CUDA Allreduce Latency Test': the program is osu_xccl_allreduce, not osu_allreduce
    assert {m.benchmark for m in r.measurements} == {"osu_xccl_allreduce"}
    assert pick(r.measurements, "latency_us", bytes=1073741824).value == 13482.19
    text = (DATA_import_net_tools / "osu" / "oci-osu_xccl_allreduce-v7.5-nccl-16rank-using-nccl-lines.txt").read_text()
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


# -- values below zero -------------------------------------------------------------------------
def test_osu_bandwidth_below_zero_is_dropped_with_a_warning():
    log = text_tool_logs("osu", "hpcbench-osu_bw-v5.3.2-host.txt").replace("11923.92", "-1.5")
    (run,) = parse_text(log)
    assert [m.value for m in run.measurements] == [pytest.approx(11.95224)]
    assert warnings(run) == ["osu_bw bandwidth -0.0015 GB/s not stored: a time or rate below zero is no measurement"]


# -- pdsh's host before the lines of a short log -----------------------------------------------
@pytest.mark.parametrize("host", ["node1", "gpu-a.cluster", "DGX01"])
def test_short_osu_log_behind_pdsh_reads_as_without(host):
    log = text_tool_logs("osu", "hpcbench-osu_bw-v5.3.2-host.txt")
    assert len([ln for ln in log.split("\n") if ln.strip()]) < 5
    prefixed = "".join(f"{host}: {ln}\n" for ln in log.split("\n") if ln)
    assert records(parse_text(prefixed)) == records(parse_text(log))


def test_osu_one_sided_tests_are_named_by_their_program():
    found = runs_more_tool_logs("osu", ONE_SIDED)
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
    text = (DATA_more_tool_logs / "osu" / "ompi-pr7735-osu_iallgather-v5.3.2-nonblocking-overlap.txt").read_text()
    runs_more_tool_logs = parse_text(text, name="iallgather.log")
    assert len(runs_more_tool_logs) == 2 and all(len(r) == 0 for r in runs_more_tool_logs)
    for r in runs_more_tool_logs:
        assert r.run.status == "incomplete" and not r.run.errors
        assert r.run.meta["warnings"] == ["1 row not stored: no column of 'Size           Overall(us)       "
                                          "Compute(us)    Pure Comm.(us)        Overlap(%)' is one clusterbench "
                                          "reads (latency, bandwidth, message rate)"]


def test_osu_row_cut_before_its_last_column_does_not_store_a_partial_number():
    log = text_tool_logs("osu", "hpcbench-osu_mbw_mr-v5.3.2.txt")
    (run,) = parse_text(log[:log.index("64                    489.18")] + "64                    4")
    assert values([run], "bandwidth") == []
    assert any("cut short" in w for w in run.run.meta["warnings"])


# -- issue 34: programs named as OSU ships them, one run per test, buffers, warnings -----------
MODES = "mi300a-affinity-rocm-DD-latency-bw-v7.5-3modes-annotated-rows.txt"


# Each program's title, as osu-micro-benchmarks 7.4 defines it (c/mpi/*/*.c, BENCHMARK; the
# %s after MPI is the build's variant, -CUDA or -ROCM)
TITLES = {
    "osu_alltoall": "All-to-All Personalized Exchange Latency", "osu_alltoallv": "All-to-Allv Personalized Exchange Latency",
    "osu_alltoallw": "All-to-Allw Personalized Exchange Latency", "osu_allgather": "Allgather Latency",
    "osu_allreduce": "Allreduce Latency", "osu_bcast": "Broadcast Latency", "osu_reduce_scatter": "Reduce_scatter Latency",
    "osu_reduce_scatter_block": "Reduce_scatter_block Latency", "osu_scatterv": "Scatterv Latency",
    "osu_ialltoall": "Non-blocking All-to-All Latency", "osu_ibcast": "Non-Blocking Broadcast Latency",
    "osu_ialltoallv": "Non-blocking All-to-Allv Personalized Exchange Latency",
    "osu_ineighbor_allgather": "Non-blocking Neighborhood Allgather Latency",
    "osu_neighbor_alltoallv": "Neighborhood All-to-Allv Latency", "osu_neighbor_alltoall": "Neighborhood Alltoall Latency",
    "osu_alltoall_persistent": "All-to-All Personalized Exchange Persistent Latency",
    "osu_allgather_persistent": "Allgather Persistent Latency", "osu_bibw_persistent": "Bi-Directional Bandwidth Persistent",
    "osu_latency_persistent": "Latency Persistent", "osu_bibw": "Bi-Directional Bandwidth", "osu_bw": "Bandwidth",
    "osu_latency_mt": "Multi-threaded Latency", "osu_mbw_mr": "Multiple Bandwidth / Message Rate",
}


@pytest.mark.parametrize("program", sorted(TITLES))
def test_each_title_names_its_program(program):
    assert bench_name("MPI", TITLES[program]) == program
    assert bench_name("MPI-CUDA", TITLES[program]) == program


@pytest.mark.parametrize("name", ["cscs-osu_alltoall-validation-8ranks-v7.5.txt",
                                  "yoltla-es-osu_alltoall-f-noversion-1node-indent-stripped.txt"])
def test_all_to_all_personalized_exchange_is_osu_alltoall(name):
    (r,) = runs("osu", name)
    assert r.benchmarks() == ["osu_alltoall"] and r.run.status == "complete"


def test_alltoall_values_with_validation_and_library_warnings():
    (r,) = runs("osu", "cscs-osu_alltoall-validation-8ranks-v7.5.txt")
    lat = {m.params["bytes"]: m.value for m in r.measurements}
    assert len(lat) == 21 and lat[1048576] == 519.85 and lat[1] == 12.46
    # the loader's libnl lines name the program ('.../osu_alltoall: ...'): not a command line
    assert r.run.meta["log_command"].startswith("srun -N2 --ntasks-per-node=4")


def test_three_modes_of_latency_and_bandwidth_are_six_runs():
    # three '=== Affinity mode ===' sections of '--- osu_latency (D D) ---' and '--- osu_bw (D D,
    # up to 4 MiB) ---' banners; only the first section prints OSU's titles
    found = runs("osu", MODES)
    assert [r.benchmarks()[0] for r in found] == ["osu_latency", "osu_bw"] * 3
    assert [len(r.measurements) for r in found] == [9, 6] * 3
    assert all(m.params["buffers"] == "D D" for r in found for m in r.measurements)
    assert [r.run.source for r in found] == ["osu 7.5", "osu 7.5", "osu", "osu", "osu", "osu"]
    assert {r.run.status for r in found} == {"complete"}
    lat, bw = found[0], found[1]
    # rows annotated after their value ('8.43   <- UCX protocol switch ...')
    assert {m.params["bytes"]: m.value for m in lat.measurements}[512] == 8.43
    assert {m.params["bytes"]: m.value for m in bw.measurements}[4194304] == pytest.approx(432.60271)
    assert {m.params["bytes"]: m.value for m in found[4].measurements}[4194304] == 79.64
    assert {m.params["bytes"]: m.value for m in found[5].measurements}[4194304] == pytest.approx(53.30789)


def test_bibw_device_buffers_from_its_command_line():
    # 'osu_bibw --validation D D' three lines above the title, libnl warnings between
    (r,) = runs("osu", "cscs-osu_bibw-cuda-DD-validation-v7.5.txt")
    assert r.benchmarks() == ["osu_bibw"] and len(r.measurements) == 23
    assert {m.params["buffers"] for m in r.measurements} == {"D D"}
    assert {m.params["bytes"]: m.value for m in r.measurements}[4194304] == pytest.approx(46.41753)


def test_a_warning_never_changes_the_status():
    text = (DATA / "osu" / "cscs-osu_bibw-cuda-DD-validation-v7.5.txt").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("1024 "))
    lines.insert(at, "libfabric:1234:cxi:core:cxip_ep_enable():1100<warn> connection timed out, retrying\n")
    (r,) = parse_text("".join(lines), name="bibw.txt")
    assert r.run.status == "complete" and any("timed out" in w for w in r.run.meta["warnings"])
    lines[at] = "srun: error: nid001: task 1: Terminated\n"
    (r,) = parse_text("".join(lines), name="bibw.txt")
    assert r.run.status == "incomplete"   # the launcher's own failure is one
