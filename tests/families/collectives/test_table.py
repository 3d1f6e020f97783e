"""Tests of clusterbench.families.collectives.table."""

from __future__ import annotations

import re

import pytest
from bench_tables import _row, _run
from paths import DATA as ALL_DATA
from stored_runs import EXTREMES, WALL

from clusterbench.families.collectives.table import CollTable, format_time
from clusterbench.records import Measurement, Run

COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
           "busbw", "#wrong"]


def test_rows_split_into_the_nccl_tests_columns():
    ms = (_row("all_gather", 1024, 64, "out", 12.5, 0.08, 0.06, 0)
          + _row("all_gather", 1024, 64, "in", 130.25, 0.01, 0.01, 3)
          + _row("all_gather", 1048576, 65536, "out", 12345.6, 84.9, 63.7, 0)
          + _row("all_gather", 1048576, 65536, "in", 12000.0, 87.4, 65.5))  # in-place unchecked
    lines = CollTable("all_gather").rows(ms)
    assert len(lines) == 2
    first, second = (line.split() for line in lines)
    assert first == ["1024", "64", "float", "sum", "-1", "12.50", "0.08", "0.06", "0", "130.2", "0.01",
                     "0.01", "3"]
    assert second[5] == "12346" and second[12] == "N/A"
    # the column header splits into the same 13 names
    header = CollTable("all_gather").header(_run())
    names = next(h for h in header if "#wrong" in h).lstrip("#").split()
    assert names == COLUMNS


def test_missing_placement_prints_na_in_every_column():
    line = CollTable("all_reduce").rows(_row("all_reduce", 8, 2, "in", 20.0, 0.0, 0.0, 0))[0].split()
    assert len(line) == 13
    assert line[5:9] == ["N/A"] * 4 and line[9] == "20.00"


def test_header_names_ranks_pids_hosts_devices_and_sweep():
    text = "\n".join(CollTable("all_gather").header(_run()))
    assert "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20" in text
    assert "#  Rank  0 Group  0 Pid    101 on      nodeA device  0 [0x1b] GPU A" in text
    assert "#  Rank  1 Group  0 Pid    102 on      nodeA device  1 [0x2c] GPU B" in text
    assert "out-of-place" in text and "in-place" in text


def test_footer_uses_run_records_or_falls_back_to_rows():
    rows = _row("all_reduce", 8, 2, "in", 20.0, 1.0, 2.0, 0) + _row("all_reduce", 16, 4, "in", 20.0, 1.0, 4.0, 5)
    footer = CollTable("all_reduce").footer(Run("coll"), rows)
    assert footer[0] == "# Out of bounds values : 1 FAILED"
    assert footer[1].split(":")[1].split() == ["3"]
    stored = rows + [Measurement("all_reduce", "avg_busbw", 41.5, "GB/s", {"ranks": 2}),
                     Measurement("all_reduce", "out_of_bounds", 0.0, "", {"ranks": 2})]
    footer = CollTable("all_reduce").footer(Run("coll"), stored)
    assert footer[0] == "# Out of bounds values : 0 OK"
    assert footer[1] == "# Avg bus bandwidth    : 41.5 "


def test_time_format_matches_nccl_tests():
    assert format_time(5.123) == "   5.12"
    assert format_time(123.25) == "  123.2"   # %7.1f
    assert format_time(12345.6) == "  12346"


def test_collectives_row_with_extremes_lines_up_with_an_ordinary_one():
    def row(value: float) -> str:
        ms = [Measurement("all_reduce", metric, value, "", {"bytes": 8, "count": 2, "dtype": "float",
                                                            "redop": "sum", "root": -1, "placement": place})
              for metric in ("time_us", "algbw", "busbw", "wrong") for place in ("out", "in")]
        (line,) = CollTable("all_reduce").rows(ms)
        return line
    ordinary = row(12.5)
    for v in EXTREMES:
        line = row(v)
        assert len(line) == len(ordinary) or v == -1.7e308, (v, line)
        assert not WALL.search(line), line


def test_collectives_footer_of_counts_past_the_float_limit():
    ms = [Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 8}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 16})]
    footer = CollTable("all_reduce").footer(Run("coll"), ms)
    assert footer[0] == "# Out of bounds values : inf FAILED"
    ms = [m for m in ms if m.metric == "busbw"]
    assert CollTable("all_reduce").footer(Run("coll"), ms)[1] == "# Avg bus bandwidth    : 1.7e+308 "


# -- what the parsers of nccl-tests output rely on -------------------------------------------------
# The scripts operators run on nccl-tests logs (AWS's nccl_to_csv.py: a regular expression per
# row; SuperBench's nccl-bw parser: the lines between the last line naming out-of-place and the
# last "Out of bounds values", split on spaces, read by column index) rely on the facts below.
# They hold for real nccl-tests logs (checked first) and must hold for clusterbench's tables of
# every op, whichever engine measured it. benchmarks/nccl_parsers.py runs the two parsers
# themselves on clusterbench's tables.

