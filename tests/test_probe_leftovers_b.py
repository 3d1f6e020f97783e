"""Probed edges of the importers and of ``clusterbench transfer``: nccl-tests -J JSON behind
launcher prefixes, and transfer's unbounded iteration counts, ignored --method and TransferBench
executor sub-indices."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from clusterbench.bench.transfer import engine, lang
from clusterbench.bench.transfer.config import transfer_config, transfer_options
from clusterbench.errors import UsageError
from clusterbench.ingest import parse_text

sys.path.insert(0, str(Path(__file__).parent))
from ingest_helpers import SEED, nccl_json  # noqa: E402

# ---- JSON behind launcher prefixes ------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["0: ", "[1,0]<stdout>:", "node1: "])
@pytest.mark.parametrize("pretty", [False, True], ids=["one-line", "indented"])
def test_nccl_tests_json_behind_a_launcher_prefix(prefix, pretty):
    text_run = parse_text(SEED.read_text(), name=SEED.name)[0]
    doc = nccl_json(text_run)
    if pretty:
        doc = json.dumps(json.loads(doc), indent=1)
    (want,) = parse_text(doc, name="out.json")
    (r,) = parse_text("".join(prefix + ln + "\n" for ln in doc.split("\n")), name="out.json")
    assert r.run.status == "complete" and r.run.meta["op"] == "all_reduce"
    assert len(r.measurements) == len(want.measurements) == 250


# ---- clusterbench transfer --------------------------------------------------------------------

@pytest.mark.parametrize("iterations, warmups, words", [
    (99999999999999999999, 3, "--iterations must be 1..1000000"),
    (10, 99999999999999999999, "--warmups must be 0..1000000"),
])
def test_transfer_iteration_counts_are_bounded(iterations, warmups, words):
    with pytest.raises(UsageError, match=words):
        transfer_options(None, (), "64K", "copy_engine", iterations, warmups)


def test_a_kernel_method_on_a_run_without_p2p_or_a2a_says_it_was_not_used():
    cfg = transfer_config("h2h", (), None, "64K", "kernel", 2, 0, True, "cpu", None)
    assert any("--method kernel not used" in n and "h2h" in n for n in cfg.notes)
    cfg = transfer_config("h2h", (), None, "64K", "copy_engine", 2, 0, True, "cpu", None)
    assert cfg.notes == ()


def test_an_executor_sub_index_is_kept_and_its_test_skipped_with_the_reason():
    (t,) = lang.parse_text("1 4 (C0->C0.3->C0)\n", 65536)
    assert str(t.transfers[0].exe) == "C0.3"
    topo = engine.Topology(0, (0,), {0: (0,)})
    r = engine.run_test(t, topo, 1, 0)
    assert r.skipped is not None and "sub-executor 3" in r.skipped
    (plain,) = lang.parse_text("1 4 (C0->C0->C0)\n", 65536)
    assert engine.unsupported(plain.transfers[0]) is None


@pytest.mark.parametrize("line", ["1 99999999999999999999 (C0->C0->C0)", "-1 (C0 C0 C0 65537 64K)"])
def test_a_huge_sub_executor_count_is_refused(line):
    with pytest.raises(UsageError, match="sub-executors .*at most 65536"):
        lang.parse_text(line + "\n", 65536)


# ---- a row that lost its last columns ---------------------------------------------------------

@pytest.mark.parametrize("cut", [1, 2])
@pytest.mark.parametrize("where", ["middle", "last"])
def test_an_nccl_row_missing_its_last_columns_is_not_read_right_aligned(cut, where):
    """A row cut short by its last values reads, right-aligned, as another shape (its root as a
    time, its time as algbw): it is not read, and the run says so."""
    path = Path(__file__).parent / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
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
