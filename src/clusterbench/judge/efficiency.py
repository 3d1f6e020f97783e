"""How close results come to a limit, judged at read time: link-bound rows (collective algbw,
DDP's gradient sync, a host pair's bandwidth) against the optimum over the network
(``judge.theory``), and device rows against the datasheet peaks their metric declares
(``Metric.peak``: stream bandwidth vs HBM, GEMM TFLOP/s vs the dense peak of its dtype)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clusterbench import peaks
from clusterbench.errors import UsageError
from clusterbench.families import family_of, metric_of
from clusterbench.judge.compare import exact_ratio, percent_text
from clusterbench.judge.theory import MAX_NODES, Efficiency, link_efficiency, link_speed_for
from clusterbench.records import Measurement, Run
from clusterbench.store.runs import read_runs
from clusterbench.units import whole_number_or_none


def nodes_of(run: Run, override: int | None = None) -> int:
    """The node count a link optimum is computed for: ``override``, else the run's ``nodes`` tag
    where it is a positive whole number (``whole_number``: ASCII digits only), else its hosts.
    ``str.isdigit`` alone passed ``²`` (and int() then raised), ``0`` gave no optimum (the
    efficiency went missing), and 5000 digits raised past int()'s digit limit. At most
    ``MAX_NODES``: a tag of 400 digits is no float, and the optimum is the same."""
    if override:
        return override
    # a tag is free text: a node count it does not hold is the hosts' count
    tagged = whole_number_or_none(run.tags.get("nodes"), minimum=1, maximum=MAX_NODES, clamp=True)
    return len(run.hosts) if tagged is None else tagged


def run_link_efficiency(run: Run, ms: list[Measurement], link: str | None,
                        nodes: int | None = None) -> list[Efficiency]:
    """measured/optimal for a run's link-bound rows; empty without a link speed (``--link-speed``
    or the run's ``link_speed`` tag)."""
    rate = link_speed_for(run.tags, link)
    if rate is None:
        return []
    return link_efficiency(ms, nodes_of(run, nodes), rate)


def best_per_placement(effs: list[Efficiency]) -> list[Efficiency]:
    """The largest message size per (benchmark, placement): the row that shows the link's limit."""
    best: dict[tuple[str, str], Efficiency] = {}
    for e in effs:
        k = (e.benchmark, e.placement)
        if k not in best or e.bytes > best[k].bytes:
            best[k] = e
    return list(best.values())


def efficiency_lines(run: Run, ms: list[Measurement], link: str | None = None) -> list[str]:
    """What a terminal table adds below a run judged against its link speed."""
    text = link or run.tags.get("link_speed")
    return [f"# efficiency {e.benchmark}{f' {e.placement}' if e.placement else ''}: algbw "
            f"{e.measured_algbw:.3g} GB/s = {e.percent_text(1)} of the optimal "
            f"{e.optimal_algbw:.3g} GB/s "
            f"for {e.nodes} nodes over {text}"
            for e in best_per_placement(run_link_efficiency(run, ms, link))]


@dataclass(frozen=True)
class DevicePercent:
    benchmark: str
    metric: str
    params: dict[str, Any]
    value: float
    unit: str
    peak: float
    device_name: str

    @property
    def percent(self) -> float:
        """value / peak in percent, rounded once: 100 x 1.7e308 first was inf (JSON null) for a
        percent of 3.2e306, and 100 x 5e-324 / 5300 was 0 for one of 9.3e-323. inf only where the
        percent itself is past the largest float."""
        exact = exact_ratio(self.value, self.peak)
        return 100.0 * self.value / self.peak if exact is None else float(exact * 100)

    def percent_text(self, decimals: int = 1) -> str:
        """The percent as text (``94.1%``, ``3.2e+306%``), never ``inf%`` or a 0 for a value not 0."""
        return percent_text(self.value, self.peak, decimals)

    def label(self) -> str:
        """What was measured, as its family names a row (``stream Triad``)."""
        family = family_of(self.benchmark)
        return family.label(self.benchmark, self.params) if family else self.benchmark


