"""What every launcher shares: validated host names and environment, the clusterbench command
line a rank runs, and quoting for ssh-like agents.

Commands are argument lists. Where a shell is unavoidable (an sbatch script, ssh's remote
command line, a container's command), every word is quoted with ``shlex.quote`` and host
names must match a strict pattern, so a host name or tag with shell metacharacters is data,
never code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterbench.errors import UsageError

# Host names, IPv4/IPv6 addresses and Slurm node names; nothing a shell would interpret.
_HOST_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:%\-]*$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DEFAULT_AGENT = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


def check_host(host: str, where: str = "host") -> str:
    host = host.strip()
    if not host or not _HOST_RE.match(host) or len(host) > 253:
        raise UsageError(f"invalid {where} {host!r}: expected a host name or address")
    return host


def parse_hosts(text: str) -> list[str]:
    """``a,b,c`` or a Slurm hostlist ``gpu[01-04]``."""
    from clusterbench.dist.rankenv import expand_hostlist

    hosts = [check_host(h) for h in expand_hostlist(text.strip()) if h.strip()]
    if not hosts:
        raise UsageError("--hosts: no host given")
    if len(set(hosts)) != len(hosts):
        raise UsageError(f"--hosts: a host is listed twice in {text!r}")
    return hosts


def parse_env(items: Iterable[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY_RE.match(key):
            raise UsageError(f"invalid --env {item!r}: expected KEY=VALUE with a variable name as KEY")
        env[key] = value
    return env


def bench_command(words: Sequence[str]) -> list[str]:
    """The clusterbench arguments after ``--`` (a leading ``clusterbench`` is dropped)."""
    words = list(words)
    if words and words[0] == "--":
        words = words[1:]
    if words and words[0] in ("clusterbench", "clusterbench.exe"):
        words = words[1:]
    if not words:
        raise UsageError("no command: give the clusterbench command after --, e.g. -- coll all_reduce")
    return words


def with_store_args(words: list[str], db: str | None, tags: dict[str, str]) -> list[str]:
    """Append ``--db`` and ``--tag`` so every rank stores into the same database and run group."""
    out = list(words)
    if db:
        out += ["--db", db]
    for k, v in tags.items():
        out += ["--tag", f"{k}={v}"]
    return out


def remote_line(argv: Sequence[str]) -> list[str]:
    """Words for an ssh-like agent, which joins its arguments into one remote shell line:
    quoting each word keeps metacharacters literal on the far side."""
    return [shlex.quote(str(a)) for a in argv]


def env_argv(env: dict[str, str]) -> list[str]:
    return ["env", *[f"{k}={v}" for k, v in env.items()]] if env else []


@dataclass
class Spec:
    """A distributed run: how many nodes and processes, the environment, the command."""

    nodes: int = 1
    procs_per_node: int = 1
    gpus_per_node: int = 0
    env: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)   # clusterbench arguments
    exe: list[str] = field(default_factory=lambda: ["clusterbench"])

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise UsageError(f"--nodes must be at least 1, got {self.nodes}")
        if self.procs_per_node < 1:
            raise UsageError(f"--procs-per-node must be at least 1, got {self.procs_per_node}")
        if self.gpus_per_node < 0:
            raise UsageError(f"--gpus-per-node must not be negative, got {self.gpus_per_node}")

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node

    def argv(self) -> list[str]:
        return [*self.exe, *self.command]
