"""nccl-tests / rccl-tests text logs (real ones, tests/data/nccl-tests) -> collective records."""

from pathlib import Path

import pytest

from clusterbench.families.collectives.spec import SPECS
from clusterbench.families.collectives.spec import op_in_text as op_from_filename
from clusterbench.families.collectives.spec import op_name as normalize_op
from clusterbench.ingest import LogFormatError, common, detect_tool, iter_runs, parse_text
from clusterbench.ingest.collectives import Evidence, decide_op, ops_in_name, ranks_from_ratio
from clusterbench.ingest.nccl_tests import nccl_version_from_code, parse_lines

DATA = Path(__file__).parent / "data" / "nccl-tests"
# Logs that must be refused, each with why (tested below)
REFUSED = {"issue294-h100-non-mpi-build-under-mpirun-interleaved-duplicate-rows.txt": "interleaved"}
LOGS = sorted(p for p in DATA.iterdir() if p.name != "README.md" and p.name not in REFUSED)


def one(name: str):
    runs = parse_text((DATA / name).read_text(), name=name)
    assert len(runs) == 1
    return runs[0]


def by(ms, metric, **params):
    return [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]


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


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_logs_say_why(name):
    with pytest.raises(LogFormatError, match=REFUSED[name]):
        parse_text((DATA / name).read_text(), name=name)


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
    text = (DATA / "nccl-issue258-v100-old-error-column-truncated.txt").read_text()
    (r,) = parse_text(text, name="issue258.txt")
    errs = by(r.measurements, "max_error", placement="out")
    assert [m.value for m in errs] == [1e-07, 3e-08, 3e-08, 3e-08, 3e-08]
    assert r.run.meta["op"] == "all_reduce" and r.run.status == "incomplete"
    assert r.run.meta["op_from"] == ["redop", "root", "count"] and r.run.ranks == 4


def footer_logs():
    for path in LOGS:
        for i, r in enumerate(parse_text(path.read_text(), name=path.name)):
            if r.run.status == "complete" and any(m.metric == "avg_busbw" for m in r.measurements):
                yield pytest.param(r, id=f"{path.name}-{i}")


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


def test_concatenated_logs_stream_run_by_run(monkeypatch):
    texts = [(DATA / n).read_text() for n in ("superbench-nccl_allreduce.log", "a3mega-h100-2node-all_reduce.txt",
                                               "superbench-nccl_broadcast.log")]
    lines = "".join(texts).splitlines(keepends=True)
    consumed = 0

    def source():
        nonlocal consumed
        for line in lines:
            consumed += 1
            yield line

    monkeypatch.setattr(common, "CHUNK_LINES", 16)   # a large log is read a block at a time
    it = parse_lines(source(), "cat.log")
    first = next(it)
    assert first.run.meta["op"] == "all_reduce" and first.run.ranks == 8
    assert consumed < len(lines) / 2  # yielded before the rest of the file was read
    rest = list(it)
    assert [r.run.meta["op"] for r in rest] == ["all_reduce", "broadcast"]
    assert [r.run.ranks for r in rest] == [16, 8]


def test_iter_runs_accepts_a_file_object(tmp_path):
    p = tmp_path / "alltoall-twice.log"  # the log does not name its op: the file name does
    p.write_text((DATA / "superbench-nccl_alltoall.log").read_text() * 2)
    with p.open() as f:
        runs = list(iter_runs(f, name=str(p)))
    assert len(runs) == 2 and all(r.run.meta["op"] == "alltoall" for r in runs)


def test_collective_names_and_factors():
    assert normalize_op("all_reduce_perf_mpi") == "all_reduce" and normalize_op("AllReduce") == "all_reduce"
    assert normalize_op("/opt/rccl-tests/build/reduce_scatter_perf") == "reduce_scatter"
    assert normalize_op("bogus") is None
    assert op_from_filename("logs/nccl_reducescatter.log") == "reduce_scatter"
    assert op_from_filename("gather.txt") == "gather" and op_from_filename("x_allgather.txt") == "all_gather"
    assert ranks_from_ratio("all_reduce", 182.30, 353.20) == 32
    assert ranks_from_ratio("all_reduce", 0.5, 0.88) is None  # too imprecise to tell
    assert ranks_from_ratio("broadcast", 10.0, 10.0) is None
    def op(**evidence):
        return decide_op(Evidence(**evidence), [], (), 1)[0]
    assert op(redops=frozenset({"sum"}), roots=frozenset({-1}), ratio=(1.7499, 1.7501)) == "all_reduce"
    assert op(redops=frozenset({"sum"}), roots=frozenset({-1}), ratio=(0.8749, 0.8751)) == "reduce_scatter"
    assert op(redops=frozenset({"none"}), roots=frozenset({0}), split=1, ratio=(0.99, 1.01)) == "broadcast"
    with pytest.raises(LogFormatError, match="fit all_gather, alltoall, alltoallv"):
        op(redops=frozenset({"none"}), roots=frozenset({-1}), split=8, ratio=(0.8749, 0.8751))
    assert ops_in_name("x-allgather-allreduce-2runs.txt") == ("all_gather", "all_reduce")
    assert nccl_version_from_code(22907) == "2.29.7" and nccl_version_from_code(2708) == "2.7.8"


def _records(text, name):
    return [sorted((m.benchmark, m.metric, m.value, tuple(sorted(m.params.items()))) for m in r.measurements)
            for r in parse_text(text, name=name)]


QUIRK_LOGS = ["a3mega-h100-2node-all_reduce.txt", "superbench-nccl_alltoall.log", "superbench-nccl_broadcast.log",
              "seed-tensorwave-mi355x-4node-all_reduce.txt"]


@pytest.mark.parametrize("name", QUIRK_LOGS)
def test_same_records_through_log_viewers_and_launchers(name):
    text = (DATA / name).read_text()
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
    text = (DATA / "issue322-16G-test-nccl-failure-truncated.txt").read_text()
    fail = "HCA-108: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '\n"
    (r,) = parse_text(text + fail * 1000, name="x.log")
    assert len(r.run.errors) == 100 and r.run.meta["errors_dropped"] == 909  # 9 + 1000 - 100
