"""Which peer ranks went away, for ranks under a launcher.

A rank whose process ends mid-run (killed, its host gone: torchrun's agent exits 137) leaves rank
0 only a communication error that names an address (gloo's "Connection reset by peer
[10.0.0.2]:25003"), a collective that never returns, or the SIGTERM its own launcher sends when
it tears the group down. Stored as such, the run blamed rank 0 ("interrupted by SIGTERM") for a
host that died, or was not stored at all: the SIGKILL that follows the SIGTERM came first. So
every rank beats a counter in the job's store, once as it joins the group and then from a thread
of its own with a connection of its own, and says when it is done; rank 0's thread also reads
every peer's counter as it beats, so that when its run ends early it can say at once (a launcher
gives it seconds, not minutes) which peers' counters stood still ``QUIET_S``: those that never
said they were done are gone, and rank 0 names them and their hosts. A peer is judged only once
its counter moved: one that could not reach the store is never blamed for that. (Local ranks
need none of this: the command sees each of its ranks' pipes, ``ranks/local.py``.)
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import timedelta
from typing import Any

BEAT_S = 0.5    # a rank adds one to its counter this often
QUIET_S = 2.5   # a counter that stood still this long: its rank is gone
_STORE_S = 10.0  # a store operation of the watch itself waits no longer (a store gone with its host)


def _client(addr: str, port: int, world_size: int, prefix: str) -> Any:
    import torch.distributed as dist

    store = dist.TCPStore(addr, port, world_size, is_master=False, timeout=timedelta(seconds=_STORE_S),
                          wait_for_workers=False)
    return dist.PrefixStore(prefix, store)


class PeerWatch:
    """This rank's counter, beaten while it runs; on rank 0 also every peer's, read as it beats,
    and the question who is gone."""

    def __init__(self, addr: str, port: int, world_size: int, rank: int, hosts: list[str], prefix: str,
                 clock: Any = time.monotonic) -> None:
        self.rank, self.world_size, self.hosts = rank, world_size, list(hosts)
        self._where = (addr, port, world_size, f"{prefix}/peers")
        self._clock = clock
        self._stop = threading.Event()
        self._store: Any = None
        self._peers = [r for r in range(world_size) if r != rank] if rank == 0 else []
        self._seen: dict[int, tuple[int, float]] = {}   # peer -> (its count, when it last moved)
        self._before: dict[int, float] = {}   # peer -> when it moved the time before that
        self._beating = True
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="clusterbench-peers")

    def start(self) -> None:
        """Connect and beat once here, then go on in a thread: a rank that dies in its first
        collective has beaten by then (from a thread alone, its first beat could come after its
        first rows, and a death that early went unnamed). A store that cannot be reached leaves
        no watch: nobody is blamed for that."""
        try:
            self._store = _client(*self._where)
            self._store.add(f"beat/{self.rank}", 1)
        except Exception:  # noqa: BLE001 - the store gone: nothing to beat, and rank 0 cannot ask
            return
        self._thread.start()

    def _beat(self) -> None:
        try:
            while True:
                for r in self._peers:
                    self.saw(r, int(self._store.add(f"beat/{r}", 0)))
                if self._stop.wait(BEAT_S):
                    return
                if self._beating:
                    self._store.add(f"beat/{self.rank}", 1)
        except Exception:  # noqa: BLE001 - the store gone: nothing to beat, and rank 0 cannot ask
            return

    def saw(self, peer: int, count: int) -> None:
        """Peer ``peer``'s counter reads ``count`` now."""
        now = self._clock()
        with self._lock:
            last = self._seen.get(peer)
            if count > 0 and (last is None or last[0] != count):
                self._seen[peer] = (count, now)
                self._before[peer] = last[1] if last else now

    def moved(self) -> dict[int, float]:
        """When each peer's counter last moved (peers whose counter never moved are left out)."""
        with self._lock:
            return {r: when for r, (_, when) in self._seen.items()}

    def moved_twice_since(self, since: float) -> set[int]:
        """The peers whose counter moved twice after ``since``: alive then. Once is no proof: the
        beat that one read shows may have come before ``since``, just before the peer died."""
        with self._lock:
            return {r for r, before in self._before.items() if before > since}

    def done(self) -> None:
        """This rank ended its run: it is not gone, whatever its counter does from now on. Rank
        0 goes on reading its peers' counters (it may ask ``gone`` next) until ``stop``."""
        self._beating = False
        if not self._peers:
            self.stop()
        with contextlib.suppress(Exception):   # the store gone with its host: nothing to tell
            (self._store if not self._peers and self._store is not None else _client(*self._where)) \
                .set(f"done/{self.rank}", "1")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=_STORE_S)

    def gone(self, wait: bool = True) -> list[str]:
        """The peers (``rank R on HOST``, see ``names``) whose counter stood still ``QUIET_S``
        and that never said they were done. ``wait``: first wait (up to ``QUIET_S`` and a few
        beats) until every peer either moved twice since this call or is silent that long; else
        only those already silent count. [] where the store cannot say (gone itself)."""
        if not self._thread.is_alive():
            return []   # this rank's watch never reached the store, or has ended
        try:
            store = _client(*self._where)
            for r in set(self._peers) - self.moved().keys():   # beat, but not read by the watch yet
                self.saw(r, int(store.add(f"beat/{r}", 0)))
            ended: set[int] = set()

            def undecided(since: float) -> list[int]:
                now, alive = self._clock(), self.moved_twice_since(since)
                left = [r for r, when in self.moved().items()
                        if r not in ended and r not in alive and now - when < QUIET_S]
                ended.update(r for r in left if store.check([f"done/{r}"]))
                return [r for r in left if r not in ended]

            t0 = self._clock()
            while wait and self._clock() < t0 + QUIET_S + 3 * BEAT_S and undecided(t0):
                time.sleep(BEAT_S / 5)
            now = self._clock()
            quiet = sorted(r for r, when in self.moved().items() if now - when >= QUIET_S)
            ended.update(r for r in quiet if r not in ended and store.check([f"done/{r}"]))
        except Exception:  # noqa: BLE001 - the store went with its host: who is gone cannot be told
            return []
        return self.names([r for r in quiet if r not in ended])

    def names(self, ranks: list[int]) -> list[str]:
        """``rank R on HOST``, one per host in the order of their first rank (``ranks 8, 9 on
        HOST`` where a host ran several: a host that dies takes all of its ranks)."""
        on: dict[str, list[int]] = {}
        for r in sorted(ranks):
            on.setdefault(self.hosts[r] if r < len(self.hosts) else "?", []).append(r)
        return [f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))} on {host}"
                for host, rs in on.items()]


_current: PeerWatch | None = None


def watch(addr: str, port: int, world_size: int, rank: int, hosts: list[str], prefix: str) -> None:
    """Start this rank's counter for the process group just joined (ranks/context.py)."""
    global _current
    if _current is not None:   # the group before (--repeat runs several in one process)
        _current.stop()
    _current = PeerWatch(addr, port, world_size, rank, hosts, prefix)
    _current.start()


def done() -> None:
    """This rank's run ended (its teardown): peers that ask see it is not gone."""
    if _current is not None:
        _current.done()


def gone(wait: bool = True) -> list[str]:
    """On the rank whose run ended early: the peers that are gone (see ``PeerWatch.gone``)."""
    return _current.gone(wait) if _current is not None else []


def forget() -> None:
    """The run is over: rank 0 stops reading its peers' counters."""
    global _current
    if _current is not None:
        _current.stop()
    _current = None
