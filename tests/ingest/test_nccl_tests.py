"""Tests of clusterbench.ingest.nccl_tests."""

import json

import pytest
from import_sources import by_file, by_text
from ingest_helpers import (
    A3MEGA,
    GH200,
    REFUSED,
    SEED,
    _a3mega_row,
    is_row,
    lines_import_nccl,
    nccl_json,
    table_rows,
    with_cycles,
)
from paths import DATA, TESTS
from tool_log_texts import records as records_ingest_common
from tool_log_texts import text_tool_logs, warnings

from clusterbench.errors import ClusterbenchError
from clusterbench.families.collectives.spec import SPECS
from clusterbench.ingest import detect_tool, iter_runs, parse_text
from clusterbench.ingest.common import text_lines
from clusterbench.records import WARNINGS
from clusterbench.store import Store

DATA_import_nccl = TESTS / "data" / "nccl-tests"


LOGS = sorted(p for p in DATA_import_nccl.iterdir() if p.name != "README.md" and p.name not in REFUSED)


def one(name: str):
    runs = parse_text((DATA_import_nccl / name).read_text(), name=name)
    assert len(runs) == 1
    return runs[0]


def by(ms, metric, **params):
    return [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]


def footer_logs():
    for path in LOGS:
        for i, r in enumerate(parse_text(path.read_text(), name=path.name)):
            if r.run.status == "complete" and any(m.metric == "avg_busbw" for m in r.measurements):
                yield pytest.param(r, id=f"{path.name}-{i}")


def _records(text, name):
    return [sorted((m.benchmark, m.metric, m.value, tuple(sorted(m.params.items()))) for m in r.measurements)
            for r in parse_text(text, name=name)]


QUIRK_LOGS = ["a3mega-h100-2node-all_reduce.txt", "superbench-nccl_alltoall.log", "superbench-nccl_broadcast.log",
              "seed-tensorwave-mi355x-4node-all_reduce.txt"]


DATA_import_nccl_faults = TESTS / "data" / "nccl-tests"


def runs_import_nccl_faults(name: str, as_name: str | None = None):
    return parse_text((DATA_import_nccl_faults / name).read_text(), name=as_name or name)


def one_import_nccl_faults(name: str, as_name: str | None = None):
    (r,) = runs_import_nccl_faults(name, as_name)
    return r


def records(imported):
    return sorted((m.benchmark, m.metric, m.value, tuple(sorted(m.params.items()))) for m in imported.measurements)


@pytest.fixture(scope="module")
def text_run():
    return parse_text(SEED.read_text(), name=SEED.name)[0]


def rccltable_rows(text_run):
    for (size, _count), places in table_rows(text_run).items():
        for inplace, p in ((0, places["out"]), (1, places["in"])):
            yield size, inplace, p


MI355X = "seed-tensorwave-mi355x-4node-all_reduce.txt"          # rccl-tests, 32 ranks


def right(widths: tuple[int, ...], values: list[str]) -> str:
    """Values right-aligned in C printf widths ("%12s  %12s ..."), two spaces apart."""
    return "  ".join(v.rjust(w) for w, v in zip(widths, values, strict=True))


LEAD, BLOCK = (12, 12, 8, 6, 6), (7, 6, 6, 6)


def printed(toks: list[str]) -> tuple[str, str, str]:
    """A row's lead, out-of-place and in-place parts in nccl-tests' widths (util.cu)."""
    return right(LEAD, toks[:5]), "  " + right(BLOCK, toks[5:9]), "  " + right(BLOCK, toks[9:13])


def rows_of(name: str) -> list[list[str]]:
    return [ln.split() for ln in lines_import_nccl(name) if is_row(ln)]


def one_import_nccl(text: str, name: str):
    runs = parse_text(text, name=name)
    assert len(runs) == 1
    return runs[0]


def table(ms) -> dict[tuple, dict[str, float]]:
    """{(bytes, placement, cycle): {metric: value}} with every row param checked on the way."""
    out: dict[tuple, dict[str, float]] = {}
    for m in ms:
        if "bytes" not in m.params:
            continue
        key = (m.params["bytes"], m.params["placement"], m.params.get("cycle"))
        out.setdefault(key, {"count": m.params["count"], "dtype": m.params["dtype"],
                             "redop": m.params["redop"], "root": m.params["root"]})[m.metric] = m.value
    return out


def expected(rows: list[list[str]], placements=("out", "in"), cycle=None) -> dict[tuple, dict[str, float]]:
    """The printed table as the records it must give: size, count, type, redop, root, then per
    placement time, algbw, busbw, #wrong."""
    want: dict[tuple, dict[str, float]] = {}
    for toks in rows:
        for i, placement in enumerate(placements):
            time, alg, bus, wrong = toks[5 + 4 * i:9 + 4 * i]
            want[(int(toks[0]), placement, cycle)] = {
                "count": int(toks[1]), "dtype": toks[2], "redop": toks[3], "root": int(toks[4]),
                "time_us": float(time), "algbw": float(alg), "busbw": float(bus), "wrong": float(wrong)}
    return want


