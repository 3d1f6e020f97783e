"""``clusterbench stream``: memory bandwidth with BabelStream's kernels on every selected device."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.config import stream_config, stream_options
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import RunOutput, node_options, refuse_together, run_output
from clusterbench.families.stream import spec as kernel_spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job


@click.command("stream", help=f"""Memory bandwidth: BabelStream's {', '.join(kernel_spec.NAMES)} kernels.

    Bandwidth is bytes moved / minimum time (GB/s); every device selected runs at the same time.
    A size whose arrays are under 4x the last-level cache is labelled cache or mixed (the memory
    column, param memory): it measures the cache, not memory.""")
@click.option("-s", "--arraysize", default=None,
              help="Elements per array (K/M/G suffixes are binary). Default: BabelStream's 2^25, or "
                   "4x the device's last-level cache when that is larger (a power of two), so that "
                   "memory is measured, not cache.")
@click.option("-n", "--numtimes", type=int, default=100, show_default=True,
              help="Iterations; the first is a warm-up and not timed.")
@click.option("--float", "use_float", is_flag=True, help="Single precision (same as --dtype float).")
@click.option("--dtype", default="double", show_default=True, help="float or double.")
@click.option("--sizes", default=None, metavar="START:END[:FACTOR]",
              help="Sweep array sizes in BYTES per array, e.g. 1M:8G (factor 2), instead of -s.")
@click.option("--kernels", default="all", show_default=True,
              help=f"Comma list of {', '.join(kernel_spec.NAMES)}, or all.")
@click.option("--no-check", "no_check", is_flag=True, help="Skip the check of results.")
@node_options
@run_output
def stream(arraysize: str | None, numtimes: int, use_float: bool, dtype: str, sizes: str | None, kernels: str,
           no_check: bool, devices: str | None, ranks: RankOptions, out: RunOutput) -> int:
    _refuse_contradictions()
    cfg = stream_config(arraysize, numtimes, _dtype(use_float, dtype), sizes, kernels, ranks.device, devices,
                        not no_check)
    job = Job(stream_main.main, cfg, dataclasses.replace(ranks, device=cfg.device_type), np=len(cfg.devices))
    return run_benchmark_command(job, "stream", out)


def _refuse_contradictions() -> None:
    refuse_together("use_float", "dtype")
    refuse_together("arraysize", "sizes")


def _dtype(use_float: bool, dtype: str) -> str:
    return "float" if use_float else dtype.strip().lower()


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``stream`` line checked as the command checks them, without running
    it and without this host's devices or memory (cli/argv_check.py: a sweep's test, a qualify step).
    Runs inside the line's click context, whose sources say which options were given."""
    _refuse_contradictions()
    devs.check_devices(params["device"], params["devices"])
    stream_options(params["arraysize"], params["numtimes"], _dtype(params["use_float"], params["dtype"]),
                   params["sizes"], params["kernels"])


commands = [stream]
