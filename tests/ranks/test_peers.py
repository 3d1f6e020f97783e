"""Unit tests (ranks/peers.py): who is gone, told from counters in a real store in this process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from process_helpers import free_port

from clusterbench.ranks import peers
from clusterbench.ranks.peers import QUIET_S, PeerWatch

HOSTS = ["hostA", "hostB", "hostB", "hostC"]


class Clock:
    """A clock the test moves: silence is judged by it, not by the machine's load."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.readers: set[str] = set()   # the threads that read it
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.readers.add(threading.current_thread().name)
            return self.now

    def advance(self, s: float) -> None:
        with self._lock:
            self.now += s


_started: list[PeerWatch] = []


@pytest.fixture
def port() -> Iterator[int]:
    import torch.distributed as dist

    p = free_port()
    server = dist.TCPStore("127.0.0.1", p, 4, is_master=True, timeout=timedelta(seconds=30),
                           wait_for_workers=False)
    yield p
    while _started:   # every watch ends before its store does
        _started.pop().stop()
    del server


def _watch(port: int, rank: int, clock: Clock, world: int = 4) -> PeerWatch:
    w = PeerWatch("127.0.0.1", port, world, rank, HOSTS[:world], "clusterbench/1", clock=clock)
    _started.append(w)
    w.start()
    return w


def _until(cond: Any, what: str, bound: float = 20.0) -> None:
    end = time.monotonic() + bound
    while not cond():
        assert time.monotonic() < end, f"{what} within {bound:g} s"
        time.sleep(0.05)


def _dies(root: PeerWatch, watch: PeerWatch, port: int) -> None:
    """``watch``'s rank dies: it beats no more, and rank 0 has read its last beat (which, read
    late, would be a move at the time the test sets next)."""
    watch.stop()
    last = int(peers._client("127.0.0.1", port, 4, "clusterbench/1/peers").add(f"beat/{watch.rank}", 0))
    _until(lambda: root._seen.get(watch.rank, (0, 0.0))[0] == last, f"rank {watch.rank}'s last beat read")


def _fresh(w: PeerWatch, clock: Clock, ranks: list[int]) -> None:
    """Wait until rank 0 has read each of ``ranks`` moving at the clock's present time."""
    now = clock()
    _until(lambda: all(w.moved().get(r, -1.0) >= now for r in ranks), f"ranks {ranks} read")


@contextmanager
def _ticking(clock: Clock) -> Iterator[None]:
    """The time that passes while gone() waits, as the beats pass."""
    ticker = threading.Event()

    def tick() -> None:
        while not ticker.wait(0.05):
            clock.advance(0.05)

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield
    finally:
        ticker.set()
        t.join()


def test_a_rank_that_stops_beating_is_named_with_its_host(port: int) -> None:
    clock = Clock()
    root, others = _watch(port, 0, clock), [_watch(port, r, clock) for r in (1, 2, 3)]
    _fresh(root, clock, [1, 2, 3])
    _dies(root, others[2], port)   # rank 3 dies: its counter stands still, it never says done
    assert root.gone(wait=False) == []   # not silent long enough yet
    clock.advance(QUIET_S + 0.1)
    _fresh(root, clock, [1, 2])    # ranks 1 and 2 still beat
    assert root.gone(wait=False) == ["rank 3 on hostC"]


def test_a_host_that_dies_is_named_once_with_all_its_ranks(port: int) -> None:
    clock = Clock()
    root, others = _watch(port, 0, clock), [_watch(port, r, clock) for r in (1, 2, 3)]
    _fresh(root, clock, [1, 2, 3])
    _dies(root, others[0], port)
    _dies(root, others[1], port)   # hostB, which ran ranks 1 and 2, is gone
    clock.advance(QUIET_S + 0.1)
    _fresh(root, clock, [3])
    assert root.gone(wait=False) == ["ranks 1, 2 on hostB"]


