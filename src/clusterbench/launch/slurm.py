"""Slurm: an sbatch script that runs a clusterbench command under ``srun`` on every task, and
``--submit``: sbatch it, wait for the job (looking at it less and less often, never every second
for a long job), and find its run in the database the ranks stored to.

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.common import Spec, parse_hosts

# sbatch --time as Slurm reads it (time_str2secs): minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds; fields of any width (1440 minutes is
# a day); or UNLIMITED/INFINITE.
_TIME_RE = re.compile(r"([0-9]+)-([0-9]+)(?::([0-9]+)(?::([0-9]+))?)?|([0-9]+)(?::([0-9]+)(?::([0-9]+))?)?")
_TIME_WORDS = ("UNLIMITED", "INFINITE")
_MAX_TIME_S = 2**31 - 1   # Slurm adds the fields up in a C int: more wraps to a garbage limit
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
# sbatch --output file patterns (%j, %x, %N...): paths without white space, quotes, '#', '$',
# '\\' or '`', so sbatch reads the value as one word and no shell ever expands it.
_PATH_RE = re.compile(r"^[A-Za-z0-9_./%@+,=:\-]+$")
# A further directive: --key or --key=value, the value in a set wide enough for constraints
# (a&b|[c*2]), gres (gpu:a100:2), dependencies (afterok:12), exports (ALL,FOO=1), mail addresses.
_EXTRA_RE = re.compile(r"^--[A-Za-z][A-Za-z0-9\-]*(=[A-Za-z0-9_./%@+,=:&|*!^~()\[\]\-]+)?$")
# Variables bash will not export (read-only): `export UID=...` would end the script.
_BASH_READONLY = ("BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID")
# Directives the script writes from options of its own, and those options.
_OWN_DIRECTIVES = {"--job-name": "--job-name", "--nodes": "--nodes", "--ntasks-per-node": "--procs-per-node",
                   "--gpus-per-node": "--gpus-per-node", "--partition": "--partition",
                   "--account": "--account", "--time": "--time", "--output": "--output",
                   "--nodelist": "--nodelist", "--exclusive": "--exclusive"}
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
        if self.time is not None:
            check_time(self.time)
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
            key = line.partition("=")[0]
            if key in _OWN_DIRECTIVES:
                # the later directive wins in sbatch: the script's srun line and --nodes checks
                # would then describe another job than the one Slurm runs
                raise UsageError(f"invalid --sbatch-opt {line!r}: the script sets {key} itself; use "
                                 f"{_OWN_DIRECTIVES[key]}")


def check_time(text: str) -> int | None:
    """``--time`` in seconds (None for no limit), or a UsageError: a limit sbatch reads as the
    one meant, never one it refuses or wraps around."""
    if text.upper() in _TIME_WORDS:
        return None
    m = _TIME_RE.fullmatch(text)
    if not m:
        raise UsageError(f"invalid --time {text!r}: expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                         "D-HH:MM:SS or UNLIMITED")
    d, h, mi, s, m_only, m_s, m_hms = (int(g) if g else 0 for g in m.groups())
    if m.group(1) is not None:
        seconds = ((d * 24 + h) * 60 + mi) * 60 + s
    elif m.group(7) is not None:   # three fields: hours:minutes:seconds
        seconds = (m_only * 60 + m_s) * 60 + m_hms
    else:                          # minutes[:seconds]
        seconds = m_only * 60 + m_s
    if seconds > _MAX_TIME_S:
        raise UsageError(f"invalid --time {text!r}: more than Slurm can hold ({_MAX_TIME_S // 86400} days); "
                         "give UNLIMITED for no limit")
    return seconds


def nodelist_hosts(nodelist: str) -> list[str]:
    """The hosts of ``--nodelist`` (the Slurm hostlist grammar); each a plain host name, so the
    list is safe on an unquoted ``#SBATCH`` line."""
    return parse_hosts(nodelist, "--nodelist")


