"""The family table: one place per fact. Every measurement any producer makes (native runs of
every family, every real log the importers read) is declared by its family with its unit."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from clusterbench.bench.collectives import calls
from clusterbench.cli import all_commands
from clusterbench.families import (
    FAMILIES,
    by_command,
    family_of,
    headline_metrics,
    higher_is_better,
    is_judged,
    metric_of,
    renderer_for,
)
from clusterbench.families.base import GenericRenderer
from clusterbench.families.collectives.spec import ALL_OPS, OPS, SPECS, op_in_text, op_name
from clusterbench.ingest import IMPORTERS, TOOLS, detect_tool, parse_text
from clusterbench.ingest.nccl_tests import LEGACY_UNNAMED_OP as BENCH_UNKNOWN
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
LOGS = sorted(p for p in DATA.glob("*/*") if p.suffix not in (".md", ".db", ".yaml")
              and p.parent.name not in ("golden", "schemas", "sysfs") and p.is_file())


def test_every_benchmark_has_one_family_and_each_family_one_headline():
    owners: dict[str, str] = {}
    for f in FAMILIES:
        for b in f.benchmarks:
            assert b not in owners, f"{b} is owned by {owners.get(b)} and {f.name}"
            owners[b] = f.name
        names = [m.name for m in f.metrics]
        assert len(names) == len(set(names)), f.name
        assert sum(m.headline for m in f.metrics) <= 1, f.name
    assert family_of("osu_allreduce").name == "osu" and family_of("nope") is None
    assert set(headline_metrics()) >= {"busbw", "bandwidth", "tflops"}


def test_every_family_command_is_a_cli_command():
    for f in FAMILIES:
        for command in f.commands:
            assert command in all_commands(), (f.name, command)
            assert by_command(command) is f


def test_a_collective_op_is_its_spec_row_and_its_call():
    assert set(OPS) == set(calls.CALLS)                     # every runnable op has its PyTorch call
    assert set(OPS) <= set(ALL_OPS) and all(SPECS[op].runnable for op in OPS)
    for op in ALL_OPS:
        table = renderer_for(op)
        assert table.op == op                               # one parametrised nccl-tests table
    assert op_name("AllReduce") == "all_reduce" and op_name("/opt/x/alltoall_perf_mpi") == "alltoall"
    assert op_name("bcast") == "broadcast" and op_name("nope") is None
    assert op_in_text("nccl_allgather.log") == "all_gather"


def test_directions_come_from_the_table_and_units_for_the_rest():
    assert higher_is_better("all_reduce", "busbw", "GB/s")
    assert not higher_is_better("all_reduce", "time_us", "us")
    assert not higher_is_better("osu_latency", "latency_us", "us")
    assert not higher_is_better("train", "loss", "")
    assert not higher_is_better("unknown", "whatever", "ms")   # not declared: a time is lower-better
    assert higher_is_better("unknown", "whatever", "GB/s")
    assert not is_judged("all_reduce", "wrong") and is_judged("stream", "bandwidth")


def test_every_importer_is_found_and_every_tool_detected_by_its_own_logs():
    assert {imp.tool for imp in IMPORTERS} | {a for imp in IMPORTERS for a in imp.aliases} == set(TOOLS)
    assert len(LOGS) > 30


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_imported_records_are_declared_by_their_family(log):
    text = log.read_text(errors="replace")
    if detect_tool(text) is None:
        pytest.skip("not a log clusterbench imports (kept to test refusal)")
    try:
        runs = parse_text(text, name=log.name)
    except Exception as e:  # noqa: BLE001 - logs without results are tested elsewhere
        pytest.skip(f"no results: {e}")
    for r in runs:
        for m in r.measurements:
            if m.benchmark == BENCH_UNKNOWN:  # a table whose op cannot be named stays generic
                assert isinstance(renderer_for(m.benchmark), GenericRenderer)
                continue
            declared = metric_of(m.benchmark, m.metric)
            assert declared is not None, (m.benchmark, m.metric)
            assert declared.unit == m.unit, (m.benchmark, m.metric, m.unit)


def test_native_records_of_every_family_are_declared(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(DATA / "golden" / "pre-redesign.db", db)
    seen = set()
    with Store.open(str(db)) as store:
        for run in store.list_runs():
            for m in store.measurements(run.id):
                if m.benchmark == BENCH_UNKNOWN:
                    continue
                declared = metric_of(m.benchmark, m.metric)
                assert declared is not None and declared.unit == m.unit, (m.benchmark, m.metric, m.unit)
                seen.add(family_of(m.benchmark).name)
    assert seen >= {"collectives", "stream", "gemm", "transfer", "net", "train", "ddp_comm", "infer_tp"}


def test_every_command_module_holds_the_command_named_after_it():
    # the CLI imports a module only when its command runs, finding it by this name
    import importlib
    import pkgutil

    from clusterbench.cli import commands

    for info in pkgutil.iter_modules(commands.__path__):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        expected = "import" if info.name == "importcmd" else info.name.replace("_", "-")
        assert [c.name for c in module.commands] == [expected], info.name


def test_every_metric_is_documented_in_metrics_md():
    """docs/metrics.md says what each stored metric means: a metric added to a family without a
    word there fails here."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "metrics.md").read_text()
    missing = [f"{family.name}.{m.name}" for family in FAMILIES for m in family.metrics
               if not re.search(rf"(?<![\w.]){re.escape(m.name)}(?![\w])", doc)]
    assert not missing, f"docs/metrics.md does not mention {', '.join(missing)}"