def with_timestamps(name: str, at_end: bool) -> str:
    """The log re-printed as nccl-tests -S 1 prints it: "timestamp" after the header's last
    #wrong, the strftime format under it, and each row's time of day (2.17.5-2.18: after the
    out-of-place values; 2.19 on: at the row's end)."""
    out, n = [], 0
    for ln in lines_import_nccl(name):
        if ln.startswith("#") and "#wrong" in ln:
            ln = ln.rstrip() + " " + "timestamp".rjust(19)
        elif ln.startswith("#") and "(elements)" in ln:
            ln = ln.rstrip() + " " + "%Y-%m-%d %H:%M:%S".rjust(19)
        elif is_row(ln):
            lead, oop, ip = printed(ln.split())
            stamp = f"2026-01-23 10:00:{n:02d}".rjust(21)
            n += 1
            ln = lead + oop + ip + stamp if at_end else lead + oop + stamp + ip
        out.append(ln)
    return "\n".join(out) + "\n"


def in_place_only(name: str) -> str:
    """rccl-tests -O 0 (common.cu: the in-place title and one block of columns): the log's rows
    with their in-place values only; the footer is the mean of those busbw, as the tool adds up
    only the tests it ran."""
    out, bus = [], []
    for ln in lines_import_nccl(name):
        if ln.startswith("#") and "#wrong" in ln:
            out.append("# " + right((10, 12, 8, 6, 6), [""] * 5) + "           in-place          ")
            out.append("# " + right((10, 12, 8, 6, 6, 7, 6), ["size", "count", "type", "redop", "root", "time",
                                                           "algbw"]) + "  " + "busbw".rjust(6) + " " + "#wrong".rjust(6))
        elif ln.startswith("#") and "(elements)" in ln:
            out.append("# " + right((10, 12, 8, 6, 6, 7, 6, 6, 5), ["(B)", "(elements)", "", "", "", "(us)",
                                                                  "(GB/s)", "(GB/s)", ""]))
        elif is_row(ln):
            toks = ln.split()
            bus.append(float(toks[11]))
            out.append(right(LEAD, toks[:5]) + "  " + right((7, 6, 6, 5), toks[9:13]))
        elif ln.startswith("# Avg bus bandwidth"):
            out.append(f"# Avg bus bandwidth    : {sum(bus) / len(bus):g} ")
        else:
            out.append(ln)
    return "\n".join(out) + "\n"


