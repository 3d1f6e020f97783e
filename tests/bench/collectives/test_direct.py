"""Tests of clusterbench.bench.collectives.direct: ``--engine nccl``, the library called directly.

No GPU here: the library is tests/helpers/fake_nccl.py, which checks each call as ctypes and
NCCL would and records it. The buffers are host tensors (their addresses are what the engine
passes), so every op's pointers, counts, types, operators, roots, peers and groups are checked
against nccl-tests' conventions; on a one-rank communicator the fake carries the ops out, and
the whole sweep runs, fills and checks its data through the engine. Real GPUs:
tests/system/test_coll.py (``gpu``).
"""

from __future__ import annotations

import pytest
import torch
from fake_nccl import COMM, STREAM, FakeNccl

from clusterbench.bench.collectives import calls, direct, nccl, rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import DTYPES, OPS, SPECS, element_size
from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.env import RankEnv
from clusterbench.records import Note, Rows

FUNCTION = {"all_reduce": "ncclAllReduce", "all_gather": "ncclAllGather", "reduce_scatter": "ncclReduceScatter",
            "broadcast": "ncclBroadcast", "reduce": "ncclReduce", "alltoall": "ncclAlltoAll"}


def _engine(n: int, rank_: int, **kw) -> direct.DirectEngine:
    lib = nccl.Nccl(FakeNccl(nranks=n, **kw), "/opt/nccl/lib/libnccl.so.2")
    lib.lib.made.add(COMM + rank_)
    return direct.DirectEngine(lib, COMM + rank_, None, STREAM)


def _buffers(op: str, per: int, n: int, dtype: str):
    send, recv = calls.buffer_elements(op, per, n)
    dt = calls.torch_dtype(dtype)
    return torch.zeros(max(send, 1), dtype=dt), torch.zeros(max(recv, 1), dtype=dt)


def _span(t: torch.Tensor) -> range:
    return range(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size())


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("op", [op for op in OPS if op != "sendrecv"])
def test_each_op_is_one_library_call_on_nccl_tests_buffers(op, n):
    per, dtype, redop, root = 8, "bfloat16", "max", n - 1
    elt = element_size(dtype)
    for me in range(n):
        for placement in ("out", "in"):
            engine = _engine(n, me)
            send, recv = _buffers(op, per, n, dtype)
            engine.bind(op, placement, send, recv, per, me, n, root, redop, dtype).issue()
            (call,) = engine.nccl.lib.calls[1:]          # after ncclGetVersion: the op, nothing else
            a = call.args
            assert call.name == FUNCTION[op] and call.group is None
            assert (a["count"], a["datatype"], a["comm"], a["stream"]) == (per, nccl.TYPES[dtype], COMM + me, STREAM)
            if SPECS[op].reduces:
                assert a["op"] == nccl.REDOPS[redop]
            if SPECS[op].has_root:
                assert a["root"] == root
            if placement == "out":   # distinct buffers, the send buffer untouched by the op
                assert a["send"] == send.data_ptr() and a["recv"] == recv.data_ptr()
                assert a["send"] not in _span(recv) and a["recv"] not in _span(send)
            elif op == "all_gather":   # nccl-tests: sendbuff = recvbuff + rank * count
                assert a["send"] == recv.data_ptr() + me * per * elt and a["recv"] == recv.data_ptr()
            elif op == "reduce_scatter":   # recvbuff = sendbuff + rank * recvcount
                assert a["send"] == send.data_ptr() and a["recv"] == send.data_ptr() + me * per * elt
            else:
                assert a["send"] == a["recv"] == recv.data_ptr()


@pytest.mark.parametrize("placement", ["out", "in"])
def test_sendrecv_is_one_group_to_the_next_rank_from_the_previous(placement):
    n, per = 3, 4
    for me in range(n):
        engine = _engine(n, me)
        send, recv = _buffers("sendrecv", per, n, "float")
        engine.bind("sendrecv", placement, send, recv, per, me, n, 0, "none", "float").issue()
        names = [c.name for c in engine.nccl.lib.calls[1:]]
        assert names == ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"]
        s, r = engine.nccl.lib.named("ncclSend")[0], engine.nccl.lib.named("ncclRecv")[0]
        assert s.group == r.group == 1
        assert (s.args["peer"], r.args["peer"]) == ((me + 1) % n, (me - 1) % n)
        assert s.args["count"] == r.args["count"] == per
        assert r.args["recv"] == recv.data_ptr()
        assert s.args["send"] == (send.data_ptr() if placement == "out" else recv.data_ptr())


def test_alltoall_without_the_librarys_call_is_grouped_sends_as_nccl_tests_falls_back():
    n, per, dtype = 3, 4, "double"
    engine = _engine(n, 1, missing=("ncclAlltoAll", "ncclAllToAll"))
    assert engine.describe()["alltoall"] == "ncclSend/ncclRecv"
    send, recv = _buffers("alltoall", per, n, dtype)
    engine.bind("alltoall", "out", send, recv, per, 1, n, 0, "none", dtype).issue()
    calls_ = engine.nccl.lib.calls[1:]
    assert calls_[0].name == "ncclGroupStart" and calls_[-1].name == "ncclGroupEnd"
    chunk = per * element_size(dtype)
    assert [(c.name, c.args["peer"], c.args.get("send", c.args.get("recv"))) for c in calls_[1:-1]] == [
        x for peer in range(n) for x in (("ncclSend", peer, send.data_ptr() + peer * chunk),
                                         ("ncclRecv", peer, recv.data_ptr() + peer * chunk))]


