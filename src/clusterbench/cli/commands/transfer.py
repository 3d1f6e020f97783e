"""``clusterbench transfer``: copy bandwidth matrices and TransferBench-style config tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.transfer import main as transfer_main
from clusterbench.bench.transfer.config import transfer_config, transfer_options
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import MAX_ITERATIONS, Count
from clusterbench.cli.options import RunOutput, node_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job


@click.command("transfer")
@click.option("--matrix", default=None, metavar="h2d,d2h,p2p,a2a,h2h|all",
              help="Matrices to measure (default: all that apply; h2h on a host without GPUs).")
@click.option("--test", "tests", multiple=True, metavar="LINE",
              help="A test in transfer-language syntax, e.g. 'G0->G1 G1->G0' (repeatable).")
@click.option("--config", default=None, metavar="FILE|example",
              help="Tests from a TransferBench-style config file; 'example' runs the seed's six tests.")
@click.option("--bytes", "nbytes", default="64M", show_default=True, help="Bytes per transfer.")
@click.option("--method", "methods", default="copy_engine", show_default=True,
              help="GPU copies for p2p/a2a: copy_engine, kernel, or all.")
@click.option("--iterations", type=Count(0, MAX_ITERATIONS), default=10, show_default=True)
@click.option("--warmups", type=Count(0, MAX_ITERATIONS), default=3, show_default=True)
@click.option("--no-check", "no_check", is_flag=True, help="Skip the check of destination buffers.")
@node_options
@run_output
def transfer(matrix: str | None, tests: tuple[str, ...], config: str | None, nbytes: str, methods: str,
             iterations: int, warmups: int, no_check: bool, devices: str | None, ranks: RankOptions,
             out: RunOutput) -> int:
    """Copy bandwidth: host<->device, device<->device (uni/bi), all-to-all, custom tests.

    One process drives every device, as TransferBench does; tests run one after another and the
    transfers inside a test run at the same time. --device cpu: host copies only, even where GPUs
    exist; --devices: the GPUs the matrices cover (default all).
    """
    cfg = transfer_config(matrix, tests, config, nbytes, methods, iterations, warmups, not no_check,
                       ranks.device, devices)
    job = Job(transfer_main.main, cfg, dataclasses.replace(ranks, device=cfg.device_type), np=1)
    return run_benchmark_command(job, "transfer", out)


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``transfer`` line checked as the command checks them, without running
    it, without this host's devices or memory and without reading --config (cli/argv_check.py: a
    sweep's test, a qualify step)."""
    transfer_options(params["matrix"], params["tests"], params["nbytes"], params["methods"],
                     params["iterations"], params["warmups"])
    devs.check_devices(params["device"], params["devices"])


commands = [transfer]