DATA = ALL_DATA / "nccl-tests"
REAL_LOGS = ["a3mega-h100-2node-all_reduce.txt", "coreweave-gb200-20racks-1440ranks-rank-list-truncated-to-last.txt",
             "coreweave-gb200-nvl72-72ranks-rank-list-truncated-to-last.txt",
             "gke-kubectl-exec-run_nccl_tests-allgather-op-only-in-command.txt",
             "issue287-5090-1gpu-busbw-zero-overflowing-algbw.txt", "rtx3090-2node-inc-wrong-exponent-oob-108-failed.txt"]
NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[+-]?\d+)?$")
OOB = re.compile(r"^# Out of bounds values : \d+ (OK|FAILED)$")        # "# %-20s : %d %s"
AVG = re.compile(r"^# Avg bus bandwidth    : \S+ ?(OK|FAILED)?$")     # "# %-20s : %g %s"


def table_facts(text: str) -> list[str]:
    """What breaks a parser in one table's text (empty: nothing). Returns the problems found."""
    lines = [line.rstrip("\n") for line in text.splitlines()]
    problems = []
    placed = [i for i, line in enumerate(lines) if "out-of-place" in line]
    if len(placed) != 1:
        problems.append(f"{len(placed)} lines name out-of-place (the column header alone may)")
        return problems
    names = lines[placed[0] + 1].lstrip("#").split()
    if names != COLUMNS:
        problems.append(f"column names {names}")
    start = placed[0] + 3 if "(B)" in lines[placed[0] + 2] else placed[0] + 2
    end = next((i for i, line in enumerate(lines) if line.startswith("# Out of bounds values")), None)
    if end is None:
        return [*problems, "no '# Out of bounds values' line"]
    rows = lines[start:end]
    if not rows:
        problems.append("no rows")
    for line in rows:
        if line.lstrip().startswith("#") or not line.strip():
            problems.append(f"a line inside the table that is no row: {line!r}")
            continue
        f = line.split()
        if len(f) != 13:
            problems.append(f"{len(f)} columns: {line!r}")
            continue
        numbers = [f[0], f[1], f[4], *f[5:8], *f[9:12]]
        if not all(NUMBER.match(x) for x in numbers):
            problems.append(f"a number column without a number: {line!r}")
        if not all(NUMBER.match(x) or x == "N/A" for x in (f[8], f[12])):
            problems.append(f"#wrong neither a count nor N/A: {line!r}")
    if not OOB.match(lines[end]):
        problems.append(f"out-of-bounds footer {lines[end]!r}")
    if end + 1 >= len(lines) or not AVG.match(lines[end + 1]):
        problems.append("no '# Avg bus bandwidth    : X' line after it")
    after = [line for line in lines[end + 1:] if "out-of-place" in line or "Out of bounds values" in line]
    if after:
        problems.append(f"after the footer, a line SuperBench takes for a table boundary: {after[0]!r}")
    return problems


@pytest.mark.parametrize("name", REAL_LOGS)
def test_real_nccl_tests_logs_have_the_facts_parsers_rely_on(name):
    text = (DATA / name).read_text()
    assert table_facts(text) == []


def test_the_facts_catch_what_broke_the_parsers():
    """clusterbench's all_reduce table before both placements were measured: N/A out of place and
    a note naming out-of-place between the column header and the rows."""
    good = (DATA / REAL_LOGS[0]).read_text().splitlines()
    at = next(i for i, line in enumerate(good) if "(elements)" in line) + 1
    noted = good[:at] + ["# all_reduce: PyTorch offers only an in-place all_reduce; out-of-place columns are N/A"]
    assert "lines name out-of-place" in table_facts("\n".join(noted + good[at:]))[0]
    cut = good[at].split()
    na = "  ".join(cut[:5] + ["N/A"] * 4 + cut[9:])
    assert any("without a number" in p for p in table_facts("\n".join(good[:at] + [na] + good[at + 1:])))
    assert any("no row" in p for p in table_facts("\n".join(good[:at] + ["# a note"] + good[at:])))


ENGINES = ["torch", "nccl"]