def test_parse_text_splits_as_a_file_is_read(tmp_path):
    # the separators inside a row are whitespace to the parsers, as in a file
    data = (DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt").read_bytes()
    text = data.decode().replace("\n", "\x0c\n")
    runs = parse_text(text, name="all_reduce.log")
    assert by_text(text.encode(), "all_reduce.log") == by_file(tmp_path, text.encode(), "all_reduce.log")
    (plain,) = parse_text(data.decode(), name="all_reduce.log")
    assert len(runs) == 1 and runs[0].measurements == plain.measurements
    assert text_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c\r", "d\re"]
    assert text_lines("") == [] and text_lines("a") == ["a"] and text_lines("a\n\n") == ["a", ""]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_log_is_detected_and_parsed(path):
    text = path.read_text()
    assert detect_tool(text) == "nccl-tests"
    runs = parse_text(text, name=path.name)
    assert runs
    for r in runs:
        assert r.run.benchmark == "import"
        assert r.run.status in ("complete", "incomplete", "failed")
        assert len(r) == len(r.measurements) == len(list(r.store_rows()))
        assert len(r.measurements) > 0 or (r.run.status == "failed" and r.run.errors)


def test_seed_rccl_all_reduce_table():
    r = one("seed-mi300x-rccl-all_reduce-8gpu.txt")
    run, ms = r.run, r.measurements
    assert run.source == "rccl-tests develop:ae3e635" and run.status == "complete"
    assert run.ranks == 8 and run.hosts == ["SMC-SC-DC19-06"] and run.devices == ["AMD Instinct MI300X"] * 8
    assert run.meta["rank_bus_id"][1] == "0000:26:00.0"
    assert run.meta["coll_sweep.all_reduce"] == {"nthread": 1, "ngpus": 8, "minbytes": 8, "maxbytes": 8589934592,
                                                 "validation": 1, "graph": 0, "step": 2, "step_kind": "factor",
                                                 "warmup_iters": 5, "iters": 20, "agg_iters": 1}
    assert {m.benchmark for m in ms} == {"all_reduce"}
    assert len(by(ms, "busbw")) == 2 * 31  # 8 B .. 8 GiB, both placements
    # the last row was split over three :mark: roles in the document
    last = by(ms, "busbw", bytes=8589934592, placement="in")[0]
    assert last.value == 315.84
    assert last.params == {"bytes": 8589934592, "count": 2147483648, "dtype": "float", "redop": "sum", "root": -1,
                           "placement": "in", "ranks": 8}
    assert by(ms, "time_us", bytes=128, placement="in")[0].value == 182.4
    assert by(ms, "avg_busbw")[0].value == 102.138 and by(ms, "out_of_bounds")[0].value == 0


def test_headerless_table_names_op_from_footer_and_ranks_from_busbw():
    r = one("seed-tensorwave-mi355x-4node-all_reduce.txt")
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 32
    assert r.run.meta["ranks_from"] == ["busbw factor"]
    assert by(r.measurements, "busbw", bytes=2147483648, placement="out")[0].value == 385.03
    assert by(r.measurements, "avg_busbw")[0].value == 374.161


def test_old_format_error_column_na_and_info_line():
    r = one("superbench-nccl_allreduce.log")
    ms = r.measurements
    assert r.run.ranks == 8 and r.run.status == "complete"
    assert not by(ms, "wrong") and not by(ms, "max_error")  # N/A: validation was off
    assert len(by(ms, "time_us", bytes=0)) == 4  # two size-0 rows
    assert by(ms, "busbw", bytes=8589934592, placement="out")[0].params["root"] == -1


def test_old_format_empty_redop_and_root_without_redop():
    a2a = one("superbench-nccl_alltoall.log")
    assert a2a.run.meta["op"] == "alltoall"
    assert {m.params["redop"] for m in a2a.measurements if "redop" in m.params} == {"none"}
    assert by(a2a.measurements, "algbw", bytes=8589934592, placement="in")[0].value == 258.47
    bc = one("superbench-nccl_broadcast.log")
    assert {m.params["root"] for m in bc.measurements if "root" in m.params} == {0}
    assert {m.params["redop"] for m in bc.measurements if "redop" in m.params} == {"none"}


def test_two_hosts_and_markdown_around_the_log():
    r = one("a3mega-h100-2node-all_reduce.txt")
    assert r.run.ranks == 16 and r.run.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert r.run.meta["rank_hosts"][8] == "ztan-mig-gq73"
    assert by(r.measurements, "avg_busbw")[0].value == 70.742


def test_crash_keeps_rows_and_errors_and_fails_the_run():
    r = one("issue280-4090-test-nccl-failure-truncated.txt")
    assert r.run.status == "failed" and r.run.meta["partial_last_row"]
    assert r.run.meta["op"] == "all_reduce"  # from the quoted command line
    assert any("Test NCCL failure common.cu:1005" in e for e in r.run.errors)
    assert sorted({m.params["bytes"] for m in r.measurements}) == [8, 16, 32]  # rows without leading spaces
    r = one("issue322-16G-test-nccl-failure-truncated.txt")
    assert r.run.status == "failed" and sum("Test NCCL failure" in e for e in r.run.errors) == 5
    assert by(r.measurements, "busbw", bytes=17179869184, placement="in")[0].value == 367.44


def test_exponent_error_column_of_a_table_its_columns_name():
    # algbw 0.00 everywhere and no command line, but the columns say it: a redop (all_reduce,
    # reduce_scatter or reduce), no root column (old nccl-tests printed one for reduce), and
    # count = size/4 on 4 listed ranks (reduce_scatter's count is size/(4 x 4))
    text = (DATA_import_nccl / "nccl-issue258-v100-old-error-column-truncated.txt").read_text()
    (r,) = parse_text(text, name="issue258.txt")
    errs = by(r.measurements, "max_error", placement="out")
    assert [m.value for m in errs] == [1e-07, 3e-08, 3e-08, 3e-08, 3e-08]
    assert r.run.meta["op"] == "all_reduce" and r.run.status == "incomplete"
    assert r.run.meta["op_from"] == ["redop", "root", "count"] and r.run.ranks == 4


@pytest.mark.parametrize("imported", list(footer_logs()))
def test_property_mean_busbw_is_footer_average(imported):
    # nccl-tests adds busbw of every test it times (out-of-place and in-place of each row) and
    # divides by their count; each busbw was printed with 2 decimals (+-0.005), the average with %g.
    ms = imported.measurements
    bus = [m.value for m in ms if m.metric == "busbw"]
    avg = by(ms, "avg_busbw")[0].value
    assert abs(sum(bus) / len(bus) - avg) <= 0.005 + 1e-5 * avg


@pytest.mark.parametrize("imported", list(footer_logs()))
def test_property_busbw_over_algbw_is_the_op_factor(imported):
    run, ms = imported.run, imported.measurements
    op, n = run.meta["op"], run.ranks
    if not n:
        pytest.skip("the log does not say how many ranks (a truncated rank list)")
    if n == 1 or "algbw_not_stored" in run.meta:
        pytest.skip("one rank (busbw 0) or an old all_gather/reduce_scatter algbw (tested below)")
    factor = SPECS[op].busbw_factor(n)
    checked = 0
    for m in by(ms, "algbw"):
        bus = by(ms, "busbw", bytes=m.params["bytes"], placement=m.params["placement"])[0].value
        # Below 1 GB/s, rounding to 2 decimals moves the ratio by more than 0.5% (0.00 at the
        # smallest sizes): those rows say nothing about the factor and are skipped.
        if m.value < 1.0:
            continue
        tolerance = factor * (0.005 / m.value + 0.005 / bus)
        assert abs(bus / m.value - factor) <= tolerance + 1e-12, (m.params, bus, m.value)
        checked += 1
    if not checked and all(m.value < 1.0 for m in by(ms, "algbw")):
        pytest.skip("every algbw below 1 GB/s: two decimals say nothing about the factor")
    assert checked >= 5


def test_iter_runs_accepts_a_file_object(tmp_path):
    p = tmp_path / "alltoall-twice.log"  # the log does not name its op: the file name does
    p.write_text((DATA_import_nccl / "superbench-nccl_alltoall.log").read_text() * 2)
    with p.open() as f:
        runs = list(iter_runs(f, name=str(p)))
    assert len(runs) == 2 and all(r.run.meta["op"] == "alltoall" for r in runs)


@pytest.mark.parametrize("name", QUIRK_LOGS)
def test_same_records_through_log_viewers_and_launchers(name):
    text = (DATA_import_nccl / name).read_text()
    want = _records(text, name)
    lines = text.splitlines(keepends=True)
    # a log viewer that strips the leading '#' of every line
    assert _records("".join(ln.lstrip("#") for ln in lines), name) == want
    # mpirun --tag-output
    assert _records("".join(f"[1,0]<stdout>:{ln}" for ln in lines), name) == want
    # NCCL_DEBUG=INFO output interleaved everywhere (this line is from superbench-nccl_allreduce.log)
    info = "hostname:3442:3442 [0] NCCL INFO Launch mode Parallel\n"
    assert _records("".join(info + ln for ln in lines), name) == want
    # Windows line ends and a missing final newline
    assert _records(text.replace("\n", "\r\n").rstrip(), name) == want


def test_repeated_failure_lines_are_capped():
    text = (DATA_import_nccl / "issue322-16G-test-nccl-failure-truncated.txt").read_text()
    fail = "HCA-108: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '\n"
    (r,) = parse_text(text + fail * 1000, name="x.log")
    assert len(r.run.errors) == 100 and r.run.meta["errors_dropped"] == 909  # 9 + 1000 - 100


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
    r = one_import_nccl_faults(name)
    assert r.run.status == "failed"
    assert any(message in e for e in r.run.errors), r.run.errors
    assert r.measurements == []   # the test died before its first row


def test_a_row_cut_by_a_failure_keeps_the_message_not_a_value():
    r = one_import_nccl_faults("issue355-v2.17.6-h800-test-cuda-failure-mid-row.txt")
    assert r.run.meta["partial_last_row"] and r.run.meta["op"] == "alltoall" and r.run.ranks == 16
    assert r.run.versions == {"nccl": "2.28.7", "nccl-tests": "2.17.6"}   # from nccl-library=22807


def test_a_timestamp_prefix_is_stripped_from_the_warning():
    r = one_import_nccl_faults("dgx-spark-timestamped-ncclwarn-multiline-then-test-nccl-failure.txt")
    assert r.run.errors[0].startswith("gx10-9c8c:22890:22900 [0] transport/net_ib.cc:2470 NCCL WARN NET/IB:")


def test_failure_lines_after_the_footer_stay_with_their_run():
    (r,) = runs_import_nccl_faults("issue369-v2.17.8-gh200-wrong-nonzero-oob-failed.txt")
    assert r.run.status == "failed"
    assert r.run.errors == [".. gpu-1-1 pid 662195: Test failure common.cu:1189",
                            ".. gpu-1-7 pid 2448661: Test failure common.cu:1189",
                            "# Out of bounds values : 4 FAILED"]
    assert [m.value for m in by(r.measurements, "wrong", bytes=1048576)] == [96, 32]
    assert by(r.measurements, "out_of_bounds")[0].value == 4


def test_out_of_bounds_failed_with_exponent_wrong_counts():
    r = one_import_nccl_faults("rtx3090-2node-inc-wrong-exponent-oob-108-failed.txt")
    assert r.run.status == "failed" and r.run.ranks == 2
    assert r.run.errors == ["# Out of bounds values : 108 FAILED"]   # why it failed, where errors are read
    assert by(r.measurements, "wrong", bytes=536870912, placement="out")[0].value == 2.68435e+08


# -- rows missing --------------------------------------------------------------------------
def test_rows_elided_from_a_sweep_make_it_incomplete_even_with_a_footer():
    r = one_import_nccl_faults("coreweave-kubectl-logs-minbytes4-rows-elided-start-512M.txt")
    assert r.run.status == "incomplete" and by(r.measurements, "avg_busbw")[0].value == 373.187
    assert r.run.meta["rows_missing"] == [
        "the header promises 30 sizes 4..2147483648 per table; the float sum table shows 5 (536870912..8589934592)"]
    assert r.run.meta["rows_missing"][0] in r.run.meta["warnings"]


def test_a_footer_average_far_from_the_rows_shown_makes_it_incomplete():
    r = one_import_nccl_faults("dgx-spark-alltoall-elided-collapsed-whitespace-doc-excerpt.txt")
    assert r.run.status == "incomplete" and r.run.meta["op"] == "alltoall"
    assert any("footer's average busbw 6.72901 GB/s is not the mean 17.365 GB/s of the 2 busbw values"
               in w for w in r.run.meta["rows_missing"])
    assert by(r.measurements, "busbw", placement="in")[0].value == 17.52   # the row shown is kept


@pytest.mark.parametrize("name", ["gke-kubectl-exec-run_nccl_tests-allgather-op-only-in-command.txt",
                                  "pkb-2019-v100-2node-old-error-column-nccl-2.4.6.txt",
                                  "issue294-h100-2node-16rank-rows-only-no-header.txt",
                                  "mpirun-tag-output-v2.18.0-rtx5090-stderr-lines-perf_mpi-binary.txt"])
def test_whole_sweeps_stay_complete(name):
    r = one_import_nccl_faults(name)
    assert r.run.status == "complete" and "rows_missing" not in r.run.meta and not r.run.meta.get("warnings")


def test_gather_sizes_rounded_to_the_rank_count_are_the_promised_sweep():
    # 12 ranks: 8, 16, 32 B print as 0, 64 as 48 ...; -e 10240M ends at 8 GiB
    all_gather, all_reduce, broadcast, reduce, reduce_scatter = runs_import_nccl_faults(
        "wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt")
    assert "rows_missing" not in reduce_scatter.run.meta and reduce_scatter.run.status == "complete"
    assert sorted({m.params["bytes"] for m in reduce_scatter.measurements if "bytes" in m.params})[:5] == \
        [0, 48, 96, 240, 480]


# -- rank counts -----------------------------------------------------------------------------
def test_a_rank_list_cut_to_its_last_line_does_not_count_ranks():
    r = one_import_nccl_faults("coreweave-gb200-20racks-1440ranks-rank-list-truncated-to-last.txt")
    # busbw/algbw = 2(n-1)/n is 1.9986 for 1440 ranks: two decimals allow 1440 to 1472 ranks
    # (the list's last line bounds it from below): not proven, so null, never 0
    assert r.run.ranks is None and r.run.meta["ranks_at_least"] == 1440
    assert r.run.meta["ranks_at_most"] == 1472
    assert {m.params["ranks"] for m in r.measurements} == {None}
    assert any("number of ranks is unknown" in w for w in r.run.meta["warnings"])
    r = one_import_nccl_faults("coreweave-gb200-nvl72-72ranks-rank-list-truncated-to-last.txt")
    assert r.run.ranks == 72 and r.run.meta["ranks_from"] == ["busbw factor"]


def test_ranks_come_from_busbw_over_algbw_not_from_a_shortened_rank_list():
    text = (DATA_import_nccl_faults / "a3mega-h100-2node-all_reduce.txt").read_text()
    shortened = "".join(ln for ln in text.splitlines(keepends=True)
                        if not any(f"Rank {i:2d} " in ln for i in range(8, 16)))   # a wrapper kept ranks 0-7
    (r,) = parse_text(shortened, name="a3mega.txt")
    assert r.run.ranks == 16
    assert r.run.meta["warnings"] == ["the log lists 8 ranks but busbw/algbw says 16: stored as 16"]


def test_nccl_info_nranks_and_busbw_agree_without_a_header():
    r = one_import_nccl_faults("issue294-h100-2node-16rank-rows-only-no-header.txt")
    assert r.run.ranks == 16 and r.run.meta["op"] == "all_reduce"


def test_one_gpu_busbw_zero_is_one_rank():
    r = one_import_nccl_faults("issue287-5090-1gpu-busbw-zero-overflowing-algbw.txt")
    assert r.run.ranks == 1 and r.run.status == "complete"
    assert by(r.measurements, "algbw", bytes=134217728, placement="in")[0].value == 1777718.25


# -- launcher prefixes -----------------------------------------------------------------------
def test_srun_label_padded_to_the_task_width():
    r = one_import_nccl_faults("issue290-srun-label-space-padded-h100-2node-validation0.txt")
    assert r.run.status == "complete" and r.run.ranks == 16 and r.run.hosts == ["node005", "node007"]
    assert not by(r.measurements, "wrong")   # validation: 0 prints N/A
    assert by(r.measurements, "busbw", bytes=8589934592, placement="out")[0].value == 155.57


def test_skypilot_prefix_before_an_mpi_tag():
    r = one_import_nccl_faults("skypilot-head-prefix-plus-tag-output-h200-16rank-allgather-unnamed.txt")
    assert r.run.meta["op"] == "all_gather"   # only the file name says so
    assert r.run.ranks == 16 and r.run.hosts == ["nc-d87e1263-head", "nc-d87e1263-worker1"]
    assert len(by(r.measurements, "busbw")) == 48


def test_mpi_binary_and_stderr_tags():
    r = one_import_nccl_faults("mpirun-tag-output-v2.18.0-rtx5090-stderr-lines-perf_mpi-binary.txt")
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
    plain = one_import_nccl_faults(name)
    lines = (DATA_import_nccl_faults / name).read_text().splitlines(keepends=True)
    (wrapped,) = parse_text("".join(wrap(i, ln) for i, ln in enumerate(lines)), name=name)
    assert records(wrapped) == records(plain)
    assert (wrapped.run.status, wrapped.run.ranks, wrapped.run.hosts) == (plain.run.status, plain.run.ranks,
                                                                           plain.run.hosts)


# -- which collective ------------------------------------------------------------------------
def test_op_from_a_wrapper_script_command_line():
    r = one_import_nccl_faults("gke-kubectl-exec-run_nccl_tests-allgather-op-only-in-command.txt", as_name="gke.txt")
    assert r.run.meta["op"] == "all_gather" and {m.benchmark for m in r.measurements} == {"all_gather"}


def test_running_lines_name_each_run_of_a_file():
    found = runs_import_nccl_faults("wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt", as_name="dgx2.txt")
    assert [r.run.meta["op"] for r in found] == ["all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"]
    assert [r.run.status for r in found] == ["failed", "complete", "complete", "complete", "complete"]
    assert all(r.run.ranks == 12 for r in found)


def test_old_all_gather_algbw_column_is_not_stored_as_algbw():
    all_gather, *_, reduce_scatter = runs_import_nccl_faults("wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt")
    for r in (all_gather, reduce_scatter):
        assert not by(r.measurements, "algbw") and by(r.measurements, "busbw")
        assert "printed busbw in its algbw column" in r.run.meta["algbw_not_stored"]
    # the old error column is the largest error, not a count of wrong elements
    assert by(all_gather.measurements, "max_error", bytes=8589934560, placement="out")[0].value == 1.0


def test_nccl_json_equals_text(text_run):
    doc = nccl_json(text_run)
    json.loads(doc)  # the writer's output is valid JSON
    assert detect_tool(doc) == "nccl-tests"
    r = parse_text(doc, name="out.json")[0]
    assert r.run.status == "complete" and r.run.ranks == 8 and r.run.versions["nccl"] == "2.20.5"
    assert r.run.hosts == ["SMC-SC-DC19-06"] and r.run.meta["op"] == "all_reduce"
    key = lambda m: (m.metric, m.params.get("bytes"), m.params.get("placement"))  # noqa: E731
    got = {key(m): (m.value, m.params) for m in r.measurements}
    want = {key(m): (m.value, m.params) for m in text_run.measurements}
    assert got == want


def test_rccl_csv_equals_text(text_run):
    lines = ["numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong"]
    for size, inplace, p in rccltable_rows(text_run):
        lines.append(f"0,AllReduce,1,8,8,1,{size},float,sum,{inplace},{p['time_us']},{p['algbw']},{p['busbw']},0")
    csv = "\n".join(lines) + "\n"
    assert detect_tool(csv) == "nccl-tests"
    r = parse_text(csv, name="rccl.csv")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8 and r.run.source == "rccl-tests"
    got = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                 for m in r.measurements)
    want = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                  for m in text_run.measurements
                  if m.metric in ("time_us", "algbw", "busbw", "wrong"))
    assert got == want


