"""What hardware a profile is for, and what hardware a measurement was made on.

A profile's ``hardware`` key names the devices its thresholds hold for: ``devices`` (GPUs and
accelerators) and ``cpus``, each a list of case-insensitive regular expressions matched against the
whole name, as torch, NVML, AMD SMI, ``/proc/cpuinfo`` or the tool's log spell it (``peaks.yaml``
matches names the same way)::

    hardware:
      devices: ['(NVIDIA )?H100 80GB HBM3', '(NVIDIA )?H100[ -]SXM5?( 80GB)?( HBM3)?']
    hardware:
      cpus: ['.*']        # any CPU: a smoke test's floors

A measurement on other hardware (the MI300X profile against a CPU run) is not judged by it: its
criteria are ``skipped`` with the reason, and no 0 gauge or failed test case stands for a node the
profile was never meant for. Where a measurement's hardware is unknown (an imported log that
names no device) it is judged, as before profiles said what they are for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.records import Measurement, Run

CPU, GPU = "cpu", "gpu"
KEYS = ("devices", "cpus")
# Names importers give devices a log does not name (BabelStream's tables without a "Using ...
# device" line): no hardware
_PLACEHOLDER = re.compile(r"(device\s*)?[0-9]*", re.IGNORECASE)


@dataclass(frozen=True)
class Hardware:
    """A profile's ``hardware``: name patterns for GPUs (``devices``) and for CPUs (``cpus``)."""

    devices: tuple[str, ...] = ()
    cpus: tuple[str, ...] = ()

    def matches(self, kind: str | None, name: str) -> bool:
        """Whether a device of ``kind`` (cpu, gpu; None: not known) named ``name`` is one of these."""
        text = " ".join(name.split())
        pats = self.cpus if kind == CPU else self.devices if kind == GPU else self.devices + self.cpus
        return any(re.fullmatch(p, text, re.IGNORECASE) for p in pats)

    def describe(self) -> str:
        parts = []
        if self.devices:
            parts.append("devices " + ", ".join(self.devices))
        if self.cpus:
            parts.append("CPUs " + (", ".join(self.cpus) if self.cpus != (".*",) else "(any)"))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in (("devices", self.devices), ("cpus", self.cpus)) if v}


def parse_hardware(value: object, where: str) -> Hardware | None:
    """A profile's ``hardware`` mapping; None where the profile has none (it applies to any)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{where}: hardware must be a mapping with devices and/or cpus, e.g. "
                         "{devices: ['(NVIDIA )?H100 80GB HBM3']}")
    unknown = sorted(set(map(str, value)) - set(KEYS))
    if unknown:
        raise UsageError(f"{where}: hardware has unknown key(s) {', '.join(unknown)} (it takes devices, cpus)")
    lists: dict[str, tuple[str, ...]] = {}
    for key in KEYS:
        items = value.get(key)
        if items is None:
            continue
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list) or not items or not all(isinstance(p, str) and p for p in items):
            raise UsageError(f"{where}: hardware.{key} must be a list of name patterns")
        for p in items:
            try:
                re.compile(p)
            except re.error as e:
                raise UsageError(f"{where}: hardware.{key}: {p!r} is no regular expression ({e})") from None
        lists[key] = tuple(items)
    return Hardware(lists.get("devices", ()), lists.get("cpus", ()))


def _known(name: object) -> str | None:
    text = " ".join(str(name or "").split())
    return None if _PLACEHOLDER.fullmatch(text) else text


def measured_on(run: Run, m: Measurement) -> tuple[str | None, list[str]]:
    """The kind (cpu, gpu; None where the run does not say: an imported log) and the names of the
    devices a measurement was made on; no names where they are unknown."""
    return measured_on_device(run, m.params.get("device"))


def measured_on_device(run: Run, label: Any) -> tuple[str | None, list[str]]:
    """``measured_on`` of a record of ``run`` whose ``device`` param is ``label`` (None: none):
    all a record adds is that label, so a judgement of many records asks once per label."""
    device_type = run.meta.get("device_type")
    kind = CPU if device_type == "cpu" else GPU if device_type == "cuda" else None
    named = run.meta.get("device_names")
    names = dict(named) if isinstance(named, dict) else {}
    if isinstance(label, str) and label == "cpu":
        kind = CPU
    elif isinstance(label, str) and label.startswith("cuda"):
        kind = GPU
    if label == "all":   # a node benchmark's aggregate over every device
        found = list(names.values())
    elif label is not None and str(label) in names:
        found = [names[str(label)]]
    elif isinstance(label, (int, str)) and str(label).isdigit() and int(label) < len(run.devices):
        found = [run.devices[int(label)]]   # an imported log's device index
    else:
        found = list(run.devices)
    return kind, list(dict.fromkeys(n for n in map(_known, found) if n))


def applies(hw: Hardware, run: Run, m: Measurement) -> bool:
    """Whether a profile for ``hw`` judges this measurement: made on one of its devices, or on
    devices nobody named."""
    kind, names = measured_on(run, m)
    return not names or any(hw.matches(kind, n) for n in names)


def foreign_text(hw: Hardware, runs: dict[int | None, set[str]]) -> str:
    """Why rows were not judged: ``for devices H100...; run 3 was on AMD EPYC``."""
    on = "; ".join(f"run {rid} on {', '.join(sorted(names))}" if rid is not None else
                   f"on {', '.join(sorted(names))}" for rid, names in sorted(runs.items(), key=lambda x: str(x[0])))
    return f"not the hardware the profile is for ({hw.describe()}): {on}"


def node_problem(hw: Hardware, gpu_names: list[str], cpu_name: str | None) -> tuple[str | None, str | None]:
    """(why this node cannot be what a profile for ``hw`` is for, a doubt about it) before a
    qualification runs its suite here: a GPU profile on a node without a GPU is refused (its
    suite would run GPU shapes on the CPU for hours, then skip every criterion); GPUs none of
    whose names matches are a warning (a name the inventory spells otherwise must not stop it)."""
    if not hw.devices or (hw.cpus and cpu_name and hw.matches(CPU, cpu_name)):
        return None, None
    if not gpu_names:
        return (f"this node has no GPU{f' (CPU {cpu_name})' if cpu_name else ''}: the profile is for "
                f"{hw.describe()}"), None
    if not any(hw.matches(GPU, n) for n in gpu_names):
        return None, (f"this node's GPUs ({', '.join(sorted(set(gpu_names)))}) match none of the profile's "
                      f"{hw.describe()}: their criteria will be skipped")
    return None, None


def node_devices() -> tuple[list[str], str | None]:
    """This node's GPU names and CPU model, from its inventory (NVML, AMD SMI, torch or PCI ids)."""
    from clusterbench.envinfo import inventory

    inv = inventory.cached()
    names = [str(g.get("name")) for g in inv.get("gpus") or [] if isinstance(g, dict) and g.get("name")]
    cpu = inv.get("cpu") if isinstance(inv.get("cpu"), dict) else {}
    return names, (str(cpu.get("model")) if cpu and cpu.get("model") else None)
