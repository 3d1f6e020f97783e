"""Known devices' datasheet peaks (``data/peaks.yaml``) and percent-of-peak.

Lookup is by the name PyTorch reports (``torch.cuda.get_device_name()``), matched whole: an
``H200`` pattern does not match "H200 NVL" or "GH200", and "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
(a MIG slice) matches no H100. An unknown device is not an error: every lookup returns ``None``
and reports simply show no percentage. Nor does a partition of a GPU (a MIG slice, an MI300X in
CPX or NPS4 mode: ``partition_of``), whose peaks are a fraction of the whole GPU's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class DevicePeaks:
    id: str
    names: tuple[str, ...]
    source: str
    hbm_gbs: float | None = None
    tflops: dict[str, float] = field(default_factory=dict)
    links: dict[str, float] = field(default_factory=dict)

    def matches(self, device_name: str) -> bool:
        name = " ".join(device_name.split())
        return any(re.fullmatch(p, name, re.IGNORECASE) for p in self.names)


def _from_dict(d: dict[str, Any]) -> DevicePeaks:
    return DevicePeaks(
        id=str(d["id"]), names=tuple(d.get("names") or [d["id"]]), source=str(d.get("source", "")),
        hbm_gbs=float(d["hbm_gbs"]) if d.get("hbm_gbs") is not None else None,
        tflops={k: float(v) for k, v in (d.get("tflops") or {}).items()},
        links={k: float(v) for k, v in (d.get("links") or {}).items()},
    )


@lru_cache(maxsize=1)
def table() -> tuple[DevicePeaks, ...]:
    import yaml  # here: most commands never read the table, and yaml is 10 ms of start-up

    text = resources.files("clusterbench").joinpath("data/peaks.yaml").read_text()
    return tuple(_from_dict(d) for d in yaml.safe_load(text)["devices"])


def lookup(device_name: str | None) -> DevicePeaks | None:
    """The peaks of a device by its PyTorch name, or None when it is not in the table."""
    if not device_name:
        return None
    for dev in table():
        if dev.matches(device_name):
            return dev
    return None


# Partition modes in which one visible device is the whole AMD GPU.
WHOLE_GPU_MODES = ("SPX", "NPS1")


def partition_of(device_name: str | None, inventories: dict[str, Any] | None = None) -> str | None:
    """What fraction of a GPU the device is, when it is not a whole one: ``MIG 1g.10gb`` from
    the name, or an AMD compute/memory partition mode (``CPX/NPS4``) from the hosts' inventories
    (``run.meta["inventory"]``: host -> inventory); None for a whole GPU or when unknown."""
    m = re.search(r"\bMIG\b.*", device_name or "", re.IGNORECASE)
    if m:
        return m.group(0).strip()
    modes = set()
    for inv in (inventories or {}).values():
        if not isinstance(inv, dict):
            continue
        for g in list(inv.get("gpus") or []) + list(inv.get("amdgpu") or []):
            if not isinstance(g, dict):
                continue
            cp, mp = (g.get("compute_partition") or ""), (g.get("memory_partition") or "")
            if (cp and cp.upper() not in WHOLE_GPU_MODES) or (mp and mp.upper() not in WHOLE_GPU_MODES):
                modes.add(f"{cp or '?'}/{mp or '?'}".upper())
    return ", ".join(sorted(modes)) or None


def hbm_bandwidth(device_name: str | None, partition: str | None = None) -> float | None:
    dev = None if partition else lookup(device_name)
    return dev.hbm_gbs if dev else None


def dense_tflops(device_name: str | None, dtype: str, partition: str | None = None) -> float | None:
    dev = None if partition else lookup(device_name)
    return dev.tflops.get(dtype) if dev else None


def peak_of(kind: str, device_name: str | None, params: dict[str, Any],
            partition: str | None = None) -> float | None:
    """The datasheet figure a metric declares it is held against (``Metric.peak``):
    ``memory_bandwidth`` (HBM, GB/s) or ``dense_tflops`` (TFLOP/s for the row's ``dtype``);
    None for a partition of a GPU."""
    if kind == "memory_bandwidth":
        return hbm_bandwidth(device_name, partition)
    if kind == "dense_tflops":
        return dense_tflops(device_name, str(params.get("dtype", "")), partition)
    return None


def percent(value: float, peak: float | None) -> float | None:
    """``value`` as percent of ``peak``; None when the peak is unknown. Divided first where
    multiplying first overflows (100 x 1.7e308 is inf, 1.7e308 / 5300 x 100 is not), multiplied
    first where dividing first underflows (5e-324 / 5300 is 0)."""
    if peak is None or peak <= 0:
        return None
    p = 100.0 * value / peak
    return p if math.isfinite(p) or not math.isfinite(value) else value / peak * 100.0


def device_name_for(label: str, device_names: dict[str, str] | None, rank_devices: list[str]) -> str | None:
    """The device name behind a record's ``device`` label (``cuda:1``, ``cpu``).

    ``device_names`` is the run's ``meta["device_names"]`` (label -> name) when stored; during a
    live run only the per-rank names are known, which identify the device when they all agree.
    """
    if device_names and label in device_names:
        return device_names[label]
    uniq = set(rank_devices)
    return next(iter(uniq)) if len(uniq) == 1 else None


def transfer_peak(device_name: str | None, test: str, src: str, dst: str, direction: str,
                  partition: str | None = None) -> float | None:
    """The datasheet bound for one transfer measurement, in GB/s per direction, or None.

    Datasheet link figures are bidirectional totals, so one direction gets half:
    host<->GPU: PCIe / 2; GPU->GPU: NVLink / 2 (NVIDIA, any pair through NVSwitch) or one
    Infinity Fabric link / 2 (AMD, direct mesh), the whole fabric / 2 for a row total of an
    all-to-all; a local copy (same GPU) reads and writes, so HBM / 2. Bidirectional: twice that.
    """
    dev = None if partition else lookup(device_name)
    if dev is None:
        return None
    factor = 2.0 if direction == "bi" else 1.0
    if test in ("h2d", "d2h"):
        peak = dev.links.get("pcie_gbs")
        return peak / 2 * factor if peak else None
    if src == dst and src.startswith("G"):
        return dev.hbm_gbs / 2 if dev.hbm_gbs else None
    if dst == "*":  # a row total: everything one GPU sends
        peak = dev.links.get("nvlink_gbs") or dev.links.get("infinity_fabric_gbs")
    else:
        peak = dev.links.get("nvlink_gbs") or dev.links.get("infinity_fabric_link_gbs")
    return peak / 2 * factor if peak else None
