"""The environments stored with runs: each host's inventory (``env show``) and what differs
between two of them, or between one and this host now (``env diff``). Read from the database
here; ``envinfo`` holds the inventory itself and the diff of two."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from clusterbench.envinfo import diff as envdiff
from clusterbench.envinfo import inventory
from clusterbench.errors import UsageError
from clusterbench.records import Run
from clusterbench.store import Store
from clusterbench.store.runs import select_runs

Db = str | os.PathLike[str] | None
LOCAL = "local"   # the side of a diff that is this host, now


@dataclass(frozen=True)
class HostEnvironment:
    """One host's environment as a run stored it; ``full``: False where the run stored no
    inventory, only versions and environment variables."""

    run: Run
    host: str
    inventory: dict[str, Any]
    full: bool


@dataclass(frozen=True)
class NoHosts:
    """A run that stored no hosts (an imported log that names none): no inventory to show."""

    run: Run


def stored_environments(db: Db, selectors: Iterable[str], host: str | None = None,
                        since: str | None = None) -> Iterator[HostEnvironment | NoHosts]:
    """Each host's environment of every run the selectors pick (only ``host`` where given, which
    every run must have: UsageError), in run order; yielded one by one, so what comes before a
    run without ``host`` is shown before the error."""
    for run in select_runs(db, selectors, since):
        hosts = envdiff.run_hosts(run)
        if host is not None:
            if host not in hosts:
                raise UsageError(f"run {run.id} has no host {host!r} (hosts: {', '.join(hosts) or 'none'})")
            hosts = [host]
        if not hosts:
            yield NoHosts(run)
            continue
        full = bool(envdiff.inventories(run))
        for h in hosts:
            yield HostEnvironment(run, h, envdiff.run_environment(run, h), full)


@dataclass(frozen=True)
class EnvDiff:
    """The differences between two environments, each side named as ``env diff`` prints it."""

    differences: list[envdiff.Difference]
    left: str
    right: str


def _one(store: Store, selector: str, since: str | None) -> Run:
    runs = store.select(selector, since)
    if len(runs) != 1:
        raise UsageError(f"selector {selector!r} matches {len(runs)} runs "
                         f"({', '.join(str(r.id) for r in runs[:5])}{', ...' if len(runs) > 5 else ''}); "
                         "give one run, e.g. last or a run id")
    return runs[0]


def _side(store: Store, selector: str, host: str | None, since: str | None) -> tuple[dict[str, Any], str]:
    if selector == LOCAL:
        inv = inventory.collect()
        return inv, f"this host ({inv['host']}, now)"
    run = _one(store, selector, since)
    hosts = envdiff.run_hosts(run)
    if host is not None and host not in hosts:
        raise UsageError(f"run {run.id} has no host {host!r} (hosts: {', '.join(hosts) or 'none'})")
    inv = envdiff.run_environment(run, host)
    note = "" if envdiff.inventories(run) else ", versions and env only: no inventory stored"
    return inv, f"run {run.id} ({inv.get('host') or '?'}{note})"


def environment_diffs(db: Db, run_a: str, run_b: str | None, hosts: Sequence[str] = (),
                      since: str | None = None, show_identity: bool = False) -> Iterator[EnvDiff]:
    """What differs between the environments of ``run_a`` and ``run_b`` (each one run, or
    ``local``: this host now; ``hosts``: the host to take from each), or, without ``run_b``,
    between hosts of ``run_a``: ``hosts`` A and B, or every host against the first. One
    ``EnvDiff`` per pair, yielded as each is found."""
    with Store.open_to_read(db) as store:
        if run_b is not None:
            ha = hosts[0] if hosts else None
            hb = hosts[1] if len(hosts) > 1 else ha
            a, left = _side(store, run_a, ha, since)
            b, right = _side(store, run_b, hb, since)
            yield EnvDiff(envdiff.diff(a, b, show_identity), left, right)
            return
        if run_a == LOCAL:
            raise UsageError("give RUN_B to compare this host with, or a stored multi-host RUN_A")
        run = _one(store, run_a, since)
        all_hosts = envdiff.run_hosts(run)
        if len(hosts) == 2:
            pairs = [(hosts[0], hosts[1])]
        elif len(all_hosts) >= 2:
            pairs = [(all_hosts[0], h) for h in all_hosts[1:]]
        else:
            raise UsageError(f"run {run.id} has {len(all_hosts)} host(s): give RUN_B, or --hosts A,B of a multi-host run")
        selector = str(run.id)
        for ha, hb in pairs:
            a, left = _side(store, selector, ha, None)
            b, right = _side(store, selector, hb, None)
            yield EnvDiff(envdiff.diff(a, b, show_identity), left, right)
