"""Tests of clusterbench.families: the family table."""

import re
import shutil

from paths import DATA, ROOT

from clusterbench.families import (
    FAMILIES,
    family_of,
    headline_metrics,
    higher_is_better,
    is_judged,
    metric_of,
)
from clusterbench.families.collectives.spec import ALL_OPS
from clusterbench.ingest.nccl_tests import LEGACY_UNNAMED_OP as BENCH_UNKNOWN
from clusterbench.report.terminal import renderer_for
from clusterbench.store import Store


def test_registered_for_every_collective_name():
    for op in ALL_OPS:
        assert renderer_for(op).op == op


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


def test_directions_come_from_the_table_and_units_for_the_rest():
    assert higher_is_better("all_reduce", "busbw", "GB/s")
    assert not higher_is_better("all_reduce", "time_us", "us")
    assert not higher_is_better("osu_latency", "latency_us", "us")
    assert not higher_is_better("train", "loss", "")
    assert not higher_is_better("unknown", "whatever", "ms")   # not declared: a time is lower-better
    assert higher_is_better("unknown", "whatever", "GB/s")
    assert not is_judged("all_reduce", "wrong") and is_judged("stream", "bandwidth")


def test_every_metric_is_documented_in_metrics_md():
    """docs/metrics.md says what each stored metric means: a metric added to a family without a
    word there fails here."""
    doc = (ROOT / "docs" / "metrics.md").read_text()
    missing = [f"{family.name}.{m.name}" for family in FAMILIES for m in family.metrics
               if not re.search(rf"(?<![\w.]){re.escape(m.name)}(?![\w])", doc)]
    assert not missing, f"docs/metrics.md does not mention {', '.join(missing)}"


def test_iteration_and_scaling_rows_have_labels_of_their_own():
    # the transfer family's row params name what tells these rows apart (labels, report tables)
    from clusterbench.families import family_of

    fam = family_of("transfer")
    base = {"test": "config", "src": "G0", "dst": "G1", "stat": "iteration", "bytes": 1 << 20}
    assert fam.row_label({**base, "iteration": 1}) != fam.row_label({**base, "iteration": 2})
    scale = {"test": "scaling", "src": "G0", "dst": "G1", "stat": "scaling", "bytes": 1 << 20}
    assert fam.row_label({**scale, "subexecutors": 4}) != fam.row_label({**scale, "subexecutors": 8})


def test_native_records_of_every_family_are_declared(tmp_path):
    """Every record the native benchmarks stored (a database of every family's runs) is declared
    by its family, with its unit."""
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