def sbatch_script(spec: Spec, opts: SlurmOptions) -> str:
    """The batch script: #SBATCH resources, exported environment, then ``srun`` the command."""
    opts.check()
    for key in spec.env:
        if key in _BASH_READONLY:
            raise UsageError(f"invalid --env {key}=...: {key} is read-only in bash, which runs the script")
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
        # sbatch splits directives at white space: separate the names with one comma instead
        # (white space in brackets is refused, so this splits only between names)
        lines.append("#SBATCH --nodelist=" + ",".join(w for w in re.split(r"[\s,]+", opts.nodelist) if w))
    if opts.exclusive:
        lines.append("#SBATCH --exclusive")
    lines += [f"#SBATCH {x}" for x in opts.extra]
    lines += ["", "set -euo pipefail", "# Communication settings passed with --env"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()]
    lines += [*MASTER_ADDR_LINES, "",
        " ".join(["srun", "--kill-on-bad-exit=1", f"--ntasks-per-node={spec.procs_per_node}",
                  *[shlex.quote(w) for w in spec.argv()]]),
        "",
    ]
    return "\n".join(lines)


# The rendezvous address, found and checked in the first seconds of the job, before srun starts
# a rank: a name no lookup finds left every rank waiting for a store that never answered, until
# --wait-timeout cancelled the job. A MASTER_ADDR given (--env) must resolve; else it is the
# job's first node (where this script and rank 0 run), by the address a lookup gives for its
# name, or, where the name is in no lookup or names only a loopback address (Debian's /etc/hosts
# maps a host's own name to 127.0.1.1) and other nodes take part, the first address this node has.
MASTER_ADDR_LINES = (
    "# The rendezvous address: MASTER_ADDR if given, else the job's first node (rank 0's, this one);",
    "# resolved and checked before any rank starts",
    'if [ -n "${MASTER_ADDR:-}" ]; then',
    '  if [ -z "$(getent hosts "$MASTER_ADDR" | head -n 1)" ]; then',
    '    echo "clusterbench: error: MASTER_ADDR $MASTER_ADDR does not resolve on ${SLURMD_NODENAME:-$(hostname)}'
    ' (getent hosts found no address): give an address the nodes reach, --env MASTER_ADDR=IP" >&2',
    "    exit 2",
    "  fi",
    "else",
    # (set -e ends the script at an assignment whose pipeline failed: a name getent cannot find)
    '  master=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1) || true',
    '  found=$(getent hosts "$master" | awk \'{print $1; exit}\') || true',
    '  MASTER_ADDR=$found',
    '  unreachable() { [ -z "$MASTER_ADDR" ] || { [ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ] \\',
    '    && case "$MASTER_ADDR" in 127.*|::1) true ;; *) false ;; esac; }; }',
    '  if unreachable && [ "$master" = "${SLURMD_NODENAME:-}" ]; then',
    '    MASTER_ADDR=$(hostname -I 2>/dev/null | awk \'{print $1}\') || true',
    "  fi",
    "  if unreachable; then",
    '    echo "clusterbench: error: MASTER_ADDR: node $master, the job\'s first, has no address the other nodes'
    ' reach (getent hosts on ${SLURMD_NODENAME:-$(hostname)}: ${found:-none}): give one, --env MASTER_ADDR=IP" >&2',
    "    exit 2",
    "  fi",
    "fi",
    "export MASTER_ADDR",
)


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


@dataclass(frozen=True)
class JobInfo:
    """What ``scontrol show job`` says about a job: its state, exit code, and how long it waited
    in the queue apart from how long it has run."""

    state: str                      # PENDING, RUNNING, COMPLETED, ...; "" once Slurm forgot the job
    exit_code: str = ""
    reason: str = ""                # why it waits (Priority, Resources, ...)
    queued_s: float | None = None   # StartTime - SubmitTime once it started, else time since submit
    run_s: float | None = None      # RunTime
    stderr: str = ""                # StdErr: the file the job's standard error went to

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES or self.state == ""

    def describe(self) -> str:
        """``RUNNING 0:01:10 (queued 0:00:42)``, ``PENDING (Resources) 0:00:42``."""
        if self.state == "PENDING":
            why = f" ({self.reason})" if self.reason and self.reason != "None" else ""
            return f"PENDING{why}" + (f" {_clock(self.queued_s)}" if self.queued_s is not None else "")
        parts = [self.state or "UNKNOWN"]
        if self.run_s is not None:
            parts.append(_clock(self.run_s))
        if self.queued_s is not None:
            parts.append(f"(queued {_clock(self.queued_s)})")
        return " ".join(parts)

    def ended(self, job: str) -> str:
        """How the job ended: ``Slurm job 12 COMPLETED (exit 0:0; queued 3 s, ran 41 s)``."""
        times = ", ".join(t for t in (f"queued {self.queued_s:.0f} s" if self.queued_s is not None else "",
                                      f"ran {self.run_s:.0f} s" if self.run_s is not None else "") if t)
        return f"Slurm job {job} {self.state} (exit {self.exit_code or '?'}" + (f"; {times})" if times else ")")