@pytest.mark.parametrize("brackets", [True, False], ids=["array", "object-lines"])
def test_rccl_json_quoted_as_the_current_reporter_writes_it(text_run, brackets):
    # rocm-systems projects/rccl-tests src/common.cu: makeValueKeyPair quotes std::string values,
    # std::to_string prints 6 decimals; an MPI build adds nodes/ranks/ranksPerNode/gpusPerRank
    objs = [f'{{"numCycle":0, "name":"AllReduce", "nodes":1, "ranks":8, "ranksPerNode":8, "gpusPerRank":1, '
            f'"size":{size}, "type":"float", "redop":"sum", "inPlace":{inplace}, "time":{p["time_us"]:.6f}, '
            f'"algBw":{p["algbw"]:.6f}, "busBw":{p["busbw"]:.6f}, "wrong":"0"}}'
            for size, inplace, p in rccltable_rows(text_run)]
    doc = ("[\n" + ",\n".join(objs) + "\n]\n") if brackets else "\n".join(objs) + "\n"
    if brackets:
        json.loads(doc)   # the current writer's output is valid JSON
    assert detect_tool(doc) == "nccl-tests"
    r = parse_text(doc, name="rccl.json")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8 and r.run.meta["nodes"] == 1
    got = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                 for m in r.measurements)
    want = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                  for m in text_run.measurements if m.metric in ("time_us", "algbw", "busbw", "wrong"))
    assert got == want


