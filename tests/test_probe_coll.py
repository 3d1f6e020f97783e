"""Probes of ``clusterbench coll`` against nccl-tests' own rules: how a size becomes per-rank
counts, what ``# Out of bounds values`` counts, the order of ``-N`` cycles, and a correctness
check that catches one wrong value on one rank in every op (gloo, 1-4 local CPU ranks)."""

from __future__ import annotations

import io

import pytest

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.families.collectives.spec import OPS, SPECS, Counts, row_bytes, row_counts
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import COMPLETE, FAILED
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import run_job


def _run(config, np, db, target=rank.main):
    out = io.StringIO()
    job = Job(target, config, RankOptions(device="cpu", timeout=60), np=np)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    return result, out.getvalue()


# -- per-rank targets (module level: ranks import them by reference) ------------------------------

def _corrupt_output(ranks: set[int]):
    """Sweep.count_wrong that first adds 1 to the first element of the result this rank checks:
    a value the transport got wrong, after the op."""
    honest = rank.Sweep.count_wrong

    def count_wrong(self, b, per):
        if self.ctx.rank in ranks and b.output is not None and b.output.numel():
            b.output[0] += 1
        return honest(self, b, per)

    return count_wrong


def one_wrong_value_on_rank1(ctx, config):
    rank.Sweep.count_wrong = _corrupt_output({1})
    rank.main(ctx, config)


def one_wrong_value_on_every_rank(ctx, config):
    rank.Sweep.count_wrong = _corrupt_output(set(range(ctx.world_size)))
    rank.main(ctx, config)


# -- counts: nccl-tests (since v2.13.12) trims per-rank counts to whole 16-byte units --------------

