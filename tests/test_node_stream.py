"""stream: the kernel table, the analytic check, a wrong kernel caught, and the CLI on CPU."""

from __future__ import annotations

import json

import node_doubles
import pytest

from clusterbench.bench.stream import check as analytic
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.config import parse_sweep
from clusterbench.bench.stream.kernels import TorchStream
from clusterbench.bench.stream.main import StreamConfig, run_size
from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.families.stream import spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure
from clusterbench.store import Store


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_kernel_table_matches_babelstream():
    # BabelStream's counts; Nstream runs as two passes in PyTorch and counts the 6 arrays they move
    assert {k.name: k.arrays for k in spec.KERNELS} == {
        "Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    assert spec.bytes_moved("triad", 2**25, 8) == 3 * 8 * 2**25
    # BabelStream v3.3 TITAN Xp row: Triad 436491.299 MB/s at 0.00184 s, 2^25 doubles.
    assert spec.bandwidth_gbs("Triad", 2**25, 8, 0.00184) == pytest.approx(437.6, rel=1e-3)
    assert spec.ordered(["dot", "COPY", "triad"]) == ["Copy", "Triad", "Dot"]
    with pytest.raises(KeyError):
        spec.kernel("Scale")


def test_gold_follows_the_recurrence():
    g = analytic.gold(["Copy", "Mul", "Add", "Triad", "Dot"], 1, 10, "double")
    c = 0.1
    b = 0.4 * c
    c = 0.1 + b
    a = b + 0.4 * c
    assert (g.a, g.b, g.c) == pytest.approx((a, b, c))
    assert g.dot == pytest.approx(a * b * 10)


@pytest.mark.parametrize("dtype", ["float", "double"])
def test_real_kernels_pass_the_check(dtype):
    names = list(spec.NAMES)
    impl = TorchStream(4096, dtype, "cpu")
    impl.init_arrays()
    times, dot = run_size(impl, spec.ordered(names), 5, lambda fn: (fn(), 1e-3)[1], lambda: None)
    assert all(len(v) == 4 for v in times.values())
    g = analytic.gold(spec.ordered(names), 5, 4096, dtype)
    assert analytic.check(g, impl.mean_abs_errors(g.a, g.b, g.c), dot, dtype) == []


def test_wrong_kernel_in_process_is_caught():
    from node_doubles import WrongTriad

    impl = WrongTriad(1000, "double", "cpu")
    impl.init_arrays()
    kernels = spec.ordered(spec.NAMES)
    _, dot = run_size(impl, kernels, 3, lambda fn: (fn(), 1e-3)[1], lambda: None)
    g = analytic.gold(kernels, 3, 1000, "double")
    errors = analytic.check(g, impl.mean_abs_errors(g.a, g.b, g.c), dot, "double")
    assert any(e.startswith("array a") for e in errors) and any(e.startswith("Dot") for e in errors)


def test_wrong_kernel_fails_the_run():
    events = []
    cfg = StreamConfig(sizes=(2048,), numtimes=4, backend=node_doubles.WrongOneElement)
    outcome = execute(Job(stream_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    assert outcome.status == "complete"  # the ranks finished; the check failure is an event
    fails = [e.reason for e in events if isinstance(e, Failure)]
    assert fails and fails[0].startswith("stream check failed on cpu (array size 2048): array ")


def test_sweep_parsing():
    assert parse_sweep("1M:8M") == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    assert parse_sweep("1K:64K:4") == [1024, 4096, 16384, 65536]
    for bad in ("8M:1M", "0:1M", "1M", "1M:2M:1", "x:1M"):
        with pytest.raises(UsageError):
            parse_sweep(bad)


def test_cli_cpu_run_json_contract_and_store(capsys, db):
    code, out, err = cli(capsys, "stream", "-s", "64K", "-n", "4", "--float", "--json", "--db", db,
                         "--tag", "who=test")
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["benchmark"] for r in rows} == {"stream"}
    bw = [r for r in rows if r["metric"] == "bandwidth"]
    assert [r["params"]["kernel"] for r in bw] == ["Copy", "Mul", "Add", "Nstream", "Triad", "Dot"]
    for r in bw:
        assert r["unit"] == "GB/s" and r["value"] > 0
        assert r["params"] == {"kernel": r["params"]["kernel"], "array_size": 65536, "dtype": "float",
                               "device": "cpu"}
    stats = sorted(r["params"]["stat"] for r in rows if r["metric"] == "time_us")
    assert stats == sorted(["min", "max", "avg", "median", "stddev", "mad", "first"] * 6)
    with Store.open(db) as store:
        run = store.get_run(rows[0]["run"])
        assert run.status == "complete" and run.tags == {"who": "test"} and run.meta["threads"] >= 1


def test_cli_table_sweep_and_kernels(capsys, db):
    code, out, err = cli(capsys, "stream", "--sizes", "256K:512K", "-n", "3", "--kernels", "Triad,Dot",
                         "--db", db)
    assert code == 0, err
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert len(lines) == 4 and all(ln.split()[0] == "cpu" for ln in lines)
    assert [ln.split()[1] for ln in lines] == ["32768", "32768", "65536", "65536"]
    assert "not in the peaks table" in out  # this CPU has no datasheet entry: no percentage


@pytest.mark.parametrize("args,words", [
    (["-s", "0"], "must be positive"),
    (["-s", "-4"], "must be positive"),
    (["-s", "1T"], "more than the"),
    (["--dtype", "half"], "unknown dtype 'half'"),
    (["--devices", "1"], "out of range"),
    (["--kernels", "Scale"], "unknown kernel 'Scale'"),
    (["-n", "1"], "at least 2"),
    (["--sizes", "4M:1M"], "invalid --sizes"),
])
def test_bad_input(capsys, db, args, words):
    code, out, err = cli(capsys, "stream", *args, "--db", db)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), err
    assert words in err and "Traceback" not in out + err


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_every_gpu_at_once(capsys, db):
    import torch

    code, out, err = cli(capsys, "stream", "-s", "1M", "-n", "5", "--devices", "all", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    devices = {r["params"]["device"] for r in rows if r["metric"] == "bandwidth"}
    expected = {f"cuda:{i}" for i in range(torch.cuda.device_count())}
    assert expected <= devices and (len(expected) == 1 or "all" in devices)


def test_nstream_counts_what_runs():
    """Count the tensor reads and writes Nstream issues: a = a + b, then a = a + s*c."""
    import torch

    from clusterbench.bench.stream.kernels import TorchStream

    impl = TorchStream(1000, "double", torch.device("cpu"))
    impl.init_arrays()
    seen = []

    class Count(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Count():
        impl.nstream()
    # two in-place adds, each reading two arrays and writing one: 6 arrays
    assert seen == ["add_", "add_"]
    assert spec.bytes_moved("Nstream", 1000, 8) == 6 * 8 * 1000


def test_dot_and_check_work_in_chunks(monkeypatch):
    """Arrays longer than one chunk: torch.dot per chunk (cuBLAS takes at most 2^31 - 1), and the
    check's float64 temporaries stay one chunk long."""
    import torch

    from clusterbench.bench.stream import kernels

    impl = kernels.TorchStream(10_007, "float", torch.device("cpu"))
    impl.init_arrays()
    impl.b.copy_(torch.linspace(0, 1, 10_007))
    whole = float(torch.dot(impl.a.double(), impl.b.double()))
    calls = []
    real_dot = torch.dot
    monkeypatch.setattr(kernels, "DOT_CHUNK", 1000)
    monkeypatch.setattr(kernels, "CHECK_CHUNK", 999)
    monkeypatch.setattr(kernels.torch, "dot", lambda x, y: calls.append(x.numel()) or real_dot(x, y))
    assert float(impl.dot()) == pytest.approx(whole, rel=1e-6)
    assert max(calls) == 1000 and sum(calls) == 10_007
    errs = impl.mean_abs_errors(spec.START_A, 0.5, spec.START_C)
    assert errs[0] == pytest.approx(abs(float(impl.a[0]) - spec.START_A), abs=1e-12)
    assert errs[1] == pytest.approx(float((impl.b.double() - 0.5).abs().mean()), rel=1e-9)


def test_gpu_timer_queues_the_call_behind_a_device_spin(monkeypatch):
    """The start event is recorded while the device spins, so the launch cost is not timed."""
    import torch

    from clusterbench.bench import devices

    order = []

    class Event:
        def __init__(self, enable_timing=False):
            self.name = "start" if not any(o == "new start" for o in order) else "end"
            order.append(f"new {self.name}")

        def record(self):
            order.append(f"record {self.name}")

        def synchronize(self):
            order.append(f"sync {self.name}")

        def elapsed_time(self, other):
            return 2.5

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: order.append(f"spin {cycles}"), raising=False)
    time_fn = devices.timer(torch.device("cuda", 0))
    assert time_fn(lambda: order.append("kernel")) == 0.0025
    assert order[2:] == [f"spin {devices.LAUNCH_COVER_CYCLES}", "record start", "kernel", "record end", "sync end"]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_arrays_beyond_two_to_the_31_elements(capsys, db):
    """8 GiB float arrays (2^31 elements): Dot and the check must not fail; 3 arrays of 8 GiB."""
    import torch

    free = torch.cuda.mem_get_info(0)[0]
    if free < 28 << 30:
        pytest.skip("needs 28 GiB of free GPU memory")
    code, out, err = cli(capsys, "stream", "-s", str(2**31 + 1024), "--dtype", "float", "-n", "2",
                         "--kernels", "Copy,Triad,Dot", "--devices", "0", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["kernel"] for r in rows if r["metric"] == "bandwidth"} == {"Copy", "Triad", "Dot"}
