"""Open MPI: hostfile parsing and the ``mpirun`` argument list (slots, ``-x`` environment,
``--mca`` options), plus a reachability check of every host before the job starts.

Under mpirun each rank reads OMPI_COMM_WORLD_*; MASTER_ADDR (the first host) is exported
with ``-x`` because the process group needs a TCP rendezvous address.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from clusterbench.errors import UsageError
from clusterbench.launch.common import Spec, check_host, check_text, split_agent
from clusterbench.textfile import read_user_text

_KV_RE = re.compile(r"^(slots|max_slots|max-slots)=([0-9]+)$")
# Open MPI copies MCA parameters onto the command line that starts its daemon on every remote
# host, read there by the agent's (ssh's) shell without shell-safe quoting: values stay in this set.
_MCA_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:/@%+=^*\-]+")


@dataclass(frozen=True)
class HostSlots:
    host: str
    slots: int = 1


def parse_hostfile(text: str, name: str = "hostfile") -> list[HostSlots]:
    """Open MPI hostfile lines: ``host [slots=N] [max_slots=M]``, ``#`` comments; ``host:N`` too.

    Lines and words are split as Open MPI splits them (at ``\n``; at spaces and tabs), and any
    other control character is an error: a vertical tab or a lone ``\r`` that Python takes for a
    line break would let us check other hosts than the ones mpirun reads."""
    out: list[HostSlots] = []
    seen: set[str] = set()
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r").split("#", 1)[0].strip(" \t")
        if not line:
            continue
        try:
            check_text(line.replace("\t", " "), "line")
        except UsageError:
            raise UsageError(f"{name} line {n}: control character in {line!r}") from None
        words = re.split(r"[ \t]+", line)
        host, _, count = words[0].partition(":") if words[0].count(":") == 1 else (words[0], "", "")
        try:
            check_host(host)
        except UsageError:
            raise UsageError(f"{name} line {n}: invalid host {host!r}") from None
        slots = 1
        if count:
            if not re.fullmatch(r"[0-9]+", count):
                raise UsageError(f"{name} line {n}: invalid slot count {count!r}")
            slots = int(count)
        for w in words[1:]:
            m = _KV_RE.fullmatch(w)
            if not m:
                raise UsageError(f"{name} line {n}: unexpected {w!r} (expected slots=N or max_slots=N)")
            if m.group(1) == "slots":
                slots = int(m.group(2))
        if slots < 1:
            raise UsageError(f"{name} line {n}: slots must be at least 1")
        if host in seen:
            raise UsageError(f"{name} line {n}: host {host!r} listed twice")
        seen.add(host)
        out.append(HostSlots(host, slots))
    if not out:
        raise UsageError(f"{name}: no hosts")
    return out


def read_hostfile(path: str) -> list[HostSlots]:
    check_text(path, "--hostfile")
    return parse_hostfile(read_user_text(path, "hostfile"), os.path.basename(path))


def mpirun_argv(
    spec: Spec,
    hosts: Sequence[HostSlots],
    *,
    hostfile: str | None = None,
    mca: Sequence[tuple[str, str]] = (),
    agent: str | None = None,
    master_port: int = 29500,
    allow_root: bool | None = None,
    oversubscribe: bool = False,
    mpirun: str = "mpirun",
) -> list[str]:
    """``mpirun -n N`` over the hosts, ``-N`` processes per node, env exported with ``-x``."""
    np = spec.world_size
    capacity = sum(h.slots for h in hosts)
    if not oversubscribe and np > capacity:
        raise UsageError(f"{np} ranks need more than the {capacity} slots of the hosts "
                         "(use --oversubscribe or fewer --procs-per-node)")
    if spec.nodes > len(hosts):
        raise UsageError(f"--nodes {spec.nodes} but only {len(hosts)} host(s) are given")
    argv = [mpirun]
    if allow_root if allow_root is not None else os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    if oversubscribe:
        argv.append("--oversubscribe")
    if hostfile:
        argv += ["--hostfile", hostfile]
    else:
        for h in hosts[:spec.nodes]:
            if ":" in h.host:
                # mpirun reads -H HOST:SLOTS up to the first ':', so fe80::1:8 would be host fe80
                raise UsageError(f"IPv6 address {h.host!r}: mpirun -H cannot take one; list the hosts "
                                 "in a --hostfile instead")
        argv += ["-H", ",".join(f"{h.host}:{h.slots}" for h in hosts[:spec.nodes])]
    argv += ["-n", str(np), "-N", str(spec.procs_per_node)]
    if agent:
        argv += ["--mca", "plm_rsh_agent", " ".join(check_agent(agent))]
    for key, value in mca:
        argv += ["--mca", key, value]
    argv += ["-x", f"MASTER_ADDR={hosts[0].host}", "-x", f"MASTER_PORT={master_port}"]
    for key, value in spec.env.items():
        argv += ["-x", f"{key}={value}"]
    return [*argv, *spec.argv()]


def parse_mca(items: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"^[A-Za-z0-9_]+$", key):
            raise UsageError(f"invalid --mca {item!r}: expected KEY=VALUE, e.g. btl_tcp_if_include=eth0")
        if not _MCA_VALUE_RE.fullmatch(value):
            raise UsageError(f"invalid --mca value {value!r}: letters, digits and '_ . , : / @ % + = ^ * -' "
                             "only (Open MPI passes it to the remote hosts' shells without shell quoting)")
        out.append((key, value))
    return out


def check_agent(agent: str) -> list[str]:
    """The ``--agent`` words; Open MPI hands ``plm_rsh_agent`` on like any MCA value, so each
    word stays in the MCA character set."""
    words = split_agent(agent)
    for w in words:
        if not _MCA_VALUE_RE.fullmatch(w):
            raise UsageError(f"invalid --agent {agent!r}: word {w!r} has characters other than "
                             "letters, digits and '_ . , : / @ % + = ^ * -'")
    return words


def _is_local(host: str) -> bool:
    return host in ("localhost", "127.0.0.1", "::1", socket.gethostname())


def is_this_host(host: str) -> bool:
    """Whether ``host`` is the machine this runs on: a local name, or a name or address of which
    one address can be bound here (an address of one of this machine's interfaces)."""
    if _is_local(host):
        return True
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    for family, _type, _proto, _name, addr in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((addr[0], 0, *addr[2:]))
            return True
        except OSError:
            continue
    return False


def unreachable(hosts: Sequence[str], agent: Sequence[str], timeout: float = 15.0) -> list[tuple[str, str]]:
    """Hosts the launch agent cannot run ``true`` on, with the reason; local hosts are skipped."""
    def probe(host: str) -> tuple[str, str] | None:
        if _is_local(host):
            return None
        try:
            r = subprocess.run([*agent, host, "true"], capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return host, f"no answer within {timeout:g} s"
        except OSError as e:
            raise UsageError(f"cannot start the launch agent {agent[0]!r}: {e.strerror}") from None
        if r.returncode != 0:
            return host, (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1][:200]
        return None

    with ThreadPoolExecutor(max_workers=min(16, max(1, len(hosts)))) as pool:
        return [x for x in pool.map(probe, hosts) if x]
