"""Tests of clusterbench.ranks.context: what a benchmark sees on each rank."""

import socket
import threading
import time
import types
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import rankfns
from process_helpers import free_port
from rankfns import _run, run_rows

from clusterbench.envinfo import torchcheck
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks import launched
from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.env import RankEnv
from clusterbench.records import Failure, Measurement, Meta, Note, Rows, Telemetry, TelemetrySample


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ctx(rank: int, sink: list) -> RankContext:
    env = RankEnv(rank, 2, rank, 2, "127.0.0.1", 1, "local", "h")
    return RankContext(env=env, device=None, backend="gloo", options=RankOptions(), emit_fn=sink.append)


def _env(rank: int, world: int, port: int) -> RankEnv:
    return RankEnv(rank=rank, world_size=world, local_rank=0, local_world_size=1, master_addr="127.0.0.1",
                   master_port=port, launcher="torchrun", host="hostA")


@pytest.fixture
def master_store() -> Iterator[Any]:
    import torch.distributed as dist

    port = free_port()
    store = dist.TCPStore("127.0.0.1", port, 3, is_master=True, timeout=timedelta(seconds=30),
                          wait_for_workers=False)
    yield port, dist.PrefixStore("clusterbench/test", store)


def test_auto_refuses_cpu_fallback_on_amd_node(no_gpu_torch):
    with pytest.raises(UsageError) as e:
        ctxmod.resolve_device_type("auto")
    text = str(e.value)
    assert "2 AMD GPU(s) (/sys/class/drm)" in text and "a CUDA 12.6 build" in text
    assert "rocm6.2" in text and "--device cpu" in text
    with pytest.raises(UsageError, match="ROCm build"):
        ctxmod.resolve_device_type("cuda")
    assert ctxmod.resolve_device_type("cpu") == "cpu"


def test_auto_is_cpu_without_gpu_evidence(monkeypatch, no_gpu_torch):
    monkeypatch.setattr(torchcheck, "evidence", lambda root="/", use_libraries=True: [])
    assert ctxmod.resolve_device_type("auto") == "cpu"
    with pytest.raises(UsageError, match="no CUDA or ROCm GPU"):
        ctxmod.resolve_device_type("cuda")


def test_gpu_index_one_rank_per_gpu():
    assert [ctxmod.gpu_index(r, 8, 8, "h") for r in range(8)] == list(range(8))
    assert ctxmod.gpu_index(3, 8, 1, "h") == 0       # each rank bound to its own GPU by the launcher
    assert ctxmod.gpu_index(1, 2, 8, "h") == 1
    with pytest.raises(UsageError, match="16 ranks on h but 8 GPU"):
        ctxmod.gpu_index(3, 16, 8, "h")               # every rank refuses, not only ranks 8..15


def test_distinct_gpus_per_host():
    ctxmod.check_distinct_gpus([("a", "GPU-1"), ("a", "GPU-2"), ("b", "GPU-1")])
    with pytest.raises(UsageError, match="ranks 0 and 2 on a use the same GPU"):
        ctxmod.check_distinct_gpus([("a", "GPU-1"), ("a", "GPU-2"), ("a", "GPU-1")])


def test_device_identity():
    assert ctxmod.device_identity(types.SimpleNamespace(uuid="GPU-abc"), 0) == "GPU-abc"
    props = types.SimpleNamespace(uuid="", pci_domain_id=0, pci_bus_id=0x3b, pci_device_id=0)
    assert ctxmod.device_identity(props, 0) == "0000:3b:00"
    assert ctxmod.device_identity(types.SimpleNamespace(), 2) == "index 2"


def test_setup_binds_the_process_group_to_the_rank_gpu(monkeypatch):
    """Under a launcher with 4 GPUs: local rank 2 uses cuda:2 and passes device_id to
    init_process_group; two ranks that report the same GPU are refused."""
    import torch
    import torch.distributed as dist

    calls = {}
    monkeypatch.setattr(ctxmod, "resolve_device_type", lambda option: "cuda")
    monkeypatch.setattr(ctxmod, "resolve_backend", lambda option, device_type: "nccl")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.setdefault("set_device", i))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(uuid=f"GPU-{i}"))
    monkeypatch.setattr(ctxmod, "_job_store", lambda env, timeout: None)
    monkeypatch.setattr(dist, "init_process_group", lambda **kw: calls.setdefault("init", kw))

    def gather(out, obj, peers=("GPU-0", "GPU-1", None, "GPU-3")):
        for i, p in enumerate(peers):
            out[i] = ("n1", "NVIDIA H100 80GB HBM3", p or obj[2])

    monkeypatch.setattr(dist, "all_gather_object", gather)
    env = RankEnv(rank=2, world_size=4, local_rank=2, local_world_size=4, master_addr="x",
                  master_port=1, launcher="torchrun", host="n1")
    ctx = ctxmod.setup(env, RankOptions(device="cuda"))
    assert calls["set_device"] == 2 and ctx.device == torch.device("cuda", 2)
    assert calls["init"]["device_id"] == torch.device("cuda", 2) and calls["init"]["backend"] == "nccl"
    monkeypatch.setattr(dist, "all_gather_object",
                        lambda out, obj: gather(out, obj, peers=("GPU-0", "GPU-2", None, "GPU-3")))
    with pytest.raises(UsageError, match="ranks 1 and 2 on n1 use the same GPU"):
        ctxmod.setup(env, RankOptions(device="cuda"))


def test_np_zero_rejected():
    with pytest.raises(UsageError):
        _run(rankfns.sum_ranks, {}, 0)