def test_a_failed_call_raises_with_the_librarys_words():
    engine = _engine(2, 0, fail={"ncclAllReduce": 3})
    send, recv = _buffers("all_reduce", 4, 2, "float")
    with pytest.raises(nccl.NcclError, match=r"^ncclAllReduce: invalid usage: the fake refused it"):
        engine.bind("all_reduce", "out", send, recv, 4, 0, 2, 0, "sum", "float").issue()


def test_every_type_and_operator_reaches_the_library_as_its_enumeration():
    for dtype in DTYPES:
        for redop in nccl.REDOPS:
            engine = _engine(2, 0)
            send, recv = _buffers("reduce", 4, 2, dtype)
            engine.bind("reduce", "out", send, recv, 4, 0, 2, 1, redop, dtype).issue()
            a = engine.nccl.lib.named("ncclReduce")[0].args
            assert (a["datatype"], a["op"], a["root"]) == (nccl.TYPES[dtype], nccl.REDOPS[redop], 1)


def test_rank_zero_shares_the_unique_id_through_the_store():
    import torch.distributed as dist

    store = dist.HashStore()
    made = []
    assert direct.share_unique_id(store, 0, lambda: made.append(1) or b"u" * 128) == b"u" * 128
    assert direct.share_unique_id(store, 1, lambda: pytest.fail("only rank 0 makes it")) == b"u" * 128
    assert made == [1]


class _Ctx:
    rank, world_size, device_type, store = 0, 1, "cpu", None


def test_the_engine_wants_gpu_ranks_and_a_store():
    with pytest.raises(UsageError, match="--engine nccl calls the NCCL/RCCL library on GPU ranks; these ranks run "
                                         "on cpu: use --engine torch"):
        direct.open_engine(_Ctx())

    class NoStore(_Ctx):
        device_type = "cuda"

    with pytest.raises(nccl.NcclError, match="no rendezvous store"):
        direct.open_engine(NoStore())


# -- the whole sweep through the engine, one rank ---------------------------------------------

@pytest.fixture
def one_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    events: list = []
    env = RankEnv(0, 1, 0, 1, "127.0.0.1", 0, "local", "h")
    ctx = RankContext(env=env, device=torch.device("cpu"), backend="gloo", options=RankOptions(device="cpu"),
                      emit_fn=events.append)
    yield ctx, events
    dist.destroy_process_group()


@pytest.mark.parametrize("op", OPS)
def test_a_sweep_through_the_engine_fills_runs_and_checks_every_placement(one_rank, op):
    ctx, events = one_rank
    engine = _engine(1, 0)
    config = build_config(op, minbytes="64", maxbytes="1K", stepfactor=4, iters=3, warmup_iters=1,
                          datatype="float,int8,uint64")
    rank.run_op(ctx, config, op, engine)
    ms = [m for e in events if isinstance(e, Rows) for m in e.measurements]
    wrong = [m for m in ms if m.metric == "wrong"]
    rows = {(m.params["dtype"], m.params["bytes"], m.params["placement"]) for m in ms if m.metric == "busbw"
            and "placement" in m.params}
    assert {p for _, _, p in rows} == {"out", "in"}
    assert {d for d, _, _ in rows} == {"float", "int8", "uint64"}   # the library has every type
    assert wrong and all(m.value == 0 for m in wrong)
    assert {m.params["placement"] for m in wrong} == ({"out"} if not SPECS[op].in_place_checked else {"out", "in"})
    # the library, not torch.distributed, ran the op: one call per iteration and check
    assert engine.nccl.lib.named(FUNCTION.get(op, "ncclSend"))
    notes = [e.text for e in events if isinstance(e, Note)]
    assert not any("copied" in t for t in notes)      # the torch engine's caveat is not this engine's
    header = next(e.data for e in events if hasattr(e, "data") and f"coll_sweep.{op}" in e.data)
    assert header[f"coll_sweep.{op}"]["engine"] == "nccl"
    assert header[f"coll_sweep.{op}"]["version"] == "NCCL 2.30.7"


def test_a_type_the_library_refuses_is_skipped_in_one_line(one_rank):
    ctx, events = one_rank
    engine = _engine(1, 0, fail={"ncclAllReduce": 5})
    config = build_config("all_reduce", minbytes="64", maxbytes="64", iters=1, warmup_iters=0)
    rank.run_op(ctx, config, "all_reduce", engine)
    notes = [e.text for e in events if isinstance(e, Note)]
    assert not [e for e in events if isinstance(e, Rows)]
    assert notes == ["all_reduce: skipped float sum: NCCL 2.30.7 cannot run it (NcclError: ncclAllReduce: "
                     "invalid usage: the fake refused it (/opt/nccl/lib/libnccl.so.2))"]
