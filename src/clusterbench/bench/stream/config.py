"""The validated configuration of a stream run (what ``clusterbench stream`` parsed)."""

from __future__ import annotations

import dataclasses

from clusterbench.bench import devices as devs
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.choices import parse_choices
from clusterbench.errors import UsageError
from clusterbench.families.stream import spec
from clusterbench.units import parse_size


def parse_sweep(text: str) -> list[int]:
    """``START:END[:FACTOR]`` in bytes per array (binary suffixes), multiplying by FACTOR (2)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise UsageError(f"invalid --sizes {text!r}: expected START:END[:FACTOR], e.g. 1M:8G")
    start, end = parse_size(parts[0], "--sizes start"), parse_size(parts[1], "--sizes end")
    factor = int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else (2 if len(parts) == 2 else 0)
    if start <= 0 or end < start:
        raise UsageError(f"invalid --sizes {text!r}: need 0 < START <= END")
    if factor < 2:
        raise UsageError(f"invalid --sizes {text!r}: FACTOR must be an integer >= 2")
    out, s = [], start
    while s <= end:
        out.append(s)
        s *= factor
    return out


def _kernel(word: str) -> str | None:
    try:
        return spec.kernel(word).name
    except KeyError:
        return None


def parse_kernels(text: str) -> tuple[str, ...]:
    """Kernel names in run order (the recurrence the check replays depends on it)."""
    return tuple(spec.ordered(parse_choices(text, spec.NAMES, "kernel", _kernel)))


def stream_options(arraysize: str | None, numtimes: int, dtype: str, sizes: str | None, kernels: str) -> StreamConfig:
    """The checks of ``clusterbench stream``'s options that need neither this host's devices nor
    its memory (a sweep's test, a qualify step are checked so before any node runs them); the
    config has no devices yet."""
    if dtype not in spec.DTYPES:
        raise UsageError(f"unknown dtype {dtype!r} for stream: expected float or double")
    if numtimes < 2:
        raise UsageError(f"-n/--numtimes must be at least 2 (the first iteration is not timed), got {numtimes}")
    elem = spec.DTYPES[dtype]
    if sizes:
        # Small byte sizes round to the same element count (1:32 of double: 1, 1, 1, 1, 2, 4):
        # each is measured once, or the run would hold identical rows that compare and
        # baselines pool as if they were repeats.
        counts = list(dict.fromkeys(max(1, b // elem) for b in parse_sweep(sizes)))
        strict = False   # a size that does not fit is a skipped row; none fitting is an error (stream_config)
    elif arraysize is None:   # the default, sized on each device to its cache (main.default sizes)
        counts, strict = [], True
    else:
        if arraysize.strip().startswith("-"):
            raise UsageError(f"invalid -s/--arraysize {arraysize!r}: must be positive")
        n = parse_size(arraysize, "-s/--arraysize")
        if n <= 0:
            raise UsageError(f"invalid -s/--arraysize {arraysize!r}: must be positive")
        counts, strict = [n], True
    return StreamConfig(sizes=tuple(counts), kernels=parse_kernels(kernels), numtimes=numtimes, dtype=dtype,
                        strict_size=strict)


def stream_config(arraysize: str | None, numtimes: int, dtype: str, sizes: str | None, kernels: str,
                 device: str, devices: str | None, check: bool) -> StreamConfig:
    """Validate ``clusterbench stream``'s options; every problem is a one-line UsageError."""
    device_type, indices = devs.resolve(device, devices)
    cfg = dataclasses.replace(stream_options(arraysize, numtimes, dtype, sizes, kernels),
                              device_type=device_type, devices=tuple(indices), check=check)
    if device_type == "cpu":
        cpu = devs.rank_device("cpu", [0], 0)
        smallest = min(cfg.sizes) if cfg.sizes else spec.default_array_size(devs.last_level_cache(cpu),
                                                                            spec.DTYPES[dtype])
        need, free = spec.footprint(smallest, spec.DTYPES[dtype]), devs.free_memory(cpu)
        if need > free:
            raise UsageError(f"--sizes {sizes}: even the smallest size needs {need} bytes for 3 {dtype} "
                             f"arrays, more than the {free} bytes of free host memory" if sizes else
                             f"{'-s ' if cfg.sizes else 'the default array size '}{smallest}: 3 {dtype} "
                             f"arrays need {need} bytes, more than the {free} bytes of free host memory"
                             + ("" if cfg.sizes else " (give a smaller -s: it measures the cache if "
                                "its arrays are under 4x the last-level cache)"))
    return cfg
