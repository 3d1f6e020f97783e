"""``clusterbench preflight``: fast health checks before a long run (exit 0 ok, 1 failed, 2 usage)."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.cli.bounds import MAX_GPUS_PER_NODE, Count
from clusterbench.cli.fleet import OnFail, junit_option, node_name, on_fail_options, take_out
from clusterbench.cli.options import json_option
from clusterbench.envinfo.inventory import hostname
from clusterbench.errors import UsageError
from clusterbench.launch.drain import check_node
from clusterbench.preflight import Expectations, exit_code, node_problems, overall, run_checks
from clusterbench.preflight.checks import FAIL, NA, OK, WARNING, CheckResult
from clusterbench.printable import printable
from clusterbench.report import junit as junit_xml
from clusterbench.report.jsonl import check_line, emit, summary_line
from clusterbench.units import parse_rate

# Options every command that runs preflight first shares (``clusterbench run`` too).
expect_options = [
    click.option("--expect-gpus", type=Count(0, MAX_GPUS_PER_NODE), default=None, metavar="N",
                 help="Fail unless exactly N GPUs are visible on this host."),
    click.option("--expect-model", default=None, metavar="TEXT",
                 help="Fail unless every GPU's name contains TEXT (case-insensitive), e.g. H100 or MI300X."),
    click.option("--expect-nic-speed", default=None, metavar="RATE",
                 help="Fail for physical NICs and RDMA ports slower than RATE, e.g. 100Gbps or 400G."),
    click.option("--nic", "nic_names", multiple=True, metavar="NAME",
                 help="An interface or RDMA device that must be up (repeatable); others only warn when down."),
    click.option("--expect-compute-partition", type=click.Choice(("SPX", "DPX", "QPX", "CPX"), case_sensitive=False),
                 default=None, metavar="MODE",
                 help="AMD compute partition every GPU must be in: SPX, DPX, QPX or CPX."),
    click.option("--expect-memory-partition", type=click.Choice(("NPS1", "NPS2", "NPS4"), case_sensitive=False),
                 default=None, metavar="MODE",
                 help="AMD memory partition (NUMA per socket) every GPU must be in: NPS1 or NPS4."),
]


_BARE_PREFIX = re.compile(r".*\d\s*[kmgt]?", re.IGNORECASE)


def _short(text: str) -> str:
    """An option's value as an error quotes it: 400 digits would make the one line a screenful."""
    return repr(text[:32]) + ("..." if len(text) > 32 else "")


def expectations_from(expect_gpus: int | None, expect_model: str | None, expect_nic_speed: str | None,
                      nic_names: tuple[str, ...], expect_compute_partition: str | None,
                      expect_memory_partition: str | None) -> Expectations:
    # An empty value would be an expectation every host meets (a model name "" is in every name)
    for option, value in (("--expect-model", expect_model), ("--expect-nic-speed", expect_nic_speed),
                          *(("--nic", name) for name in nic_names)):
        if value is not None and not value.strip():
            raise UsageError(f"{option}: an empty value")
    speed = None
    if expect_nic_speed is not None:
        text = expect_nic_speed.strip()
        # "400G", "1.6T" and "100" read as bits per second, as NIC speeds are quoted; only a bare
        # prefix, so that parse_rate's own "1gbit" is not made "1gbitbps"
        if _BARE_PREFIX.fullmatch(text):
            text += "bps"
        try:
            speed = parse_rate(text) * 8 / 1e9  # parse_rate gives bytes/s; NICs are rated in Gb/s
        except (ValueError, UsageError) as e:
            raise UsageError(f"--expect-nic-speed {_short(expect_nic_speed)}: {e}") from None
    return Expectations(gpus=expect_gpus, model=expect_model, nic_speed_gbps=speed, nics=tuple(nic_names),
                        compute_partition=expect_compute_partition, memory_partition=expect_memory_partition)


