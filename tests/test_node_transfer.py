"""transfer: the config language (the seed's six tests), planning, host copies on CPU with the
destination check (and a corrupted destination caught), the matrix table, bad input."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from clusterbench.bench.transfer import engine, lang, matrices
from clusterbench.bench.transfer import main as tmain
from clusterbench.bench.transfer.matrices import Planned, plan
from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.families.transfer.table import TransferTable as TransferRenderer
from clusterbench.records import Measurement, Run

CPU = engine.Topology(0, (0,), {0: (0,)})
GPUS8 = engine.Topology(8, (0, 1), {0: (0,), 1: (1,)})


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


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


def test_short_form_and_defaults():
    t = lang.parse_line("G0->G1 C0->G2@1M; U0->C0", 4096, "x")
    assert [str(x) for x in t.transfers] == ["G0->D0->G1", "C0->D2->G2", "U0->C0->C0"]
    assert [x.bytes for x in t.transfers] == [4096, 1 << 20, 4096]
    assert lang.parse_line("   # only a comment", 4, "x") is None


@pytest.mark.parametrize("line,words", [
    ("G0", "expected SRC->DST"),
    ("X0->G1", "invalid memory type 'X'"),
    ("G0->Z0->G1", "invalid executor"),
    ("N->N", "cannot both be N"),
    ("G0G1->G2", "several sources"),
    ("G0->G1@3", "multiple of 4"),
    ("2 4 (G0->G0->G1)", "says 2 transfer(s), lists 1"),
    ("-1 (G0 G0 G1 4)", "expected (SRC EXE DST SUBEXECS BYTES)"),
    ("G->G1", "needs an index"),
])
def test_language_errors(line, words):
    with pytest.raises(UsageError) as e:
        lang.parse_line(line, 1024, "x")
    assert words in str(e.value)


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


def test_plans_for_eight_gpus():
    p = plan(["h2d", "d2h", "p2p", "a2a"], GPUS8, 1 << 20, ["D", "G"])
    kinds = [(x.kind, x.direction, x.method, x.host_memory) for x in p]
    assert kinds.count(("h2d", "uni", "copy_engine", "pinned")) == 8
    assert kinds.count(("d2h", "uni", "copy_engine", "pageable")) == 8
    assert kinds.count(("p2p", "uni", "kernel", "")) == 64 and kinds.count(("p2p", "bi", "copy_engine", "")) == 28
    a2a = [x for x in p if x.kind == "a2a"]
    assert len(a2a) == 2 and len(a2a[0].test.transfers) == 56
    sub = plan(["p2p", "a2a"], GPUS8, 1 << 20, ["D"], gpu_ids=[2, 5])
    assert [x.test.name for x in sub] == ["p2p copy_engine G2->G2", "p2p copy_engine G2->G5",
                                          "p2p copy_engine G5->G2", "p2p copy_engine G5->G5",
                                          "p2p copy_engine G2<->G5", "a2a copy_engine"]


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


def _pair(src, dst, v, stat="pair", direction="uni"):
    return Measurement("transfer", "bandwidth", v, "GB/s", {
        "src": src, "dst": dst, "direction": direction, "method": "copy_engine", "bytes": 1024,
        "test": "a2a", "stat": stat})


def test_summary_and_matrix_table():
    p = Planned(lang.Test("a2a", ()), "a2a", "uni", "copy_engine", "")
    pairs = [_pair("G0", "G1", 40.0), _pair("G1", "G0", 30.0), _pair("G0", "G0", 1000.0)]
    summ = tmain.summary_rows(p, pairs)
    assert [(m.param("src"), m.param("stat"), m.value) for m in summ] == [
        ("G0", "row_total", 40.0), ("G1", "row_total", 30.0), ("*", "average", 35.0)]
    r = TransferRenderer()
    run = Run("transfer", devices=["AMD Instinct MI300X"],
              meta={"device_names": {"G0": "AMD Instinct MI300X", "G1": "AMD Instinct MI300X"}})
    lines = r.header(run) + r.rows(pairs + summ)
    text = "\n".join(lines)
    assert "SRC->DST" in text and "average 35.00 GB/s" in text
    g0 = next(ln for ln in lines if ln.strip().startswith("G0 "))
    assert g0.split() == ["G0", "1000.00", "40.00", "40.00"]
    # MI300X: one Infinity Fabric link is 128 GB/s both ways, 64 one way: 40 GB/s is 62.5%.
    assert "62.5%" in text


def test_bidirectional_row_totals_count_both_ends():
    p = Planned(lang.Test("p2p", ()), "p2p", "bi", "copy_engine", "")
    pairs = [_pair("G0", "G1", 90.0, direction="bi"), _pair("G0", "G2", 80.0, direction="bi"),
             _pair("G1", "G2", 70.0, direction="bi")]
    summ = tmain.summary_rows(p, pairs)
    assert [(m.param("src"), m.value) for m in summ] == [
        ("G0", 170.0), ("G1", 160.0), ("G2", 150.0), ("*", 80.0)]


def test_config_rows_and_unknown_device_has_no_percent():
    p = Planned(lang.parse_line("C0->C0 C0->C0@8K", 1 << 16, "mine"), "config", "uni", "CPU", "")
    r = engine.TestResult([[1e-3, 1e-3], [1e-5, 1e-5]], [2e-3, 2e-3], [])
    rows = tmain.test_rows(p, r)
    assert [(m.param("stat"), round(m.value, 3)) for m in rows] == [
        ("pair", 0.066), ("pair", 0.819), ("aggregate", 0.037)]
    assert rows[0].param("method") == "CPU" and rows[0].param("test") == "mine"
    out = "\n".join(TransferRenderer().rows(rows))
    assert "Transfer 01" in out and "%" not in out


def test_cli_cpu_default_matrix_and_config(capsys, db):
    code, out, err = cli(capsys, "transfer", "--bytes", "256K", "--iterations", "2", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    stats = {r["params"]["stat"] for r in rows}
    assert stats == {"pair", "row_total", "average"}
    pair = next(r for r in rows if r["params"]["stat"] == "pair")
    assert pair["params"] == {"src": "C0", "dst": "C0", "direction": "uni", "method": "CPU",
                              "bytes": 262144, "test": "h2h", "host_memory": "pageable", "stat": "pair"}
    code, out, err = cli(capsys, "transfer", "--config", "example", "--test", "C0->C0 N->C0->C0",
                         "--bytes", "64K", "--iterations", "2", "--db", db)
    assert code == 0, err
    assert "# skipped Broadcast from GPU 0 to GPU 0 and GPU 1" in out
    assert '# "Read-only" by CPU 0' in out and "Transfer 01" in out
    # the example's 5th test keeps its place in the file on a host that skips the GPU tests
    # before it (it was numbered 1 here and 5 on a GPU host: the same test, two keys); the
    # --test after the file's six is 7
    assert '# "Read-only" by CPU 0\n# test 5\n' in out and "# test 7" in out


def test_a_config_tests_index_is_its_place_in_the_file_on_any_host(capsys, db, tmp_path):
    cfg = tmp_path / "t.cfg"
    cfg.write_text("# on GPUs\nG0->G1->G1\n# first on CPU\nC0->C0->C0\n# on GPU 5\nG5->G5->G5\n"
                   "# second on CPU\nC0->C0->C0\n")
    code, out, err = cli(capsys, "transfer", "--config", str(cfg), "--bytes", "64K", "--iterations", "2",
                         "--json", "--db", db)
    if __import__("torch").cuda.device_count() > 5:
        pytest.skip("this host has the GPUs the file names")
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {(r["params"]["test"], r["params"]["test_index"]) for r in rows} == {
        ("first on CPU", 2), ("second on CPU", 4)}


@pytest.mark.parametrize("args,words", [
    (["--bytes", "0"], "positive multiple of 4"),
    (["--bytes", "-8"], "must be positive"),
    (["--bytes", "6"], "multiple of 4"),
    (["--test", "G0->G1"], "GPU 0 does not exist"),
    (["--test", "C0->Q0->C0"], "invalid executor"),
    (["--matrix", "p2p"], "needs GPUs"),
    (["--matrix", "x2y"], "unknown --matrix"),
    (["--config", "/nonexistent/x.cfg"], "cannot read --config"),
    (["--method", "magic"], "unknown --method"),
    (["--devices", "3"], "out of range"),
])
def test_bad_input(capsys, db, args, words):
    if "needs GPUs" in words and __import__("torch").cuda.is_available():
        pytest.skip("this host has GPUs")
    if "GPU 0 does not exist" in words and __import__("torch").cuda.is_available():
        pytest.skip("this host has GPUs")
    code, out, err = cli(capsys, "transfer", *args, "--db", db)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), err
    assert words in err and "Traceback" not in out + err


def test_a_config_that_is_not_utf8_is_one_line(capsys, db, tmp_path):
    cfg = tmp_path / "latin1.cfg"
    cfg.write_bytes(b"# caf\xe9\n1 1 (C0->C0->C0)\n")
    code, _, err = cli(capsys, "transfer", "--config", str(cfg), "--db", db)
    assert code == 2 and err == f"clusterbench: error: --config {cfg}: not UTF-8 text (byte 5)\n"


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_gpu_host_device_matrices(capsys, db):
    code, out, err = cli(capsys, "transfer", "--matrix", "h2d,d2h,p2p", "--method", "all",
                         "--bytes", "4M", "--iterations", "2", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["host_memory"] for r in rows if r["params"]["test"] == "h2d"} == {"pinned", "pageable"}


# -- streams, NUMA placement and pinning in place ---------------------------------------------------

SYSFS = Path(__file__).parent / "data" / "sysfs"


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