def _device_name(run: Run, m: Measurement) -> str | None:
    dev = m.params.get("device")
    if isinstance(dev, str) and dev and not dev.isdigit() and not dev.startswith(("cuda", "cpu")):
        return dev
    names = [d for d in run.devices if d]
    if isinstance(dev, (int, str)) and str(dev).isdigit() and int(dev) < len(names):
        return names[int(dev)]
    if names and len(set(names)) == 1:
        return names[0]
    meta_name = run.meta.get("device_name")
    return str(meta_name) if meta_name else None


def device_percent_of_peak(run: Run, ms: list[Measurement]) -> list[DevicePercent]:
    """Every row whose metric declares a datasheet peak, where the device is known."""
    out = []
    # a run's records of one device and dtype share a datasheet figure: looked up once
    # (a fleet run has a hundred stream and GEMM records on eight GPUs of one model)
    found: dict[tuple[str, str | None, str], float | None] = {}
    for m in ms:
        metric = metric_of(m.benchmark, m.metric)
        if metric is None or not metric.peak:
            continue
        name = _device_name(run, m)
        key = (metric.peak, name, str(m.params.get("dtype", "")))   # all that peak_of reads
        if key in found:
            peak = found[key]
        else:
            peak = found[key] = peaks.peak_of(metric.peak, name, m.params,
                                              peaks.partition_of(name, run.meta.get("inventory")))
        if peak and name:
            out.append(DevicePercent(m.benchmark, m.metric, dict(m.params), m.value, m.unit, peak, name))
    return out


def best_percent_of_peak(runs: list[tuple[Run, list[Measurement]]]) -> list[tuple[str, DevicePercent]]:
    """The best result per row label (stream kernel, GEMM dtype and shape), as percent of peak."""
    best: dict[str, DevicePercent] = {}
    for run, ms in runs:
        for d in device_percent_of_peak(run, ms):
            label = d.label()
            if label not in best or d.percent > best[label].percent:
                best[label] = d
    return list(best.items())


@dataclass
class StoredEfficiency:
    """``theory --run``: each run's collective efficiency over its link, and why runs that have
    collective rows were not judged."""

    judged: list[tuple[int, str, list[Efficiency]]]   # (run id, link speed used, its efficiencies)
    unknown: list[str]                                  # runs of unknown node count: why

    def nothing_judged(self) -> UsageError:
        """The error of a selection none of whose runs was judged."""
        if self.unknown:
            return UsageError(f"no collective algbw rows on 2 or more hosts: {self.unknown[0]}")
        return UsageError("the selected runs have no collective algbw rows on 2 or more hosts")


def stored_link_efficiency(db: str | os.PathLike[str] | None, selectors: Iterable[str], since: str | None,
                           link: str | None, default_link: str) -> StoredEfficiency:
    """The efficiency of the runs ``selectors`` pick in ``db`` over ``link``, else each run's
    ``link_speed`` tag, else ``default_link``. A tag that is no link speed is a UsageError
    naming the run."""
    out = StoredEfficiency([], [])
    for run, ms in read_runs(db, selectors, since):
        run_link = link if link is not None else run.tags.get("link_speed") or default_link
        try:
            effs = run_link_efficiency(run, ms, run_link)
        except UsageError as e:
            raise UsageError(f"run {run.id}: link_speed tag: {e}") from None
        if effs:
            out.judged.append((run.id, run_link, effs))
        elif nodes_of(run) < 2 and link_efficiency(ms, 2, 1.0):
            out.unknown.append(_why_no_nodes(run))
    return out


def _why_no_nodes(run: Run) -> str:
    if run.hosts:
        return f"run {run.id} ran on 1 host"
    return (f"run {run.id} names no hosts (an imported log?): give its node count with "
            f"`clusterbench results tag {run.id} nodes=N`")
