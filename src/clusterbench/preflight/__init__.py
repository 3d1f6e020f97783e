"""Preflight: fast health checks of this host before a long run (``clusterbench preflight``).

``run_checks()`` gathers the facts once (inventory, kernel log, ECC counters) and runs every
check in ``checks``; ``exit_code()`` is 1 when any check failed, as in ``clusterbench validate``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterbench.preflight import checks as c
from clusterbench.preflight import kernel_log
from clusterbench.preflight.checks import CheckResult, Expectations


def _ecc(use_libraries: bool) -> list[dict[str, Any]]:
    if not use_libraries:
        return []
    from clusterbench.envinfo import gpulib

    rows: list[dict[str, Any]] = []
    for lib in gpulib.libraries():
        rows += lib.ecc()
    return rows


def run_checks(expect: Expectations, root: str | Path = "/", log_path: str | Path | None = None,
               inventory: dict[str, Any] | None = None) -> list[CheckResult]:
    from clusterbench.envinfo import inventory as inv_mod

    root = Path(root)
    use_libraries = str(root) == "/"
    inv = inventory if inventory is not None else inv_mod.collect(root, use_libraries=use_libraries)
    findings: list[kernel_log.Finding] | None = None
    if log_path is not None:
        findings, source = kernel_log.scan(log_path)
    elif not use_libraries:
        source = "kernel log not read for a fake sysfs root (give --kernel-log FILE)"
    else:
        text, source = kernel_log.read()
        findings = kernel_log.parse(text) if text is not None else None
    checks: list[tuple[str, Callable[[], CheckResult]]] = [
        ("gpu_count", lambda: c.gpu_count(inv, expect)),
        ("torch_gpus", lambda: c.torch_gpus(inv)),
        ("gpu_model", lambda: c.gpu_model(inv, expect)),
        ("gpu_partition", lambda: c.gpu_partition(inv, expect)),
        ("pcie_link", lambda: c.pcie_links(inv, expect)),
        ("pcie_aer", lambda: c.pcie_aer(inv, expect)),
        ("gpu_ecc", lambda: c.gpu_ecc(inv, _ecc(use_libraries))),
        ("kernel_log", lambda: c.kernel_log(findings, source)),
        ("nic", lambda: c.nics(inv, expect)),
        ("rdma", lambda: c.rdma_ports(inv, expect)),
    ]
    return [_guarded(name, check) for name, check in checks]


COULD_NOT_RUN = "the check could not run"


def _guarded(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """One check, whose error (facts shaped as no check expected, NVML or AMD SMI raising)
    costs that check only: it ends ``fail``, since a node no check could vouch for must not pass
    (and the exit code stays 1, as an internal error's), while every other check still reports."""
    try:
        return check()
    except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
        return CheckResult(name, c.FAIL, COULD_NOT_RUN, [f"{type(e).__name__}: {e}"])


def node_problems(results: list[CheckResult]) -> list[str]:
    """What ``--on-fail`` takes a node out for: the checks that failed on what they read. A check
    that could not run failed on clusterbench's side; a defect there would hit every node alike,
    and must not drain the fleet."""
    return [f"preflight {r.check}: {r.summary}" for r in results if r.status == c.FAIL and r.summary != COULD_NOT_RUN]


def overall(results: list[CheckResult]) -> str:
    statuses = {r.status for r in results}
    for s in (c.FAIL, c.WARNING, c.OK):
        if s in statuses:
            return s
    return c.NA


def exit_code(results: list[CheckResult]) -> int:
    return 1 if any(r.status == c.FAIL for r in results) else 0


def record(results: list[CheckResult]) -> dict[str, Any]:
    """The outcome as stored with a run (``run.meta["preflight"]``)."""
    return {"status": overall(results), "checks": [r.to_dict() for r in results]}


def before_run(expect: Expectations | None = None, say: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """Preflight ahead of a benchmark (``clusterbench run``): returns the metadata to store with
    the run (``{"preflight": {...}}``) and reports problems, but never stops the run: a check
    that cannot run is recorded as an error. Under a launcher only rank 0, which stores the
    run, checks its host; other ranks return None."""
    import sys

    from clusterbench.envinfo.inventory import hostname
    from clusterbench.ranks.env import detect

    say = say or (lambda text: print(text, file=sys.stderr))
    env = detect()   # a launcher environment that is wrong stops the command itself, said once
    if env is not None and env.rank != 0:
        return None
    try:
        results = run_checks(expect or Expectations())
    except Exception as e:  # noqa: BLE001 - a broken check must not cost the benchmark
        say(f"# preflight: error: {type(e).__name__}: {e}")
        return {"preflight": {"status": "error", "error": f"{type(e).__name__}: {e}", "host": hostname()}}
    rec = record(results)
    rec["host"] = hostname()
    problems = [r for r in results if r.status in (c.FAIL, c.WARNING)]
    say(f"# preflight on {rec['host']}: {rec['status']}"
        + (" (details: clusterbench preflight)" if problems else ""))
    for r in problems:
        say(f"#   {r.status}: {r.check}: {r.summary}")
    return {"preflight": rec}


__all__ = ["CheckResult", "Expectations", "before_run", "exit_code", "overall", "record", "run_checks"]