@pytest.mark.parametrize("at_end", [False, True], ids=["v2.17.5-2.18-mid-row", "v2.19-row-end"])
def test_timestamped_rows_read_value_for_value(at_end):
    # Before the fix every such row had two tokens too many: all 25 rows were dropped without a
    # word and the run stored as complete with only its footer.
    text = with_timestamps(GH200, at_end)
    assert text.count("2026-01-23") == 25
    r = one_import_nccl(text, "gh200-timestamps.log")
    assert table(r.measurements) == expected(rows_of(GH200))
    assert r.run.meta["columns_not_stored"] == ["timestamp"]
    assert r.run.status == "failed"   # the log's own "Out of bounds values : 4 FAILED"
    bad = table(r.measurements)[(1048576, "out", None)]
    assert (bad["wrong"], bad["busbw"], bad["time_us"]) == (96.0, 2.20, 477.32)
    assert table(r.measurements)[(1048576, "in", None)]["wrong"] == 32.0
    assert r.run.ranks == 2 and r.run.meta["op"] == "all_reduce"
    assert "rows_missing" not in r.run.meta   # the footer's 4.79995 is still the rows' mean


def test_timestamps_read_the_same_through_a_launcher_prefix():
    text = with_timestamps(GH200, at_end=True)
    tagged = "".join(f"[1,0]<stdout>:{ln}\n" for ln in text.splitlines())
    want = table(one_import_nccl(text, "a.log").measurements)
    assert table(one_import_nccl(tagged, "a.log").measurements) == want