def test_a_rank_that_said_it_was_done_is_not_gone(port: int) -> None:
    clock = Clock()
    root, one = _watch(port, 0, clock, world=2), _watch(port, 1, clock, world=2)
    _fresh(root, clock, [1])
    one.done()                     # rank 1 finished its run, then stopped beating
    clock.advance(QUIET_S + 0.1)
    assert root.gone(wait=False) == []
    assert root.gone(wait=True) == []


def test_the_wait_decides_a_peer_that_went_just_now(port: int) -> None:
    """Rank 0's collective fails the moment a peer dies (its sockets reset): the peer has been
    silent for less than QUIET_S, and gone() waits until it is decided, not answers 'none'."""
    clock = Clock()
    root, one = _watch(port, 0, clock, world=2), _watch(port, 1, clock, world=2)
    _fresh(root, clock, [1])
    one.stop()
    with _ticking(clock):
        assert root.gone(wait=True) == ["rank 1 on hostB"]


def test_a_peer_that_never_beat_is_never_blamed(port: int) -> None:
    clock = Clock()
    root = _watch(port, 0, clock, world=2)   # rank 1's watch never reached the store
    _until(lambda: root._store is not None, "rank 0's watch connected")
    clock.advance(10 * QUIET_S)
    assert root.gone(wait=True) == []


def test_a_rank_has_beaten_once_its_watch_has_started(port: int) -> None:
    """Its first collective comes after: a rank that dies in it has beaten (when the first beat
    came from the thread, it could come after the rank's first rows, or never)."""
    one = PeerWatch("127.0.0.1", port, 2, 1, HOSTS[:2], "clusterbench/1", clock=Clock())
    _started.append(one)
    one.start()
    assert int(peers._client("127.0.0.1", port, 2, "clusterbench/1/peers").add("beat/1", 0)) >= 1


def test_a_peer_that_died_before_the_watch_read_it_is_named(port: int) -> None:
    """Rank 1 beat once and died before rank 0's watch read its counter: gone() reads it."""
    clock = Clock()
    root = PeerWatch("127.0.0.1", port, 2, 0, HOSTS[:2], "clusterbench/1", clock=clock)
    root._thread = threading.Thread(target=root._stop.wait, daemon=True)   # a watch yet to read
    _started.append(root)
    root.start()
    one = _watch(port, 1, clock, world=2)
    one.stop()
    assert root.moved() == {}
    with _ticking(clock):
        assert root.gone(wait=True) == ["rank 1 on hostB"]


def test_without_a_watch_nobody_is_gone() -> None:
    peers.forget()
    assert peers.gone() == []


def _ask(root: PeerWatch, clock: Clock, answer: list[list[str]]) -> threading.Thread:
    """gone() asked in a thread of its own, returned once it has read the clock (asked)."""
    asking = threading.Thread(target=lambda: answer.append(root.gone(wait=True)), daemon=True,
                              name="asking")
    asking.start()
    _until(lambda: "asking" in clock.readers, "gone() asked")
    return asking


def test_one_beat_read_after_the_question_is_no_proof_of_life(port: int) -> None:
    """The beat a peer made just before it died may be read only after rank 0 asks: one move
    since the question leaves it undecided (before: called alive, and the host not named)."""
    clock = Clock()
    root = _watch(port, 0, clock, world=2)
    _until(lambda: root._store is not None, "rank 0's watch connected")
    root.saw(1, 1)
    answer: list[list[str]] = []
    asking = _ask(root, clock, answer)   # what follows happens after the question
    clock.advance(0.3)
    root.saw(1, 2)    # its last beat, read late
    while asking.is_alive():
        clock.advance(0.1)
        asking.join(0.05)
    assert answer == [["rank 1 on hostB"]]


def test_two_beats_after_the_question_are(port: int) -> None:
    clock = Clock()
    root = _watch(port, 0, clock, world=2)
    _until(lambda: root._store is not None, "rank 0's watch connected")
    root.saw(1, 1)
    answer: list[list[str]] = []
    asking = _ask(root, clock, answer)
    for n in (2, 3):
        clock.advance(0.5)
        root.saw(1, n)
    asking.join(10)
    assert answer == [[]]
