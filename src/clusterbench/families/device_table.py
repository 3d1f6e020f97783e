"""What the node-benchmark tables (stream, gemm, transfer) share: which device each record's
label names, and the header lines they all begin with (run header, CPU threads, peak sources)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from clusterbench import peaks
from clusterbench.families.base import run_header_lines
from clusterbench.records import Run
from clusterbench.units import fit


def percent_cell(value: float, peak: float | None, width: int = 6) -> str:
    """A %peak cell (``94.1%``), blank where the peak is unknown; %g where a value far past
    any datasheet makes the percentage wider than the column."""
    p = peaks.percent(value, peak)
    if p is None:
        return ""
    text = f"{p:.1f}"
    if p and not text.strip("-0."):   # a value that is not 0 never reads 0.0%: %g form instead
        text = f"{p:.6g}"
    return fit(text, p, width - 1).lstrip() + "%"


class DeviceTable:
    def __init__(self) -> None:
        self._names: dict[str, str] = {}   # record label (cpu, cuda:0, G0) -> device name
        self._ranks: list[str] = []        # device name per rank
        self._inventories: dict = {}       # host -> inventory: partition modes (no % of peak)

    def _begin(self, run: Run, show_threads: bool = True) -> list[str]:
        self._names = dict(run.meta.get("device_names") or {})
        self._ranks = list(run.devices)
        self._inventories = dict(run.meta.get("inventory") or {})
        lines = run_header_lines(run)
        if show_threads and run.meta.get("threads"):
            lines.append(f"# CPU threads: {run.meta['threads']}")
        return lines

    def _device_names(self) -> set[str]:
        return set(self._names.values()) or set(self._ranks)

    def _partition(self, name: str | None) -> str | None:
        """The partition (MIG slice, AMD CPX/NPS4 mode) a device is, from its name and the run's
        inventories; its whole-GPU peaks do not apply."""
        return peaks.partition_of(name, self._inventories)

    def _peak_lines(self, names: Iterable[str], describe: Callable[[peaks.DevicePeaks], str | None]) -> list[str]:
        """One line per device: where its peaks come from, or why it has none (no % of peak)."""
        lines = []
        for name in sorted(names):
            part = self._partition(name)
            if part:
                lines.append(f"# {name}: a partition of the GPU ({part}), the datasheet peaks are the "
                             f"whole GPU's: no % of peak")
                continue
            dev = peaks.lookup(name)
            text = describe(dev) if dev else None
            lines.append(f"# {name}: {text}" if text else f"# {name}: not in the peaks table, no % of peak")
        return lines
