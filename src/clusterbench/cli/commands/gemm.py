"""``clusterbench gemm``: GEMM throughput per dtype on every selected device."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.gemm.config import gemm_config, gemm_options
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import ANY
from clusterbench.cli.options import RunOutput, node_options, run_output
from clusterbench.families.gemm import spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job


@click.command("gemm")
@click.option("-m", "m", default=None, help="Rows of op(A) and D (default 4096; 1024 on a CPU).")
@click.option("-n", "n", default=None, help="Columns of op(B) and D (default 4096; 1024 on a CPU).")
@click.option("-k", "k", default=None, help="Inner dimension (default 4096; 1024 on a CPU).")
@click.option("--batch", default=None, help="Batch count: strided batched GEMM when > 1 (default 1).")
@click.option("--transA", "trans_a", default=None, help="N or T (default N).")
@click.option("--transB", "trans_b", default=None, help="N or T (default N).")
@click.option("--alpha", type=ANY, default=None, help="D = alpha*op(A)op(B) + beta*C (default 1).")
@click.option("--beta", type=ANY, default=None, help="Default 0.")
@click.option("--dtype", default=None,
              help=f"{', '.join(spec.DTYPES)}, a comma list, or all (default fp32).")
@click.option("--preset", default=None, help=f"One of: {', '.join(spec.PRESETS)} (flags override it).")
@click.option("-i", "--iterations", type=int, default=10, show_default=True, help="Calls per timed sample.")
@click.option("--cold-iters", type=int, default=2, show_default=True, help="Untimed calls first.")
@click.option("--samples", type=int, default=5, show_default=True,
              help="Timed samples; best and median are reported.")
@click.option("--no-check", "no_check", is_flag=True, help="Skip the result check.")
@node_options
@run_output
def gemm(m: str | None, n: str | None, k: str | None, batch: str | None, trans_a: str | None,
         trans_b: str | None, alpha: float | None, beta: float | None, dtype: str | None,
         preset: str | None, iterations: int, cold_iters: int, samples: int, no_check: bool,
         devices: str | None, ranks: RankOptions, out: RunOutput) -> int:
    """GEMM throughput (TFLOP/s = 2*m*n*k*batch/time), best and median of several samples."""
    cfg = gemm_config(m, n, k, batch, dtype, trans_a, trans_b, alpha, beta, preset, iterations,
                       cold_iters, samples, ranks.device, devices, not no_check)
    job = Job(gemm_main.main, cfg, dataclasses.replace(ranks, device=cfg.device_type), np=len(cfg.devices))
    return run_benchmark_command(job, "gemm", out, meta={"preset": preset} if preset else None)


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``gemm`` line checked as the command checks them, without running
    it and without this host's devices or memory (cli/argv_check.py: a sweep's test, a qualify step)."""
    devs.check_devices(params["device"], params["devices"])
    gemm_options(params["m"], params["n"], params["k"], params["batch"], params["dtype"], params["trans_a"],
                 params["trans_b"], params["alpha"], params["beta"], params["preset"], params["iterations"],
                 params["cold_iters"], params["samples"])


commands = [gemm]