def _clock(seconds: float) -> str:
    s = int(max(0.0, seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _slurm_seconds(text: str) -> float | None:
    """Slurm's [D-]HH:MM:SS (RunTime) in seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d{2}):(\d{2})", text)
    if not m:
        return None
    d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def _slurm_time(text: str) -> float | None:
    """Slurm's local ISO time (SubmitTime=2024-05-01T10:00:00) as a Unix time."""
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:  # Unknown, None
        return None


def parse_job(text: str, now: float | None = None) -> JobInfo:
    """A ``scontrol show job -o`` line as JobInfo."""
    fields = dict(re.findall(r"\b(\w+)=(\S*)", text))
    state = fields.get("JobState", "")
    submit, start = _slurm_time(fields.get("SubmitTime", "")), _slurm_time(fields.get("StartTime", ""))
    queued = None
    if submit is not None:
        if state == "PENDING":
            queued = (now if now is not None else time.time()) - submit
        elif start is not None:
            queued = start - submit
    run_s = _slurm_seconds(fields.get("RunTime", "")) if state != "PENDING" else None
    return JobInfo(state, fields.get("ExitCode", ""), fields.get("Reason", ""), queued, run_s,
                   fields.get("StdErr", ""))


ERROR_PREFIX = "clusterbench: error: "
_TAIL_BYTES = 1 << 16


def job_error(info: JobInfo) -> str | None:
    """The last ``clusterbench: error:`` line the job wrote to its standard error (the batch
    script's own checks, a rank's one line), without the prefix; None when there is none or the
    file cannot be read here (an output directory only the nodes see)."""
    try:
        with open(info.stderr, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - _TAIL_BYTES))
            tail = f.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    lines = [line[len(ERROR_PREFIX):].strip() for line in tail.splitlines() if line.startswith(ERROR_PREFIX)]
    return (lines[-1] or None) if lines else None


def job_info(job: str) -> JobInfo:
    """The job as ``scontrol show job`` sees it now; state "" once Slurm has forgotten it."""
    scontrol = _need("scontrol")
    r = subprocess.run([scontrol, "show", "job", "-o", job], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return JobInfo("")
    return parse_job(r.stdout)


def poll_intervals(first: float = 1.0, factor: float = 1.5, limit: float = 30.0) -> Iterator[float]:
    """Seconds between two looks at the job: ``first``, then growing by ``factor`` up to
    ``limit``, so a long job costs slurmctld a query every ``limit`` seconds, not every second
    (``sbatch --wait`` likewise backs off). The caller starts over when the state changes."""
    wait = first
    while True:
        yield wait
        wait = min(limit, wait * factor)


def wait(job: str, timeout: float, on_state: Callable[[JobInfo], None] | None = None,
         first_poll: float = 1.0, max_poll: float = 30.0,
         sleep: Callable[[float], None] = time.sleep) -> JobInfo:
    """Wait until the job ends, telling ``on_state`` what Slurm says after each look; cancel it
    and fail when ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    info = JobInfo("PENDING")
    intervals = poll_intervals(first_poll, limit=max_poll)
    last = None
    while time.monotonic() < deadline:
        info = job_info(job)
        if on_state is not None:
            on_state(info)
        if info.done:
            return info if info.state else JobInfo("UNKNOWN")
        if info.state != last:  # just started (or was requeued): look again soon
            intervals = poll_intervals(first_poll, limit=max_poll)
            last = info.state
        sleep(min(next(intervals), max(0.0, deadline - time.monotonic())))
    scancel = shutil.which("scancel")
    if scancel:
        subprocess.run([scancel, job], capture_output=True, timeout=30)
    raise ClusterbenchError(f"Slurm job {job} still {info.state or 'pending'} after {timeout:g} s: cancelled")
