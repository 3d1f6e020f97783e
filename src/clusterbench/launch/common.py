"""What every launcher shares: validated host names and environment, the clusterbench command
line a rank runs, and quoting for ssh-like agents.

Commands are argument lists. Where a shell is unavoidable (an sbatch script, ssh's remote
command line, a container's command), every word is quoted with ``shlex.quote`` and host
names must match a strict pattern, so a host name or tag with shell metacharacters is data,
never code. No value given to a launcher may hold a control character (newline, NUL, ...,
and the C1 controls such as NEL ``\x85`` or CSI ``\x9b``): a newline would end a line of a
script, hostfile or directive, and a line break inside a quoted word would still end a ``#``
comment line of the printed text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterbench.errors import UsageError
from clusterbench.printable import not_utf8

# Host names, IPv4/IPv6 addresses and Slurm node names; nothing a shell would interpret.
_HOST_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:%\-]*$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")

DEFAULT_AGENT = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


def check_text(value: str, what: str) -> str:
    """``value`` unless it holds a control character or bytes that are not UTF-8 (a lone
    surrogate: no YAML reader or API server takes one); ``what`` names the option in the error."""
    m = _CONTROL_RE.search(value)
    if m:
        raise UsageError(f"invalid {what} {value!r}: control character {m.group(0)!r} "
                         "(newline, NUL, ...) not allowed")
    if not_utf8(value):
        raise UsageError(f"invalid {what} {value!r}: not UTF-8 text")
    return value


def check_host(host: str, where: str = "host") -> str:
    host = host.strip()
    if not host or not (_HOST_RE.fullmatch(host) or _ipv6(host)) or len(host) > 253:
        raise UsageError(f"invalid {where} {host!r}: expected a host name or address")
    return host


def _ipv6(host: str) -> bool:
    """An IPv6 address (``::1``, ``fe80::1%eth0``): it may start with ':', which no name does."""
    import ipaddress

    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return _HOST_RE.fullmatch("0" + host) is not None   # and holds nothing a shell interprets


def parse_hosts(text: str, what: str = "--hosts") -> list[str]:
    """``a,b,c`` or a Slurm hostlist ``rack[1-2]-gpu[01-04]`` (``clusterbench.hostlist``)."""
    from clusterbench.hostlist import expand_hostlist

    check_text(text, what)
    hosts = [check_host(h) for h in expand_hostlist(text.strip(), what)]
    if not hosts:
        raise UsageError(f"{what}: no host given")
    if len(set(hosts)) != len(hosts):
        raise UsageError(f"{what}: a host is listed twice in {text!r}")
    return hosts


def parse_env(items: Iterable[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY_RE.fullmatch(key):
            raise UsageError(f"invalid --env {item!r}: expected KEY=VALUE with a variable name as KEY")
        env[key] = check_text(value, "--env value")
    return env


def bench_command(words: Sequence[str]) -> list[str]:
    """The clusterbench arguments after ``--`` (a leading ``clusterbench`` is dropped)."""
    words = list(words)
    if words and words[0].startswith("-") and words[0] != "--":
        # click passes an unknown option on as the start of the command, which would
        # swallow every launcher option after it: say so instead
        raise UsageError(f"no such option: {words[0]} (options go before --, the "
                         "clusterbench command after it)")
    if words and words[0] == "--":
        words = words[1:]
    if words and words[0] in ("clusterbench", "clusterbench.exe"):
        words = words[1:]
    if not words:
        raise UsageError("no command: give the clusterbench command after --, e.g. -- coll all_reduce")
    for w in words:
        check_text(w, "command word")
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


def split_agent(text: str, what: str = "--agent") -> list[str]:
    """An agent command given as one string (``"ssh -p 2222"``) as an argument list."""
    check_text(text, what)
    try:
        words = shlex.split(text)
    except ValueError as e:  # an unclosed quote
        raise UsageError(f"invalid {what} {text!r}: {e}") from None
    if not words:
        raise UsageError(f"invalid {what} {text!r}: empty")
    return words


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
        # Builders are called from Python too (sweep, tests): check here what the CLI checks.
        for key, value in self.env.items():
            if not _ENV_KEY_RE.fullmatch(key):
                raise UsageError(f"invalid environment variable name {key!r}")
            check_text(value, "--env value")
        for w in [*self.exe, *self.command]:
            check_text(w, "command word")
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