def test_repeated_sweep_is_read_as_cycles_not_refused_as_interleaved():
    # Before the fix: "sizes repeat out of order ... several runs interleaved", nothing stored.
    r = one_import_nccl(with_cycles(GH200, 3), "gh200-N3.log")
    rows = rows_of(GH200)
    want = {**expected(rows, cycle=0), **expected(rows, cycle=1), **expected(rows, cycle=2)}
    assert table(r.measurements) == want
    assert r.run.meta["cycles"] == 3 and "rows_missing" not in r.run.meta
    assert r.run.status == "failed"


def test_in_place_only_table_is_stored_as_in_place():
    # Before the fix its one block of values was stored as placement "out".
    r = one_import_nccl(in_place_only(MI355X), "mi355x-O0.log")
    rows = [t[:5] + t[9:13] for t in rows_of(MI355X)]
    assert table(r.measurements) == expected(rows, placements=("in",))
    assert r.run.status == "complete" and r.run.ranks == 32
    assert table(r.measurements)[(8589934592, "in", None)]["busbw"] == 370.42


def test_in_place_title_applies_to_its_own_table_only():
    # the next run's ordinary two-block table is read as out-of-place and in-place again
    text = in_place_only(MI355X) + (DATA_import_nccl / MI355X).read_text()
    runs = parse_text(text, name="all_reduce.log")
    assert [sorted({k[1] for k in table(r.measurements)}) for r in runs] == [["in"], ["in", "out"]]


