"""Slurm: an sbatch script that runs a clusterbench command under ``srun`` on every task, and
``--submit``: sbatch it, wait for the job, and find its run in the database the ranks stored to.

The script is the one place a shell reads our words, so each is quoted with ``shlex.quote``.
``#SBATCH`` lines are read by sbatch, not by a shell, and cannot be quoted: sbatch splits them
at white space, takes quotes as its own and ``#`` as the start of a comment. So every value on
them is checked against a character set instead, and a newline (which would start a new line
of the script) is refused everywhere.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.common import Spec, parse_hosts

_TIME_RE = re.compile(r"^(\d+-)?\d{1,3}(:\d{2}){0,2}$|^UNLIMITED$|^INFINITE$", re.IGNORECASE)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
# sbatch --output file patterns (%j, %x, %N...): paths without white space, quotes, '#', '$',
# '\\' or '`', so sbatch reads the value as one word and no shell ever expands it.
_PATH_RE = re.compile(r"^[A-Za-z0-9_./%@+,=:\-]+$")
# A further directive: --key or --key=value, the value in a set wide enough for constraints
# (a&b|[c*2]), gres (gpu:a100:2), dependencies (afterok:12), exports (ALL,FOO=1), mail addresses.
_EXTRA_RE = re.compile(r"^--[A-Za-z][A-Za-z0-9\-]*(=[A-Za-z0-9_./%@+,=:&|*!^~()\[\]\-]+)?$")
DONE_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
               "PREEMPTED", "BOOT_FAIL", "DEADLINE")


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    time: str | None = "00:30:00"
    job_name: str = "clusterbench"
    account: str | None = None
    output: str | None = None          # sbatch --output; default slurm-%j.out
    exclusive: bool = False
    extra: tuple[str, ...] = ()        # further #SBATCH lines, e.g. --constraint=mi300x
    nodelist: str | None = None        # sbatch --nodelist, a Slurm hostlist (checked by nodelist_hosts)

    def check(self) -> None:
        for what, value in (("--partition", self.partition), ("--job-name", self.job_name),
                            ("--account", self.account)):
            if value is not None and not _NAME_RE.fullmatch(value):
                raise UsageError(f"invalid {what} {value!r}: letters, digits, '.', '_' and '-' only")
        if self.time is not None and not _TIME_RE.fullmatch(self.time):
            raise UsageError(f"invalid --time {self.time!r}: expected [D-]HH:MM:SS, MM or UNLIMITED")
        if self.output is not None and not _PATH_RE.fullmatch(self.output):
            raise UsageError(f"invalid --output {self.output!r}: a path of letters, digits and "
                             "'_ . / % @ + , = : -' only (sbatch reads #SBATCH lines unquoted)")
        if self.nodelist is not None:
            nodelist_hosts(self.nodelist)
        for line in self.extra:
            if not _EXTRA_RE.fullmatch(line):
                raise UsageError(f"invalid --sbatch-opt {line!r}: expected one --key or --key=value "
                                 "without spaces, quotes, '#', '$' or '\\' (sbatch reads #SBATCH lines "
                                 "unquoted)")


def nodelist_hosts(nodelist: str) -> list[str]:
    """The hosts of ``--nodelist`` (the Slurm hostlist grammar); each a plain host name, so the
    list is safe on an unquoted ``#SBATCH`` line."""
    return parse_hosts(nodelist, "--nodelist")


def sbatch_script(spec: Spec, opts: SlurmOptions) -> str:
    """The batch script: #SBATCH resources, exported environment, then ``srun`` the command."""
    opts.check()
    lines = ["#!/bin/bash", f"#SBATCH --job-name={opts.job_name}", f"#SBATCH --nodes={spec.nodes}",
             f"#SBATCH --ntasks-per-node={spec.procs_per_node}"]
    if spec.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={spec.gpus_per_node}")
    if opts.partition:
        lines.append(f"#SBATCH --partition={opts.partition}")
    if opts.account:
        lines.append(f"#SBATCH --account={opts.account}")
    if opts.time:
        lines.append(f"#SBATCH --time={opts.time}")
    if opts.output:
        lines.append(f"#SBATCH --output={opts.output}")
    if opts.nodelist:
        # sbatch splits directives at white space: separate the names with commas instead
        lines.append("#SBATCH --nodelist=" + ",".join(opts.nodelist.split()))
    if opts.exclusive:
        lines.append("#SBATCH --exclusive")
    lines += [f"#SBATCH {x}" for x in opts.extra]
    lines += ["", "set -euo pipefail", "# Communication settings passed with --env"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()]
    lines += [
        "# Rank 0's host is the rendezvous address unless MASTER_ADDR is given",
        'if [ -z "${MASTER_ADDR:-}" ]; then',
        '  MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "fi",
        "export MASTER_ADDR",
        "",
        " ".join(["srun", "--kill-on-bad-exit=1", f"--ntasks-per-node={spec.procs_per_node}",
                  *[shlex.quote(w) for w in spec.argv()]]),
        "",
    ]
    return "\n".join(lines)


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise UsageError(f"{tool} not found on PATH: run on a Slurm login node, or use --print "
                         "to get the script")
    return path


def submit(script_path: str, timeout: float = 60.0) -> str:
    """``sbatch --parsable``; returns the job id."""
    sbatch = _need("sbatch")
    try:
        r = subprocess.run([sbatch, "--parsable", script_path], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterbenchError(f"sbatch did not answer within {timeout:g} s") from None
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise ClusterbenchError(f"sbatch failed (exit {r.returncode}): {msg}")
    job = r.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise ClusterbenchError(f"sbatch printed no job id: {r.stdout.strip()[:120]!r}")
    return job


def job_state(job: str) -> tuple[str, str]:
    """(state, exit code) from ``scontrol show job``; ("", "") once Slurm has forgotten it."""
    scontrol = _need("scontrol")
    r = subprocess.run([scontrol, "show", "job", "-o", job], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return "", ""
    state = re.search(r"\bJobState=(\S+)", r.stdout)
    code = re.search(r"\bExitCode=(\S+)", r.stdout)
    return (state.group(1) if state else "", code.group(1) if code else "")


def wait(job: str, timeout: float, poll: float = 1.0) -> tuple[str, str]:
    """Wait until the job ends; cancel it and fail when ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    state, code = "", ""
    while time.monotonic() < deadline:
        state, code = job_state(job)
        if state in DONE_STATES or state == "":
            return state or "UNKNOWN", code
        time.sleep(poll)
    scancel = shutil.which("scancel")
    if scancel:
        subprocess.run([scancel, job], capture_output=True, timeout=30)
    raise ClusterbenchError(f"Slurm job {job} still {state or 'pending'} after {timeout:g} s: cancelled")
