"""``clusterbench stream``: memory bandwidth with BabelStream's kernels on every selected device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.stream import spec
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import repeat_option, store_options
from clusterbench.dist import context as ctxmod
from clusterbench.dist.context import DistOptions
from clusterbench.dist.driver import Job
from clusterbench.errors import UsageError
from clusterbench.units import parse_size


# Options stream, gemm and transfer share: device type, devices, timeout.
def node_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
                     help="Seconds a rank may go without progress before the run is ended.")(f)
    f = click.option("--devices", default=None, metavar="all|0,1",
                     help="Devices to run on at once, one rank each (default: all GPUs; CPU is one device).")(f)
    f = click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
                     show_default=True, help="Device type; cuda also means ROCm GPUs.")(f)
    return f


def resolve_node_devices(device: str, devices: str | None) -> tuple[str, list[int]]:
    device_type = ctxmod.resolve_device_type(device)
    count = ctxmod.local_device_count(device_type)
    return device_type, devs.parse_devices(devices, device_type, count)


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


def parse_kernels(text: str) -> tuple[str, ...]:
    if text.strip().lower() == "all":
        return spec.NAMES
    try:
        return tuple(spec.ordered([k.strip() for k in text.split(",") if k.strip()]))
    except KeyError as e:
        raise UsageError(f"unknown kernel {e.args[0]!r}: expected {', '.join(spec.NAMES)} or all") from None


def build_config(arraysize: str, numtimes: int, dtype: str, sizes: str | None, kernels: str,
                 device_type: str, indices: list[int], check: bool) -> StreamConfig:
    if dtype not in spec.DTYPES:
        raise UsageError(f"unknown dtype {dtype!r} for stream: expected float or double")
    if numtimes < 2:
        raise UsageError(f"-n/--numtimes must be at least 2 (the first iteration is not timed), got {numtimes}")
    elem = spec.DTYPES[dtype]
    if sizes:
        counts = [max(1, b // elem) for b in parse_sweep(sizes)]
        strict = False
    else:
        if arraysize.strip().startswith("-"):
            raise UsageError(f"invalid -s/--arraysize {arraysize!r}: must be positive")
        n = parse_size(arraysize, "-s/--arraysize")
        if n <= 0:
            raise UsageError(f"invalid -s/--arraysize {arraysize!r}: must be positive")
        counts, strict = [n], True
        if device_type == "cpu":
            need, free = spec.footprint(n, elem), devs.free_memory(devs.rank_device("cpu", [0], 0))
            if need > free:
                raise UsageError(f"-s {n}: 3 {dtype} arrays need {need} bytes, more than the "
                                 f"{free} bytes of free host memory")
    return StreamConfig(sizes=tuple(counts), kernels=parse_kernels(kernels), numtimes=numtimes,
                        dtype=dtype, device_type=device_type, devices=tuple(indices), check=check,
                        strict_size=strict)


@click.command("stream")
@click.option("-s", "--arraysize", default=str(2**25), show_default=True,
              help="Elements per array (K/M/G suffixes are binary).")
@click.option("-n", "--numtimes", type=int, default=100, show_default=True,
              help="Iterations; the first is a warm-up and not timed.")
@click.option("--float", "use_float", is_flag=True, help="Single precision (same as --dtype float).")
@click.option("--dtype", default="double", show_default=True, help="float or double.")
@click.option("--sizes", default=None, metavar="START:END[:FACTOR]",
              help="Sweep array sizes in BYTES per array, e.g. 1M:8G (factor 2); overrides -s.")
@click.option("--kernels", default="all", show_default=True,
              help="Comma list of Copy, Mul, Add, Triad, Dot, Nstream, or all.")
@click.option("--no-check", "no_check", is_flag=True, help="Skip the check of results.")
@node_options
@repeat_option
@store_options
def stream(arraysize: str, numtimes: int, use_float: bool, dtype: str, sizes: str | None,
           kernels: str, no_check: bool, device: str, devices: str | None, timeout: float,
           repeat: int, as_json: bool, db: str | None, tags: tuple[str, ...]) -> None:
    """Memory bandwidth: BabelStream's Copy, Mul, Add, Triad, Dot and Nstream kernels.

    Bandwidth is bytes moved / minimum time (GB/s); every device selected runs at the same time.
    """
    device_type, indices = resolve_node_devices(device, devices)
    cfg = build_config(arraysize, numtimes, "float" if use_float else dtype.strip().lower(), sizes,
                       kernels, device_type, indices, not no_check)
    job = Job("clusterbench.bench.stream.main:main", cfg,
              DistOptions(device=device_type, timeout=timeout), np=len(indices))
    raise SystemExit(run_benchmark_command(job, "stream", as_json=as_json, db=db, tags=tags,
                                           repeat=repeat))


commands = [stream]