def _nccl_tests_per_rank(count: int, n: int, elt: int) -> int:
    """nccl-tests' ``(count/nranks) & ~(16/eltSize - 1)`` of all_gather, reduce_scatter, alltoall."""
    return (count // n) & ~(16 // elt - 1)


@pytest.mark.parametrize("op,size,dtype,n,want", [
    ("all_gather", 1000, "float", 3, Counts(80, 240, 80)),       # 83 floats per rank -> 80
    ("all_gather", 128, "float", 3, Counts(8, 24, 8)),           # 10 -> 8: the size column is 96
    ("reduce_scatter", 100, "int32", 8, Counts(0, 0, 0)),        # 3 int32 per rank: not one 16 B unit
    ("reduce_scatter", 512, "float", 3, Counts(120, 40, 40)),
    ("alltoall", 96, "int8", 4, Counts(64, 64, 16)),             # 24 bytes per rank -> 16
    ("alltoall", 48, "double", 3, Counts(6, 6, 2)),              # 2 doubles: one 16 B unit
    ("alltoall", 40, "double", 4, Counts(0, 0, 0)),              # 1 double per rank -> 0
    ("all_gather", 96, "bfloat16", 2, Counts(24, 48, 24)),
    ("all_gather", 92, "bfloat16", 2, Counts(16, 32, 16)),       # 23 -> 16 (8 per 16 B)
])
def test_gather_type_counts_trim_to_16_bytes_as_nccl_tests(op, size, dtype, n, want):
    counts = row_counts(op, size, dtype, n)
    assert counts == want
    elt = {"float": 4, "int32": 4, "int8": 1, "double": 8, "bfloat16": 2}[dtype]
    assert counts.param == _nccl_tests_per_rank(size // elt, n, elt)
    assert row_bytes(op, counts, dtype) == max(counts.send, counts.recv) * elt


@pytest.mark.parametrize("op", [op for op in OPS if op not in ("all_gather", "reduce_scatter", "alltoall")])
def test_whole_buffer_ops_keep_every_element(op):
    # all_reduce, broadcast, reduce and sendrecv pass the whole count: no trimming
    assert row_counts(op, 1000, "float", 3) == Counts(250, 250, 250)
    assert row_counts(op, 7, "int8", 4) == Counts(7, 7, 7)


def test_all_gather_on_three_ranks_prints_the_trimmed_size(db):
    config = build_config("all_gather,alltoall", minbytes="32", maxbytes="512", stepfactor=4, iters=1,
                          warmup_iters=0)
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    rows = {(m.benchmark, m.params["placement"], m.params["bytes"], m.params["count"])
            for m in result.measurements if m.metric == "busbw"}
    # 32 B is 8 floats: 2 per rank, below one 16 B unit -> skipped; 128 B -> 8 per rank (96 B);
    # 512 B -> 40 per rank (480 B)
    for op in ("all_gather", "alltoall"):
        assert {(b, c) for o, _, b, c in rows if o == op} == {(96, 8), (480, 40)}
    assert any("size(s) 32 B hold less than 16 B per rank for 3 ranks" in n["text"]
               for n in result.run.meta["notes"])
    assert all(m.value == 0 for m in result.measurements if m.metric == "wrong")


# -- the correctness check -------------------------------------------------------------------------

def test_one_wrong_value_on_one_rank_is_counted_in_every_op(db):
    """One element off on rank 1, after each op: #wrong 1 in every checked result, the run fails."""
    config = build_config("all", minbytes="64", maxbytes="256", stepfactor=4, iters=1, warmup_iters=0,
                          root=1)
    result, text = _run(config, 2, db, target=one_wrong_value_on_rank1)
    assert result.exit_code == 1 and result.run.status == FAILED
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    checked = {(op, p) for op in OPS for p in ("out", "in")
               if (p == "out" and SPECS[op].out_of_place) or (p == "in" and SPECS[op].in_place_checked)}
    assert {(m.benchmark, m.params["placement"]) for m in wrong} == checked
    assert all(m.value == 1 for m in wrong), [(m.benchmark, m.params, m.value) for m in wrong]
    for op in OPS:
        oob = [m.value for m in result.measurements if m.benchmark == op and m.metric == "out_of_bounds"]
        assert oob == [float(sum(1 for m in wrong if m.benchmark == op))]
        assert any(op in e and "wrong elements" in e for e in result.run.errors)
    assert text.count("FAILED") == len(OPS)


def test_out_of_bounds_counts_each_rank_that_saw_wrong_values_as_nccl_tests(db):
    """nccl-tests' CheckData adds one to the error count per rank whose own result is wrong
    (summed over ranks), so one wrong row on 2 ranks is 2 out-of-bounds values, not 1."""
    config = build_config("all_gather,all_reduce", minbytes="64", maxbytes="256", stepfactor=4, iters=1,
                          warmup_iters=0)
    result, text = _run(config, 2, db, target=one_wrong_value_on_every_rank)
    assert result.exit_code == 1 and result.run.status == FAILED
    oob = {m.benchmark: m.value for m in result.measurements if m.metric == "out_of_bounds"}
    # all_gather: 2 sizes x 2 placements x 2 ranks; all_reduce: 2 sizes x in-place x 2 ranks
    assert oob == {"all_gather": 8.0, "all_reduce": 4.0}
    assert all(m.value == 2 for m in result.measurements if m.metric == "wrong")
    assert "# Out of bounds values : 8 FAILED" in text and "# Out of bounds values : 4 FAILED" in text


# -- -N: nccl-tests repeats the size loop inside each type and reduction ---------------------------

def test_run_cycles_repeat_the_sizes_of_each_type_before_the_next(db):
    config = build_config("reduce_scatter", minbytes="64", maxbytes="128", iters=1, warmup_iters=0,
                          datatype="float,int32", cycles=2)
    result, text = _run(config, 2, db)
    assert result.exit_code == 0 and result.run.status == COMPLETE, text
    order = [(m.params["dtype"], m.params["cycle"], m.params["bytes"])
             for m in result.measurements if m.metric == "time_us" and m.params["placement"] == "out"]
    assert order == [("float", 0, 64), ("float", 0, 128), ("float", 1, 64), ("float", 1, 128),
                     ("int32", 0, 64), ("int32", 0, 128), ("int32", 1, 64), ("int32", 1, 128)]


# -- a sweep with nothing to measure is bad input ----------------------------------------------------

def _cli(capsys, *args):
    from clusterbench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("args,words", [
    (["all_gather", "-b", "8", "-e", "32", "--np", "4"],
     "every size of all_gather float holds less than 16 B per rank for 4 ranks"),
    (["alltoall,reduce_scatter", "-b", "1", "-e", "60", "-d", "int8", "--np", "4"],
     "every size of alltoall int8 holds less than 16 B per rank for 4 ranks: nothing to measure"),
    (["all_reduce", "-b", "1", "-e", "7", "-f", "1", "-i", "2", "-d", "double", "--np", "2"],
     "every size of all_reduce double holds less than one element (8 B) per rank"),
])
def test_a_sweep_with_nothing_to_measure_is_refused_before_any_rank_starts(capsys, db, args, words):
    from clusterbench.store import Store

    code, out, err = _cli(capsys, "coll", *args, "-n", "1", "-w", "0", "--db", db)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("clusterbench: error: ") and words in err, err
    with Store.open(db) as store:
        assert store.list_runs() == []


# -- the table against the records: one line per size, nccl-tests' columns and footer ----------------

def test_table_lines_and_footer_are_the_records(db):
    config = build_config("reduce_scatter,broadcast", minbytes="96", maxbytes="384", stepfactor=2, iters=1,
                          warmup_iters=0, root=2, cycles=2)
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    for op in ("reduce_scatter", "broadcast"):
        ms = [m for m in result.measurements if m.benchmark == op]
        block = text[text.index(f"# Collective test: {op}"):text.index(f"# Collective test concluded: {op}")]
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        rows = [m for m in ms if m.metric == "time_us" and m.params["placement"] == "in"]
        assert len(lines) == len(rows) == 3 * 2           # 3 sizes x 2 cycles, each one line
        for line, m in zip(lines, rows):
            cols = line.split()
            p = m.params
            assert cols[:5] == [str(p["bytes"]), str(p["count"]), "float", p["redop"], str(p["root"])]
            assert len(line) == len(lines[0])             # fixed-width columns
            bus = {q: x.value for x in ms for q in ("out", "in")
                   if x.metric == "busbw" and x.params == {**p, "placement": q}}
            assert cols[11] == f"{bus['in']:.2f}"
            assert cols[7] == (f"{bus['out']:.2f}" if "out" in bus else "N/A")
        busbw = [m.value for m in ms if m.metric == "busbw"]
        assert f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):g} " in block.splitlines()
        assert "# Out of bounds values : 0 OK" in block
    # the root is printed for broadcast, -1 for reduce_scatter; reduce_scatter on 3 ranks trims to
    # 16 B per rank: 96 B -> 8 floats per rank (96 B), 192 B -> 16, 384 B -> 32
    counts = sorted({(m.params["bytes"], m.params["count"]) for m in result.measurements
                     if m.benchmark == "reduce_scatter" and m.metric == "busbw"})
    assert counts == [(96, 8), (192, 16), (384, 32)]