@pytest.mark.parametrize("new", ["    inf     inf      0", "    nan     nan      0", "   -inf     inf      0"])
def test_nccl_non_finite_busbw_is_not_a_missing_row(tmp_path, new):
    (got,) = parse_text(_a3mega_row(tmp_path, new).read_text())
    (want,) = parse_text(A3MEGA.read_text())
    assert got.run.status == want.run.status == "complete"
    assert "rows_missing" not in got.run.meta and not got.run.meta.get("warnings")
    assert got.run.ranks == want.run.ranks
    row = [(m.metric, m.params["placement"]) for m in got.measurements if m.params.get("bytes") == 1048576]
    assert ("busbw", "out") not in row and ("busbw", "in") in row


def test_nccl_missing_rows_are_still_found_next_to_an_infinite_busbw(tmp_path):
    """With a value that is not a number, the footer could be any mean from the numbers' own up:
    rows of small sizes cut from the start still leave it below that (the header line, which would
    tell by itself, is cut too)."""
    text = _a3mega_row(tmp_path, "    inf     inf      0").read_text()
    cut = "\n".join(ln for ln in text.splitlines()
                    if ln.split()[:1] not in (["8"], ["16"], ["32"]) and not ln.startswith("# nThread"))
    (got,) = parse_text(cut)
    assert got.run.status == "incomplete"
    (warning,) = got.run.meta["warnings"]
    assert warning.startswith("the footer's average busbw 70.742 GB/s is below the mean 78.148")
    assert warning.endswith(" GB/s of the 56 busbw values shown, counting the 1 that are not numbers as 0: "
                            "rows are missing")


def test_nccl_tests_row_below_zero_keeps_the_row_s_other_values():
    log = text_tool_logs("nccl-tests", "a3mega-h100-2node-all_reduce.txt")
    row = next(ln for ln in log.split("\n") if ln.split()[:1] == ["1048576"])
    toks = row.split()
    toks[5], toks[7] = "-1500000.00", "-0.0015"   # out-of-place time and busbw
    (plain,) = parse_text(log)
    (run,) = parse_text(log.replace(row, "  ".join(toks)))
    dropped = [r for r in records_ingest_common([plain]) if r[3].get("bytes") == 1048576 and r[3].get("placement") == "out"
               and r[1] in ("time_us", "busbw")]
    assert len(dropped) == 2
    assert records_ingest_common([run]) == [r for r in records_ingest_common([plain]) if r not in dropped]
    assert len(run) == len(plain) - 2   # the stored pack's count
    assert [w for w in warnings(run) if "below zero" in w] == [
        "all_reduce time_us -1.5e+06 us not stored: a time or rate below zero is no measurement",
        "all_reduce busbw -0.0015 GB/s not stored: a time or rate below zero is no measurement"]


