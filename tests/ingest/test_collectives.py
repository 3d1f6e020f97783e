"""Tests of clusterbench.ingest.collectives: the op and the rank count of an nccl-tests/rccl-tests
table, read from its evidence, on real logs (tests/data/nccl-tests, sources in its README)."""

from pathlib import Path

import pytest

from clusterbench.families.collectives.spec import op_in_text as op_from_filename
from clusterbench.families.collectives.spec import op_name as normalize_op
from clusterbench.ingest import LogFormatError, parse_text
from clusterbench.ingest.collectives import (
    RANKS_LIMIT,
    Evidence,
    decide_op,
    half_unit,
    ops_in_name,
    rank_count,
    ranks_fitting,
    ranks_from_ratio,
    ratio_interval,
)
from clusterbench.ingest.nccl_tests import nccl_version_from_code

DATA = Path(__file__).parent.parent / "data" / "nccl-tests"
TWO_RUNS = "rccl-issue1490-mi250x-32rank-srun-label-allgather-allreduce-2runs.txt"
GB300 = "oci-gb300-128rank-allreduce-ranks-elided-truncated-sizes.txt"


def runs(name: str, as_name: str | None = None):
    return parse_text((DATA / name).read_text(), name=as_name or name)


def value(r, metric, **params):
    (m,) = [m for m in r.measurements if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    return m.value


def test_two_unnamed_tables_each_read_as_its_own_op():
    # srun --label ' 0: ' on every line, no op name: an all_gather table (redop none, count =
    # size/(4 x 32), busbw/algbw 31/32) and an all_reduce table (sum, size/4, 62/32)
    gather, reduce = runs(TWO_RUNS)
    assert gather.benchmarks() == ["all_gather"] and reduce.benchmarks() == ["all_reduce"]
    assert gather.run.ranks == reduce.run.ranks == 32
    assert gather.run.meta["op_from"] == ["file name", "redop", "root", "count", "busbw factor"]
    assert reduce.run.meta["op_from"] == ["file name", "redop", "root", "count", "busbw factor"]
    assert gather.run.meta["ranks_from"] == ["count", "busbw factor"]
    assert value(gather, "busbw", bytes=4294967296, placement="in") == 92.74
    assert value(gather, "avg_busbw") == 37.9868 and value(reduce, "avg_busbw") == 43.7269
    assert value(reduce, "busbw", bytes=4294967296, placement="in") == 92.88
    assert value(gather, "busbw", bytes=65536, placement="out", count=512, ranks=32) == 0.59
    assert [r.run.status for r in (gather, reduce)] == ["complete", "complete"]
    assert {len(r.measurements) for r in (gather, reduce)} == {17 * 8 + 2}


def test_an_op_is_never_carried_from_another_run_of_the_file():
    # the file name naming one op does not make both tables that op: the all_gather table's
    # columns do not fit all_reduce, so the file is refused naming that run
    with pytest.raises(LogFormatError, match=r"^run 1: the file name says all_reduce, but the table's columns "
                                             r"do not fit it \(all_reduce: redop none"):
        runs(TWO_RUNS, as_name="all_reduce.log")
    # nothing names the first table and, with no version line, its columns fit all_gather and
    # alltoall alike (alltoall printed a checked in-place #wrong before nccl-tests 2.13.1)
    with pytest.raises(LogFormatError, match="run 1: .*fit all_gather, alltoall, alltoallv"):
        runs(TWO_RUNS, as_name="mi250x.log")


def test_a_printed_name_the_table_contradicts_is_refused_naming_run_and_lines():
    text = (DATA / TWO_RUNS).read_text()
    text = text.replace(" 0: #       size", " 0: # Collective test starting: all_gather_perf\n 0: #       size", 2)
    text = text.replace("# Collective test starting: all_gather_perf", "# Collective test starting: all_reduce_perf", 1)
    with pytest.raises(LogFormatError) as e:
        parse_text(text, name="x.log")
    msg = str(e.value)
    assert msg.startswith("run 1: the log names its op all_reduce ('# Collective test starting: all_reduce_perf'), "
                          "but its table's redop none ('4294967296 33554432 float none -1 44904")
    assert "\n" not in msg
    # the second table's printed name (all_gather) disagrees with its columns too
    text = (DATA / TWO_RUNS).read_text().replace(" 0: #       size", " 0: # Collective test starting: all_gather_perf\n"
                                                 " 0: #       size", 3)
    with pytest.raises(LogFormatError, match="^run 2: the log names its op all_gather .* redop sum"):
        parse_text(text, name="x.log")


def test_elided_rank_lines_and_busbw_prove_128_ranks():
    (r,) = runs(GB300)
    # ranks 0, 1, 126, 127 listed ('...' between): at least 128; 738.39/372.10 and 739.99/372.91,
    # each +-0.005, allow 2(n-1)/n only for n = 128
    assert r.run.ranks == 128 and r.run.meta["ranks_from"] == ["busbw factor"]
    assert r.run.meta["rank_numbers"] == [0, 1, 126, 127]
    assert {m.params["ranks"] for m in r.measurements} == {128}
    assert value(r, "busbw", bytes=17179869184, placement="in") == 739.99
    assert value(r, "avg_busbw") == 300.755
    assert r.run.status == "incomplete"   # '# Truncated smaller message sizes': 2 of 16 sizes shown
    assert r.run.meta["op_from"][0] == "printed name"


def test_a_rank_count_nothing_proves_is_null_with_its_bounds():
    (r,) = runs("coreweave-gb200-20racks-1440ranks-rank-list-truncated-to-last.txt")
    assert r.run.ranks is None and (r.run.meta["ranks_at_least"], r.run.meta["ranks_at_most"]) == (1440, 1472)
    assert {m.params["ranks"] for m in r.measurements} == {None}
    assert any("ranks is unknown" in w and "stored as null" in w for w in r.run.meta["warnings"])
    assert r.run.status == "complete"   # a doubt about a param, not a figure: the status stays


def test_rccl_tests_json_lines_output():
    # rccl-tests PR 93 (--output_format json): one object per line, no numCycle, 'gpus'
    (r,) = runs("rccl-tests-pr93-output-json-lines-excerpt.json")
    assert r.run.source == "rccl-tests" and r.benchmarks() == ["all_reduce"] and r.run.ranks == 4
    assert r.run.meta["op_from"] == ["printed name", "redop", "busbw factor"]
    assert r.run.meta["ranks_from"] == ["busbw factor", "gpus"]
    assert value(r, "busbw", bytes=4096, placement="out") == 0.30779018768488575
    assert value(r, "time_us", bytes=1024, placement="in") == 19.897650000000002
    assert value(r, "wrong", bytes=2048, placement="in") == 0
    assert value(r, "algbw", bytes=1024, placement="out", count=256, dtype="float", redop="sum") == \
        0.05337739748698796
    assert len(r.measurements) == 5 * 4
    # the excerpt shows 5 of the lines: 4096 B out-of-place without its in-place line
    assert r.run.status == "incomplete"


def test_rccl_tests_json_lines_of_two_invocations_are_two_runs():
    text = (DATA / "rccl-tests-pr93-output-json-lines-excerpt.json").read_text()
    lines = text.splitlines()[:4]
    gather = [ln.replace('"AllReduce"', '"AllGather"').replace('"sum"', '"none"')
              .replace("0.08006609623048194", "0.04003304811524097") for ln in lines[:2]]
    found = parse_text("\n".join(lines + gather) + "\n", name="x.json")
    assert [r.benchmarks() for r in found] == [["all_reduce"], ["all_gather"]]
    assert found[1].run.ranks == 4


@pytest.mark.parametrize("token,half", [("0.61", 0.005), ("70248", 0.5), ("1.2e+03", 50.0), ("1e-07", 5e-08),
                                        ("15.5", 0.05)])
def test_half_unit_of_a_printed_value(token, half):
    assert half_unit(token) == pytest.approx(half)


def test_rank_counts_a_factor_interval_allows():
    assert ranks_fitting("all_reduce", 1.9375 - 1e-6, 1.9375 + 1e-6) == (32, 32)
    assert ranks_fitting("all_gather", 0.5, 0.5) == (2, 2)
    assert ranks_fitting("broadcast", 0.99, 1.01) == (1, RANKS_LIMIT)
    assert ranks_fitting("broadcast", 0.5, 0.9) is None
    assert ranks_fitting("all_reduce", 0.0, 0.001) == (1, 1)   # busbw 0: one rank
    # two decimals at ~0.6 GB/s leave 31/32 anywhere from 2 ranks on
    lo, hi = ratio_interval([("0.61", "0.59")])
    assert ranks_fitting("all_gather", lo, hi)[0] < 32


def test_evidence_decides_or_refuses():
    sum_, none = frozenset({"sum"}), frozenset({"none"})
    assert decide_op(Evidence(redops=sum_, roots=frozenset({-1}), split=1, ratio=(1.74, 1.76)), [], (), 1) == \
        ("all_reduce", ["redop", "root", "count", "busbw factor"])
    assert decide_op(Evidence(redops=sum_, roots=frozenset({0}), split=1), [], (), 1)[0] == "reduce"
    # in-place N/A where out-of-place is checked: only alltoall, alltoallv and sendrecv do that
    ev = Evidence(redops=none, roots=frozenset({-1}), split=16, ratio=(0.93, 0.95), in_place_checked=False)
    with pytest.raises(LogFormatError, match="fit alltoall, alltoallv"):
        decide_op(ev, [], (), 3)
    assert decide_op(ev, [], ("alltoall",), 3) == ("alltoall", ["file name", "redop", "root", "count", "busbw factor",
                                                                 "in-place #wrong"])
    # gather and scatter print the same columns
    with pytest.raises(LogFormatError, match="fit gather, scatter"):
        decide_op(Evidence(redops=none, roots=frozenset({0}), split=16, ratio=(0.93, 0.95)), [], (), 3)
    # two lines naming two ops
    with pytest.raises(LogFormatError, match="names its op all_reduce .* and all_gather"):
        decide_op(Evidence(), [("all_reduce", "a"), ("all_gather", "b")], (), 3)


def test_rank_count_combines_its_proofs():
    ev = Evidence(ratio=ratio_interval([("372.10", "738.39"), ("372.91", "739.99")]))
    assert rank_count("all_reduce", ev, 127, None).value == 128
    wide = Evidence(ratio=ratio_interval([("75.53", "150.95")]))
    found = rank_count("all_reduce", wide, 1439, None)
    assert found.value is None and found.at_least == 1440
    assert rank_count("all_reduce", wide, None, ("rank list", 100)).warnings   # a list the factor rules out
    assert rank_count("all_gather", Evidence(split=12), None, None).value == 12


def test_ops_a_file_name_names():
    assert ops_in_name("nccl_allreduce.log") == ("all_reduce",)
    assert ops_in_name("x-allgather-allreduce-2runs.txt") == ("all_gather", "all_reduce")
    assert ops_in_name("dir/reduce_scatter_then_gather.txt") == ("reduce_scatter", "gather")
    assert ops_in_name("mi250x.log") == ()
    assert ops_in_name("all_reduce_perf.log") == ("all_reduce",) and ops_in_name("allgather8gpu.txt") == ("all_gather",)
    # a word that only holds an op's spelling names nothing
    assert ops_in_name("busbw-gathered-from-the-reduced-runs.txt") == ()


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
    assert nccl_version_from_code(22907) == "2.29.7" and nccl_version_from_code(2708) == "2.7.8"
