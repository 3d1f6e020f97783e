"""System tests (node stream): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import node_doubles
import torch

from clusterbench.bench import devices as devs
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.families.stream import spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure, Measurement, Note, Planned, Rows


def test_wrong_kernel_fails_the_run():
    events = []
    cfg = StreamConfig(sizes=(2048,), numtimes=4, backend=node_doubles.WrongOneElement)
    outcome = execute(Job(stream_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    assert outcome.status == "complete"  # the ranks finished; the check failure is an event
    fails = [e.reason for e in events if isinstance(e, Failure)]
    assert fails and fails[0].startswith("stream check failed on cpu (array size 2048): array ")


def _rows(cfg: StreamConfig) -> tuple[list[Measurement], list[str]]:
    events: list = []
    outcome = execute(Job(stream_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    assert outcome.status == "complete", outcome.errors
    rows = [m for e in events if isinstance(e, Rows) for m in e.measurements if m.metric == "bandwidth"]
    # the plan reached the command: every iteration of every size, the last one said
    plans = [e for e in events if isinstance(e, Planned)]
    assert plans[0].done == 0 and plans[-1].done == plans[-1].total == cfg.numtimes * max(1, len(cfg.sizes))
    return rows, [e.text for e in events if isinstance(e, Note)]


def test_the_default_size_measures_memory_and_a_size_in_the_cache_says_so():
    """The quick start ran 2^22 doubles (32 MiB, the L3 of the node) and called it memory."""
    llc = devs.last_level_cache(torch.device("cpu"))
    rows, notes = _rows(StreamConfig(numtimes=2, kernels=("Copy",), check=False, backend=node_doubles.SmallArrays))
    (copy,) = rows
    assert copy.params["array_size"] == spec.default_array_size(llc, 8) >= 1 << 25
    if llc is None:   # a host whose sysfs has no caches: said, and nothing labelled
        assert "memory" not in copy.params and any("last-level cache size unknown" in t for t in notes)
        return
    assert copy.params["array_size"] * 8 >= 4 * llc and copy.params["memory"] == "main"
    rows, notes = _rows(StreamConfig(sizes=(4096,), numtimes=2, kernels=("Copy",)))
    assert rows[0].params["memory"] == "cache"
    assert any(t.startswith(f"last-level cache {llc / 2**20:g} MiB on cpu") and "1 of 1 size(s)" in t for t in notes)
