"""Terminal tables for the workloads: ``train``, ``ddp_comm``, ``infer_tp``.

Per-step rows (those with a ``step`` param) print one line per step; overall rows (with a
``stat`` and no ``step``) print as ``# overall`` lines, so live output and ``results show`` match.
"""

from __future__ import annotations

from clusterbench.families.base import number, param_text, run_header_lines, significant
from clusterbench.families.workloads.spec import (
    ALGBW,
    EFFICIENCY,
    INFER_TP,
    LATENCY,
    LOSS,
    MFU,
    PEAK_MEMORY,
    SAMPLES_PER_S,
    STEP_TIME,
    TOKENS_PER_S,
)
from clusterbench.records import Measurement, Run
from clusterbench.units import compact, fit, format_plain


def _group(measurements: list[Measurement], key: str) -> dict[object, dict[str, Measurement]]:
    """``{param value: {metric[/stat]: measurement}}`` in first-seen order."""
    out: dict[object, dict[str, Measurement]] = {}
    for m in measurements:
        if key not in m.params:
            continue
        name = m.metric if key == "step" else f"{m.metric}/{m.params.get('stat', '')}"
        out.setdefault(m.params[key], {})[name] = m
    return out


def _num(m: Measurement | None, width: int = 12, decimals: int | None = None) -> str:
    """A cell: %g with 4 digits, or ``decimals`` fixed ones where a nonzero value still never
    reads as 0 (a 16-byte gradient sync's 1.3e-06 GB/s printed 0.000); ``-`` when absent."""
    if m is None:
        return " " * (width - 1) + "-"
    if decimals is None:
        return fit(f"{m.value:>{width}.4g}", m.value, width)
    return significant(m.value, width, decimals)


def _overall(measurements: list[Measurement]) -> list[str]:
    lines = []
    for m in measurements:
        if "step" in m.params or "stat" not in m.params or "batch" in m.params and m.benchmark == INFER_TP:
            continue
        extra = ""
        if m.metric == EFFICIENCY.name:
            extra = (f" (optimal algbw {number(m.params.get('optimal_algbw')):.3g} GB/s for "
                     f"{m.params.get('nodes')} nodes)")
        elif m.metric == MFU.name:
            extra = f" (peak {m.params.get('peak_tflops')} TFLOP/s)"
        elif m.metric == PEAK_MEMORY.name:
            extra = f" ({compact(m.value / 2**20, 1)} MiB, {m.params.get('memory', '')})"
        lines.append(f"# overall {m.metric} ({m.params['stat']}): {m.value:.6g} {m.unit}{extra}")
    return lines


class TrainTable:
    def header(self, run: Run) -> list[str]:
        return run_header_lines(run) + [
            f"# {'step':>6} {'loss':>10} {'step_ms':>12} {'samples/s':>12} {'tokens/s':>12}"]

    def rows(self, measurements: list[Measurement]) -> list[str]:
        lines = []
        for step, ms in _group(measurements, "step").items():
            lines.append(f"  {param_text(step):>6} {_num(ms.get(LOSS.name), 10, 4)} "
                         f"{_num(ms.get(STEP_TIME.name), decimals=2)} {_num(ms.get(SAMPLES_PER_S.name))} "
                         f"{_num(ms.get(TOKENS_PER_S.name))}")
        return lines + _overall(measurements)

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        # Every row carries the model's shape (model, layers, hidden, seq, batch, ...): a run whose
        # meta is missing (imported, or stored by a version before it) still says what ran, and
        # what the run's meta adds (parameter count, shard size) is said where it is known.
        shape = next((m.params for m in measurements if "seq" in m.params or "layers" in m.params), {})
        info = {**shape, **(run.meta.get("train") or {})}
        if not info:
            return []
        size = f"{_parameters(number(info['params']))}, " if "params" in info else ""
        shard = f" (shard size {info['shard_size']})" if "shard_size" in info else ""
        return [f"# model {info.get('model', '?')}: {size}{info.get('layers', '?')} layers, hidden "
                f"{info.get('hidden', '?')}, strategy {info.get('strategy', '?')}{shard}, "
                f"{info.get('dtype', '?')}, global batch {info.get('batch', '?')} sequences, sequence "
                f"length {info.get('seq', '?')} tokens"]


def _parameters(count: float) -> str:
    """``0.0986M parameters``; a model under a thousand parameters by its count (``78 parameters``,
    not ``7.8e-05M``)."""
    return f"{count / 1e6:.3g}M parameters" if count >= 1000 else f"{count:.0f} parameters"


def _gradient_size(size: float) -> str:
    """The gradient bytes of a ddp_comm run: whole MiB as such; any other size exact in bytes, so
    ``--size 1.5M`` does not read as 2 MiB (nor 996 bytes as 0 MiB)."""
    if size >= 2**20 and size % 2**20 == 0:
        return f"{compact(size / 2**20, 0)} MiB"
    return f"{format_plain(size)} bytes" + (f" ({size / 2**20:.3g} MiB)" if size >= 2**20 else "")


def _mib(cap: object) -> str:
    """DDP's ``bucket_cap_mb`` as DDP reads it: MiB (it multiplies by 2**20), ``25``, not ``25.0``."""
    if isinstance(cap, (int, float)) and not isinstance(cap, bool):
        return f"{format_plain(cap)} MiB"
    return f"{cap} MiB" if cap is not None else "? MiB"


class DdpCommTable:
    def header(self, run: Run) -> list[str]:
        return run_header_lines(run) + [f"# {'step':>6} {'step_ms':>12} {'algbw(GB/s)':>12}"]

    def rows(self, measurements: list[Measurement]) -> list[str]:
        lines = []
        for step, ms in _group(measurements, "step").items():
            lines.append(f"  {param_text(step):>6} {_num(ms.get(STEP_TIME.name), decimals=2)} "
                         f"{_num(ms.get(ALGBW.name), decimals=3)}")
        return lines + _overall(measurements)

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        for m in measurements:
            # One rank has no peer: DDP's all_reduce moves nothing, the step is local work only.
            alone = ", 1 rank: no gradients exchanged" if run.ranks == 1 else ""
            return [f"# {m.params.get('layers')} dummy layers, {_gradient_size(number(m.params.get('bytes')))} "
                    f"of gradients, bucket cap {_mib(m.params.get('bucket_cap_mb'))}{alone}"]
        return []


class InferTpTable:
    def header(self, run: Run) -> list[str]:
        return run_header_lines(run) + [
            f"# {'batch':>8} {'latency_ms':>12} {'min_ms':>12} {'samples/s':>12}"]

    def rows(self, measurements: list[Measurement]) -> list[str]:
        lines = []
        for batch, ms in _group(measurements, "batch").items():
            lines.append(f"  {param_text(batch):>8} {_num(ms.get(f'{LATENCY.name}/avg'), decimals=3)} "
                         f"{_num(ms.get(f'{LATENCY.name}/min'), decimals=3)} {_num(ms.get(f'{SAMPLES_PER_S.name}/avg'))}")
        return lines

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        for m in measurements:
            # One rank runs the layers whole: no split, no collective, whatever --mode says (the
            # mode stays in the rows' params so they pair with the split runs in compare).
            split = f"unsplit (1 rank, no collectives; mode {m.params.get('mode')} pairs it with the split " \
                    "runs)" if run.ranks == 1 else f"{m.params.get('mode')}-parallel"
            return [f"# {split}, {m.params.get('layers')} layers of "
                    f"{m.params.get('hidden')}x{m.params.get('hidden')}, {m.params.get('dtype')}, "
                    f"{run.ranks} rank(s)"]
        return []
