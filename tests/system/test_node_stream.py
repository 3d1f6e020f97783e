"""System tests (node stream): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import node_doubles

from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure


def test_wrong_kernel_fails_the_run():
    events = []
    cfg = StreamConfig(sizes=(2048,), numtimes=4, backend=node_doubles.WrongOneElement)
    outcome = execute(Job(stream_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    assert outcome.status == "complete"  # the ranks finished; the check failure is an event
    fails = [e.reason for e in events if isinstance(e, Failure)]
    assert fails and fails[0].startswith("stream check failed on cpu (array size 2048): array ")