@pytest.fixture(scope="module")
def printed_tables():
    """Every op on one in-process rank, through each engine (the NCCL library a stand-in that
    checks each call and carries it out on host memory), as printed live and by results show."""
    import io

    import torch
    import torch.distributed as dist
    from fake_nccl import COMM, STREAM, FakeNccl

    from clusterbench.bench.collectives import direct, nccl, rank
    from clusterbench.bench.collectives.config import coll_config
    from clusterbench.families.collectives.spec import OPS
    from clusterbench.ranks.context import RankContext, RankOptions
    from clusterbench.ranks.env import RankEnv
    from clusterbench.records import Header, Meta, Note, Rows
    from clusterbench.report.terminal import TablePrinter, render_run

    out: dict[tuple[str, str], tuple[str, str]] = {}
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        for engine_name in ENGINES:
            for op in OPS:
                if engine_name == "torch" and op == "sendrecv":
                    continue   # gloo has no send to itself; two ranks: tests/system/test_coll.py
                events: list = []
                ctx = RankContext(env=RankEnv(0, 1, 0, 1, "127.0.0.1", 0, "local", "h"),
                                  device=torch.device("cpu"), backend="gloo", options=RankOptions(device="cpu"),
                                  emit_fn=events.append)
                if engine_name == "nccl":
                    lib = nccl.Nccl(FakeNccl(), "/opt/nccl/lib/libnccl.so.2")
                    lib.lib.made.add(COMM)
                    engine = direct.DirectEngine(lib, COMM, None, STREAM)
                else:
                    engine = None
                config = coll_config(op, minbytes="8", maxbytes="4K", stepfactor=8, iters=2, warmup_iters=1,
                                     datatype="float,uint32", root=0, engine=engine_name)
                rank.run_op(ctx, config, op, engine)
                live = io.StringIO()
                printer = TablePrinter(out=live)
                printer.on_event(Header(ranks=1, hosts=["h"], devices=["cpu"], device_type="cpu", backend="gloo",
                                        launcher="local"))
                for e in events:
                    printer.on_event(e)
                run = Run("coll", ranks=1, hosts=["h"], devices=["cpu"])
                for e in events:
                    if isinstance(e, Meta):
                        run.meta.update(e.data)
                run.meta["notes"] = [e.to_stored() for e in events if isinstance(e, Note)]
                ms = [m for e in events if isinstance(e, Rows) for m in e.measurements]
                printer.finish(run, ms)
                out[(engine_name, op)] = live.getvalue(), "\n".join(render_run(run, ms))
    finally:
        dist.destroy_process_group()
    return out


def _without_noise_block(text: str) -> list[str]:
    """The lines of a printed run without its noise block (judge.noise.summary_lines: a
    ``# warning:`` line and the indented ``#   `` lines under it), which a busy machine adds."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        inside = line.startswith("# warning:") or (inside and line.startswith("#   "))
        if not inside:
            out.append(line)
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_every_ops_table_has_the_facts_live_and_stored(printed_tables, engine):
    from clusterbench.families.collectives.spec import OPS

    for op in OPS:
        if (engine, op) not in printed_tables:
            continue
        live, stored = printed_tables[(engine, op)]
        assert table_facts(live) == [], (op, live)
        assert table_facts(stored) == [], (op, stored)
        # (the noise warnings a stored run keeps are the run builder's, not made here)
        assert _without_noise_block(live) == stored.splitlines()
        # N/A only where nccl-tests prints it: the #wrong of the placements it leaves unchecked
        na = [(line.split().index("N/A"), line.split().count("N/A")) for line in live.splitlines()
              if "N/A" in line and not line.startswith("#")]
        assert all(where == (12, 1) for where in na), (op, na)
        assert bool(na) == (op in ("alltoall", "sendrecv")), op
    assert len([k for k in printed_tables if k[0] == engine]) >= len(OPS) - 1


def test_the_header_names_the_engine_and_the_torch_caveat_follows_the_table(printed_tables):
    live, _ = printed_tables[("torch", "all_reduce")]
    lines = live.splitlines()
    assert lines[2] == "# Engine: torch (torch.distributed, gloo backend)"
    end = lines.index("# Collective test concluded: all_reduce")
    assert lines[end + 1].startswith("# all_reduce: skipped uint32 sum: the gloo backend cannot run it (")
    assert lines[end + 2].startswith("# all_reduce (engine torch): torch.distributed has only an in-place "
                                     "all_reduce; out of place, the input is copied into the output buffer")
    nccl_lines = printed_tables[("nccl", "all_reduce")][0].splitlines()
    assert nccl_lines[2] == "# Engine: nccl (NCCL 2.30.7 called directly, /opt/nccl/lib/libnccl.so.2)"
    assert nccl_lines[nccl_lines.index("# Collective test concluded: all_reduce") + 1:] == []
    assert any(" uint32 " in line for line in nccl_lines)   # the library has the type gloo lacks


@pytest.mark.parametrize("engine", ENGINES)
def test_printed_tables_import_back_as_the_rows_they_print(printed_tables, engine):
    from clusterbench.families.collectives.spec import OPS
    from clusterbench.ingest import parse_text

    for op in OPS:
        if (engine, op) not in printed_tables:
            continue
        live, _ = printed_tables[(engine, op)]
        (imported,) = parse_text(live, name=f"{op}.log")
        got = {(m.params["bytes"], m.params["dtype"], m.params["placement"], m.metric): m.value
               for m in imported.measurements if "placement" in m.params}
        printed = {}
        for line in live.splitlines():
            f = line.split()
            if line.startswith("#") or len(f) != 13:
                continue
            for place, cols in (("out", f[5:9]), ("in", f[9:13])):
                for metric, cell in zip(("time_us", "algbw", "busbw", "wrong"), cols):
                    if cell != "N/A":
                        printed[(int(f[0]), f[2], place, metric)] = float(cell)
        assert got == printed, op
        assert {p for _, _, p, _ in got} == {"out", "in"}