def test_nccl_tests_root_of_minus_one_and_small_errors_are_no_negative_figure():
    # every row's root is -1 and old logs print errors such as 1e-07: nothing may be dropped
    (run,) = parse_text(text_tool_logs("nccl-tests", "a3mega-h100-2node-all_reduce.txt"))
    assert not [w for w in warnings(run) if "below zero" in w]
    assert {m.params["root"] for m in run.measurements if "root" in m.params} == {-1}


@pytest.mark.parametrize("cut", [1, 2])
@pytest.mark.parametrize("where", ["middle", "last"])
def test_an_nccl_row_missing_its_last_columns_is_not_read_right_aligned(cut, where):
    """A row cut short by its last values reads, right-aligned, as another shape (its root as a
    time, its time as algbw): it is not read, and the run says so."""
    path = TESTS / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
    lines = path.read_text().split("\n")
    rows = [i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()]
    k = rows[20] if where == "middle" else rows[-1]
    toks = lines[k].split()
    lines[k] = " ".join(toks[:-cut])
    if where == "last":
        lines = lines[:k + 1]
    (r,) = parse_text("\n".join(lines), name="x")
    assert not [m for m in r.measurements if m.params.get("bytes") == int(toks[0])]
    assert r.run.status == "incomplete"
    assert any("columns are not the table's" in w and toks[0] in w for w in r.run.meta["warnings"])


ROW_8M = "     8388608       2097152     float     sum      -1    571.9   14.67   27.50"


@pytest.mark.parametrize("cell", ["4x4.41", "44.41.7", "14.6\ufffd", ".", "1e+x"])
def test_a_cell_that_is_no_number_is_counted_truly_and_the_run_not_complete(db, cell):
    # 4x4.41, 44.41.7 or bytes that were not UTF-8 (read as U+FFFD) in one cell: the value was
    # left out of the store while the run stayed complete and its count said 250 (248 stored)
    text = A3MEGA.read_text()
    assert ROW_8M in text
    (clean,) = parse_text(text, "nccl-tests", "a.txt")
    (run,) = parse_text(text.replace(ROW_8M, ROW_8M.replace("14.67", cell)), "nccl-tests", "a.txt")
    assert len(run) == len(clean) - 1 == len(list(run.measurements))
    assert run.run.status == "incomplete" and clean.run.status == "complete"
    assert run.run.meta["values_not_read"] == 1
    (warning,) = [w for w in run.run.meta[WARNINGS] if "no number" in w]
    assert warning.startswith(f"a value that is no number, not stored: {cell!r} in the row '8388608")
    with Store.open(db) as s:   # what the import said is what the store holds
        rid = s.save_run_rows(run.run, run.store_rows())
        assert s.measurement_counts([rid])[rid] == len(run) == len(s.measurements(rid))


def test_clean_tables_are_counted_without_reading_each_cell(monkeypatch):
    # the fast count (no cell read) is exact on every real log: it agrees with reading each cell
    from clusterbench.ingest import nccl_rows

    def counts() -> dict[str, list[int]]:
        found = {}
        for p in sorted((TESTS / "data" / "nccl-tests").glob("*")):
            try:
                found[p.name] = [len(r) for r in parse_text(p.read_text(errors="replace"), "nccl-tests", p.name)]
            except ClusterbenchError:   # the logs that are refused as a whole
                continue
        return found

    fast = counts()
    monkeypatch.setattr(nccl_rows, "_only_numbers", lambda *a: False)
    slow = counts()
    assert fast == slow and len(fast) > 20


# -- a library's warnings ----------------------------------------------------------------------
LIBRARY_WARNINGS = ["node1:4242:4242 [0] init.cc:100 NCCL WARN NET/Plugin: Could not find: libnccl-net.so",
                    "[1719127610.064172] [worker3:2670 :0]     ucp_context.c:1176 UCX  WARN  network device "
                    "'mlx5_0:1' is not available"]


def test_warnings_before_a_header_are_no_run_of_their_own():
    text = (DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt").read_text()
    (plain,) = parse_text(text, name="a.txt")
    (r,) = parse_text("\n".join(LIBRARY_WARNINGS) + "\n" + text, name="a.txt")
    assert r.run.status == plain.run.status == "complete"
    assert r.run.errors == [LIBRARY_WARNINGS[0]]   # kept with the run that follows, for the reader
    assert [m.value for m in r.measurements] == [m.value for m in plain.measurements]
    assert r.run.meta["op_from"] == plain.run.meta["op_from"]


def test_warnings_alone_are_no_results():
    with pytest.raises(ClusterbenchError, match="no nccl-tests results found"):
        parse_text("\n".join(LIBRARY_WARNINGS) + "\n", tool="nccl-tests", name="w.txt")