def test_a_huge_exception_message_is_one_short_line_under_a_launcher(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    outcome, _ = run_rows(rankfns.raise_huge, {"rank": 0}, np=None)
    assert outcome.status == "incomplete" and len(outcome.errors) == 1
    assert "RuntimeError: xxx" in outcome.errors[0] and len(outcome.errors[0]) < 400


def test_a_master_addr_no_lookup_can_find_is_refused_at_once():
    env = RankEnv(rank=0, world_size=2, local_rank=0, local_world_size=1, master_addr="a..b",
                  master_port=_free_port(), launcher="torchrun", host="h")
    with pytest.raises(UsageError, match="MASTER_ADDR 'a..b'"):
        ctxmod.setup(env, RankOptions(device="cpu", timeout=2.0))


def test_context_methods_send_typed_events_from_rank0_only():
    sink: list = []
    ctx = _ctx(0, sink)
    m = Measurement("stream", "bandwidth", 1.0, "GB/s", {"kernel": "Copy"})
    ctx.record([m])
    ctx.note("skipped x")
    ctx.fail("check failed")
    ctx.meta({"threads": 2})
    ctx.telemetry([TelemetrySample(0.0, "cpu_utilization", 5.0, "%", "h")])
    assert [type(e) for e in sink] == [Rows, Note, Failure, Meta, Telemetry]
    assert sink[0].measurements == (m,) and sink[2].reason == "check failed"
    other: list = []
    worker = _ctx(1, other)
    worker.record([m])
    worker.note("x")
    assert other == []


def test_waiting_for_rank_0_says_so_once_then_gives_up(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    wait = 1.0   # the notice comes after half of it
    with pytest.raises(ClusterbenchError) as e:
        ctxmod._wait_for_store(_env(1, 4, port), "rank 0", time.monotonic() + wait, wait)
    assert str(e.value) == (f"rank 0 never came: nothing listened at 127.0.0.1:{port} (MASTER_ADDR:MASTER_PORT) "
                            "within 1 s (--timeout)")
    err = capsys.readouterr().err
    assert err == (f"clusterbench: warning: rank 1 on hostA: waiting for rank 0 at 127.0.0.1:{port} "
                   "(MASTER_ADDR:MASTER_PORT): nothing listens there yet; 4 ranks expected, giving up after "
                   "1 s (--timeout)\n")
    assert ctxmod.joining() is None


def test_waiting_for_rank_0_ends_when_it_listens() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        ctxmod._wait_for_store(_env(1, 2, port), "rank 0", time.monotonic() + 30, 30)
    assert ctxmod.joining() is None


def test_waiting_for_the_other_ranks_counts_them_then_gives_up(master_store: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    port, store = master_store
    store.add("joined", 1)   # rank 0 is there; rank 2 never comes
    with pytest.raises(ClusterbenchError) as e:
        ctxmod._wait_for_peers(store, _env(1, 3, port), time.monotonic() + 1.0, 1.0)
    assert str(e.value) == f"1 rank never joined at 127.0.0.1:{port} (2 of 3 ranks joined) within 1 s (--timeout)"
    assert capsys.readouterr().err == (f"clusterbench: warning: rank 1 on hostA: waiting for the other ranks at "
                                       f"127.0.0.1:{port} (2 of 3 ranks joined); giving up after 1 s (--timeout)\n")
    assert ctxmod.joining() is None


def test_waiting_for_the_other_ranks_ends_when_the_last_joins(master_store: Any) -> None:
    port, store = master_store
    store.add("joined", 1)
    late = threading.Timer(0.3, lambda: store.add("joined", 1))
    late.start()
    try:
        ctxmod._wait_for_peers(store, _env(1, 3, port), time.monotonic() + 30, 30)
    finally:
        late.join()
    assert int(store.add("joined", 0)) == 3 and ctxmod.joining() is None


def _watchdog_end(monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """The watchdog of rank 1 of 2 (--timeout 0.1 s) run until it ends the rank: the first
    message and exit code it ends it with (its _end recorded, not run)."""
    ended: list[tuple[str, int]] = []
    done = threading.Event()

    def end(self: Any, msg: str, code: int, signum: int | None) -> None:
        ended.append((msg, code))
        done.set()

    monkeypatch.setattr(launched._Watchdog, "_end", end)
    dog = launched._Watchdog(0.1, _env(1, 2, 1), lambda _m, _s: None)
    dog.start()
    try:
        assert done.wait(30)
    finally:
        dog.stop()
    return ended[0]


def test_the_watchdog_names_what_the_rank_still_waits_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a launcher the watchdog ends a rank stuck at --timeout: while the group gathers it
    says for whom, not "no progress"."""
    monkeypatch.setattr(ctxmod, "_joining", "rank 0 never came: nothing listened at h:1 (MASTER_ADDR:MASTER_PORT)")
    monkeypatch.setattr(ctxmod, "_join_started", time.monotonic())
    assert _watchdog_end(monkeypatch) == ("rank 1 on hostA: rank 0 never came: nothing listened at h:1 "
                                          "(MASTER_ADDR:MASTER_PORT) within 0.1 s (--timeout)", 1)


def test_the_watchdog_does_not_count_a_ranks_own_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a rank begins to gather its group (importing PyTorch, on a busy node longer than a
    short --timeout) no peer is involved: the watchdog says it did not start, at its own bound,
    never "no progress" blaming a peer at --timeout."""
    monkeypatch.setattr(ctxmod, "_join_started", None)
    monkeypatch.setattr(launched._Watchdog, "STARTUP_S", 0.3)
    msg, _code = _watchdog_end(monkeypatch)
    assert msg == "rank 1 on hostA: did not start within 0.3 s (importing PyTorch, opening its device)"
