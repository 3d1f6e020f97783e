"""Tests of clusterbench.bench.transfer.engine: execute transfer tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from sysfs_trees import SYSFS
from transfer_topologies import CPU, GPUS8

from clusterbench.bench.transfer import engine, lang, matrices
from clusterbench.bench.transfer import main as tmain
from clusterbench.bench.transfer.matrices import Planned
from clusterbench.errors import UsageError
from clusterbench.families.transfer.table import TransferTable
from clusterbench.families.transfer.table import TransferTable as TransferRenderer
from clusterbench.ranks.plan import Plan
from clusterbench.records import Measurement


def _config_rows(text: str) -> list[Measurement]:
    rows: list[Measurement] = []

    class Ctx:
        device_type = "cpu"

        def meta(self, data): pass
        def note(self, text, benchmark=None): pass
        def fail(self, reason): raise AssertionError(reason)
        def progress(self): pass
        def record(self, ms): rows.extend(ms)
        def plan(self, benchmark, what, works): return Plan(lambda event: None, benchmark, what, works)

    tests = lang.parse_text(text, 4096)
    cfg = tmain.TransferConfig(tuple(Planned(t, "config", "uni", "CPU", "", i) for i, t in enumerate(tests, 1)), 1, 0)
    tmain.main(Ctx(), cfg)
    return rows


def test_the_seeds_six_example_tests_parse():
    text = resources.files("clusterbench").joinpath("data/transfer_example.cfg").read_text()
    tests = lang.parse_text(text, 64 << 20)
    assert [[str(t) for t in x.transfers] for x in tests] == [
        ["G0->G0->G1"], ["G0->D0->G1"], ["G0->G0->G1", "G1->G1->G0"], ["N->G0->G0"],
        ["C0->C0->N"], ["G0->G0->G0G1"]]
    assert tests[0].name == "Single GPU-executed Transfer between GPUs 0 and 1 using 4 CUs"
    assert [t.bytes for t in tests[2].transfers] == [1 << 20, 2 << 20]
    assert tests[0].transfers[0].subexecs == 4 and tests[5].transfers[0].subexecs == 16
    assert tests[5].transfers[0].dsts == (lang.Mem("G", 0), lang.Mem("G", 1))
    for t in tests:
        engine.validate(t, GPUS8)


def test_out_of_range_and_unsupported():
    with pytest.raises(UsageError, match="GPU 0 does not exist"):
        engine.validate(lang.parse_line("G0->G1", 1024, "x"), CPU)
    with pytest.raises(UsageError, match="NUMA node 3 does not exist"):
        engine.validate(lang.parse_line("C3->C0", 1024, "x"), CPU)
    un = engine.unsupported
    assert "CPU executor cannot address GPU memory" in un(lang.parse_transfer("G0->C0->C0", 64))
    assert "copy engines only copy" in un(lang.parse_transfer("N->D0->G0", 64))
    assert "whole rows" in un(lang.parse_transfer("G0->G0->G1@1028", 64))
    assert un(lang.parse_transfer("G0->G0->G1", 1 << 20)) is None
    assert un(lang.parse_transfer("C0->G0", 1 << 20)) is None
    assert "issues this transfer on GPU 0" in un(lang.parse_transfer("G0->D1->G1", 1 << 20))
    assert un(lang.parse_transfer("N->G1->G1", 1 << 20)) is None


def test_host_copies_run_and_are_checked():
    for line in ("C0->C0 C0->C0@8K", "N->C0->C0", "C0->C0->N", "C0->C0->C0C0"):
        r = engine.run_test(lang.parse_line(line, 1 << 16, "x"), CPU, iterations=2, warmups=1)
        assert r.errors == [] and r.skipped is None
        assert all(len(s) == 2 and min(s) > 0 for s in r.seconds) and len(r.wall) == 2


def test_corrupted_destination_is_caught():
    t = lang.parse_transfer("C0->C0->C0", 1 << 14)
    b = engine.Buffers(t, CPU, gpu_involved=False)
    b.run()
    assert b.check() is None
    b.dsts[0][100] = -1.0
    assert b.check() == "1 of 4096 elements differ in the destination C0"
    m = engine.Buffers(lang.parse_transfer("N->C0->C0", 1 << 12), CPU, gpu_involved=False)
    m.run()
    m.dsts[0][0] = 0.0
    assert "differ" in m.check()


def test_config_rows_and_unknown_device_has_no_percent():
    p = Planned(lang.parse_line("C0->C0 C0->C0@8K", 1 << 16, "mine"), "config", "uni", "CPU", "")
    r = engine.TestResult([[1e-3, 1e-3], [1e-5, 1e-5]], [2e-3, 2e-3], [])
    rows = tmain.test_rows(p, r)
    assert [(m.param("stat"), round(m.value, 3)) for m in rows] == [
        ("pair", 0.066), ("pair", 0.819), ("aggregate", 0.037)]
    assert rows[0].param("method") == "CPU" and rows[0].param("test") == "mine"
    out = "\n".join(TransferRenderer().rows(rows))
    assert "Transfer 01" in out and "%" not in out


def test_every_gpu_of_a_transfer_gets_a_private_stream_issuer_last():
    t = lang.parse_transfer("G1->D1->G0", 1 << 20)
    assert engine.stream_devices(t) == [0, 1]        # destination too, not only the issuing GPU
    assert engine.stream_devices(lang.parse_transfer("G0->G0->G2G1", 1 << 20)) == [1, 2, 0]
    assert engine.stream_devices(lang.parse_transfer("C0->D3->G3", 1 << 20)) == [3]


def test_a2a_transfers_into_one_gpu_do_not_share_a_stream():
    planned = matrices.plan(["a2a"], engine.Topology(3, (0,), {0: (0,)}), 1 << 20, ["D"])
    into_0 = [t for t in planned[0].test.transfers if t.dsts[0].index == 0]
    assert len(into_0) == 2 and all(0 in engine.stream_devices(t) for t in into_0)


def test_host_buffers_ask_for_transparent_huge_pages():
    """Pinned host buffers come from memory advised MADV_HUGEPAGE: registered in 4 KiB pages,
    1 GiB host->device copies ran at 46.8 GB/s on an H100 VM, in huge pages at 55.2
    (cudaHostAlloc 51.6; BENCHMARKS.md). The kernel marks advised mappings "hg" in smaps."""
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        smaps = Path("/proc/self/smaps")
        smaps.stat()
    except OSError:
        pytest.skip("no transparent huge pages or /proc/self/smaps here")
    if "[never]" in mode:
        pytest.skip("transparent huge pages are off on this kernel")
    arr = engine._host_pages(3 << 20)
    arr.fill(1.0)
    assert arr.dtype.name == "float32" and arr.size == 3 << 20 and arr.flags.writeable
    addr = arr.__array_interface__["data"][0]
    flags = None
    start = end = 0
    for line in smaps.read_text().splitlines():
        head = line.split()[0] if line.split() else ""
        if "-" in head and ":" not in head:
            start, end = (int(x, 16) for x in head.split("-"))
        elif line.startswith("VmFlags:") and start <= addr < end:
            flags = line.split()[1:]
            break
    assert flags is not None and "hg" in flags, flags
    assert engine._host_pages(0).size == 0


def test_gpu_numa_nodes_from_sysfs():
    bdfs = {0: "0000:18:00.0", 1: "0000:2a:00.0", 2: "0000:9a:00.0", 3: "0000:ff:00.0"}
    assert engine.gpu_numa_nodes(bdfs, SYSFS / "h100-node") == {0: 0, 1: 0, 2: 1}
    assert engine.gpu_numa_nodes({0: "0000:41:00.0"}, SYSFS / "broken-node") == {}


def test_h2d_and_d2h_use_each_gpus_own_numa_node():
    topo = engine.Topology(2, (0, 1), {0: (0,), 1: (1,)}, gpu_numa={0: 1, 1: 0})
    planned = matrices.plan(["h2d", "d2h"], topo, 1 << 20, ["D"])
    pairs = {(p.kind, p.host_memory, str(p.test.transfers[0].srcs[0]), str(p.test.transfers[0].dsts[0]))
             for p in planned}
    assert ("h2d", "pinned", "C1", "G0") in pairs and ("h2d", "pinned", "C0", "G1") in pairs
    assert ("d2h", "pageable", "G0", "U1") in pairs and ("d2h", "pinned", "G1", "C0") in pairs
    assert engine.Topology(1, (0,), gpu_numa={0: 5}).host_node(0) == 0   # unknown node: the first


def test_host_memory_is_touched_and_pinned_in_place_by_the_node_thread(monkeypatch):
    import threading

    import torch

    seen = {}

    class Cudart:
        def cudaHostRegister(self, ptr, size, flags):
            seen["register"] = (ptr, size, threading.current_thread().name)
            return 0

        def cudaHostUnregister(self, ptr):
            seen["unregister"] = ptr
            return 0

    monkeypatch.setattr(torch.cuda, "cudart", lambda: Cudart())
    t = lang.parse_transfer("C0->C0->C0", 1 << 14)
    b = engine.Buffers(t, CPU, gpu_involved=True)          # host memory with a GPU taking part
    ptr, size, thread = seen["register"]
    assert thread == "clusterbench-numa0" and size == 1 << 14
    assert ptr in (b.srcs[0].data_ptr(), b.dsts[0].data_ptr())
    assert len(b.registered) == 2 and not b.srcs[0].is_pinned()  # the same buffer, not a pinned copy
    b.run()
    assert b.check() is None
    b.release()
    assert seen["unregister"] in (b.srcs[0].data_ptr(), b.dsts[0].data_ptr()) and not b.registered


def test_refused_registration_falls_back_to_a_pinned_copy(monkeypatch):
    import torch

    class Refuses:
        def cudaHostRegister(self, ptr, size, flags):
            return 1

    monkeypatch.setattr(torch.cuda, "cudart", lambda: Refuses())
    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: pinned.append(self) or self)
    buf, registered = engine._host_buffer(lang.Mem("C", 0), 256, pinned=True, cpus=(0,))
    assert not registered and pinned and buf.numel() == 256


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_gpu_copies_use_private_streams_and_registered_host_memory():
    import torch

    topo = engine.topology()
    t = lang.parse_transfer("C0->D0->G0", 1 << 20)
    b = engine.Buffers(t, topo, gpu_involved=True)
    assert b.registered and b.srcs[0].is_pinned()
    b.release()
    assert not b.srcs[0].is_pinned()
    current = []
    real_run = engine.Buffers.run

    def spy(self):
        current.append(torch.cuda.current_stream(0) != torch.cuda.default_stream(0))
        real_run(self)

    engine.Buffers.run = spy
    try:
        r = engine.run_test(lang.parse_line("C0->G0 G0->C0", 1 << 20, "x"), topo, iterations=2, warmups=0)
    finally:
        engine.Buffers.run = real_run
    assert r.errors == [] and current and all(current)


def test_an_executor_sub_index_is_kept_and_its_test_skipped_with_the_reason():
    (t,) = lang.parse_text("1 4 (C0->C0.3->C0)\n", 65536)
    assert str(t.transfers[0].exe) == "C0.3"
    topo = engine.Topology(0, (0,), {0: (0,)})
    r = engine.run_test(t, topo, 1, 0)
    assert r.skipped is not None and "sub-executor 3" in r.skipped
    (plain,) = lang.parse_text("1 4 (C0->C0->C0)\n", 65536)
    assert engine.unsupported(plain.transfers[0]) is None


def test_config_tests_named_like_a_matrix_or_alike_stay_apart():
    rows = _config_rows("# h2h\nC0->C0@4K C0->C0@4K\n\n# same\nC0->N@4K\n\n# same\nC0->N@4K\n")
    pairs = [m for m in rows if m.param("stat") == "pair"]
    # two tests named alike: their rows differ by test_index (they were the same row twice)
    keys = [tuple(sorted(m.params.items())) for m in rows]
    assert len(set(keys)) == len(keys)
    assert sorted({m.param("test_index") for m in rows}) == [1, 2, 3]
    # a config test named h2h prints as its two transfers, not as an h2h matrix with one cell
    lines = TransferTable().rows([m for m in rows if m.param("test") == "h2h"])
    assert sum(line.lstrip().startswith("Transfer") for line in lines) == 2
    assert not any("SRC->DST" in line for line in lines)
    assert len([m for m in pairs if m.param("test") == "h2h"]) == 2
