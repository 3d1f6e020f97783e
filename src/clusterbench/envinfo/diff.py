"""Config drift: what differs between two inventories (two runs, or two hosts of one run).

An inventory is flattened into dotted keys (``nics.ens1f0.mtu``, ``gpus.3.compute_partition``),
lists of records keyed by their natural id (a NIC by name, a GPU by index, a PCI function by
address), so a reordered list is not a difference. Keys that identify a host rather than
configure it (serial numbers, MAC addresses, UUIDs, GID values) and readings that change by
themselves (collection time) are left out unless asked for: they differ between any two hosts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# List items are keyed by their natural id (by the list's name), so reordering is no difference;
# GPUs by index, since eight GPUs share one name.
_ITEM_KEYS = {"gpus": "index", "amdgpu": "card", "pcie": "bdf", "nics": "name", "rdma": "name",
              "ports": "port", "gids": "index", "numa_nodes": "node", "ranks": "rank"}
# Per-host identity: always differs between hosts, so only shown with show_identity=True.
IDENTITY = re.compile(
    r"(^host$|\.uuid$|\.serial|\.serial_number$|\.unique_id$|\.address$|node_guid$|\.gid$|"
    r"^virtualization\.container_evidence|\.lid$|"
    # a cgroup's path names the container or job (docker-<id>.scope, job_1234), not its limits
    r"^cgroup\.path$|^cgroup\.\w+_at$)"
)
# Readings, not configuration.
VOLATILE = re.compile(r"(^collected_at$|^gpu_library_errors\.|\.carrier$|^memory\.hugepages_free$)")

CATEGORIES = (
    ("versions", "versions"), ("drivers", "versions"), ("env", "environment"),
    ("gpus", "gpus"), ("amdgpu", "gpus"), ("pcie", "pcie"), ("nics", "network"),
    ("rdma", "network"), ("cpu", "host"), ("memory", "host"), ("os", "host"),
    ("virtualization", "host"),
    # what this process was given of the host: a container's or a job's limits, its CPUs
    ("cgroup", "context"), ("process", "context"), ("netns", "context"), ("ranks", "context"),
)


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    category: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "category": self.category, "a": self.a, "b": self.b}


def _item_id(list_name: str, item: Any, position: int) -> str:
    key = _ITEM_KEYS.get(list_name)
    if key and isinstance(item, dict) and item.get(key) is not None:
        return str(item[key])
    return str(position)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": [{"name": "x", "v": 1}]}}`` -> ``{"a.b.x.v": 1}``; scalar lists stay whole."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}.{_item_id(prefix.rsplit('.', 1)[-1], v, i)}"))
    else:
        out[prefix] = value
    return out


def category(key: str) -> str:
    head = key.split(".", 1)[0]
    for prefix, cat in CATEGORIES:
        if head == prefix:
            return cat
    return "other"


def _empty(value: Any) -> bool:
    """Nothing stored: an empty section on one side and none on the other is no difference
    (an imported run's ``versions`` is ``{}``, another's holds keys, each its own line)."""
    return value is None or value == {} or value == []


def diff(a: dict[str, Any], b: dict[str, Any], show_identity: bool = False) -> list[Difference]:
    """Every key whose value differs, or that only one side has (its other side is None)."""
    fa, fb = flatten(a), flatten(b)
    out = []
    for key in sorted(set(fa) | set(fb)):
        if VOLATILE.search(key) or (not show_identity and IDENTITY.search(key)):
            continue
        va, vb = fa.get(key), fb.get(key)
        if va != vb and not (_empty(va) and _empty(vb)):
            out.append(Difference(key, va, vb, category(key)))
    return out


def run_environment(run: Any, host: str | None = None) -> dict[str, Any]:
    """One host's environment as stored with a run: its inventory, overlaid with the run's
    versions and NCCL/RCCL/UCX environment (which runs imported or stored before inventories
    existed still carry)."""
    stored_by_host = inventories(run)
    if host is None:
        host = next(iter(stored_by_host), run.hosts[0] if run.hosts else None)
    stored = stored_by_host.get(host) if host is not None else None
    inv = dict(stored) if isinstance(stored, dict) else {}
    versions = dict(run.versions or {})
    if isinstance(inv.get("versions"), dict):
        versions.update(inv["versions"])
    inv["versions"] = versions
    inv.setdefault("env", dict(run.env or {}))
    inv.setdefault("host", host)
    return inv


def inventories(run: Any) -> dict[str, Any]:
    """``run.meta["inventory"]``, or {} when it is not a mapping of hosts: an imported run line
    carries whatever meta its file held."""
    found = (run.meta or {}).get("inventory")
    return found if isinstance(found, dict) else {}


def run_hosts(run: Any) -> list[str]:
    return list(inventories(run)) or list(run.hosts or [])