def _check_kernel_log(path: str) -> None:
    """A --kernel-log that cannot be read is a usage error before any check runs. A named pipe is
    only looked at, not opened: opening it here would take its writer, and the read after would
    wait for another one forever."""
    if not path:
        raise UsageError("--kernel-log: an empty file name")
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISFIFO(mode):
            with open(path, "rb"):
                pass
    except OSError as e:
        raise UsageError(f"--kernel-log {path}: {e.strerror or e}") from None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        # read to its end, /dev/kmsg would block there and /dev/zero never end (a pipe is text)
        raise UsageError(f"--kernel-log {path}: a device, not saved kernel log text "
                         "(without --kernel-log the live log is read)")


def result_lines(results: list[CheckResult], verbose: bool = False) -> list[str]:
    lines = []
    for r in results:
        lines.append(f"{r.status:<15} {r.check:<14} {r.summary}")
        if verbose or r.status in ("warning", "fail"):
            lines += [f"{'':<15} {'':<14}   {e}" for e in r.evidence]
    return lines


def _apply(f):  # type: ignore[no-untyped-def]
    for opt in reversed(expect_options):
        f = opt(f)
    return f


@click.command("preflight")
@_apply
@click.option("--kernel-log", "kernel_log", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Check saved `dmesg` output instead of the live kernel log.")
@click.option("-v", "--verbose", is_flag=True, help="Show the evidence of every check, not only of problems.")
@click.option("--root", default="/", hidden=True, help="Read host files under this root (tests).")
@click.option("--node", default=None, envvar="CLUSTERBENCH_NODE", metavar="NAME",
              help="This host's name in the scheduler, for --on-fail (default: the host name; "
                   "env CLUSTERBENCH_NODE).")
@junit_option
@on_fail_options
@json_option("a `check` line per check (with its `host`), then a `summary` with the overall status "
             "and exit code")
def preflight(expect_gpus: int | None, expect_model: str | None, expect_nic_speed: str | None,
              nic_names: tuple[str, ...], expect_compute_partition: str | None,
              expect_memory_partition: str | None, kernel_log: str | None, verbose: bool, root: str,
              node: str | None, junit: str | None, on_fail: OnFail, as_json: bool) -> int:
    """Fast health checks of this host: GPU count and model, partition modes, PCIe links below
    their maximum, PCIe AER counters, GPU ECC errors, Xid/amdgpu/AER lines in the kernel log, NICs
    and RDMA ports down or slow. Each check ends ok, warning, fail or not-applicable with its
    evidence; exit code 1 when any check failed. With --on-fail, a failing host is drained
    (Slurm) or tainted (Kubernetes)."""
    exp = expectations_from(expect_gpus, expect_model, expect_nic_speed, nic_names,
                            expect_compute_partition, expect_memory_partition)
    name = node or node_name()
    if on_fail.action is not None:
        # refused before any check runs, not after their lines are out (as every other bad input)
        check_node(name)
    if kernel_log is not None:
        _check_kernel_log(kernel_log)
    results = run_checks(exp, root=root, log_path=kernel_log)
    code = exit_code(results)
    if as_json:
        host = hostname()
        for r in results:
            emit(check_line(r.to_dict(), host))
    else:
        for line in result_lines(results, verbose):
            print(printable(line))
        print(f"# preflight: {overall(results)}", file=sys.stderr)
    if junit:
        junit_xml.write(junit, [junit_xml.preflight_suite(results, name)])
    problems = node_problems(results)
    take_out(on_fail, {name: problems} if problems else {}, [name], as_json)
    if as_json:   # last: a failed drain ends the command first
        emit(summary_line("preflight", host=hostname(), status=overall(results),
                          counts={s: sum(r.status == s for r in results) for s in (OK, WARNING, FAIL, NA)},
                          exit_code=code))
    return code


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``preflight`` line checked as the command checks them, without running
    it (cli/argv_check.py). --kernel-log and --node are left to the node that runs it: its file, its
    name."""
    OnFail(params["on_fail_action"], params["apply"], params["undrain"]).check()
    expectations_from(params["expect_gpus"], params["expect_model"], params["expect_nic_speed"],
                      params["nic_names"], params["expect_compute_partition"], params["expect_memory_partition"])


commands = [preflight]
