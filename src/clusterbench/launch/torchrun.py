"""torchrun (PyTorch elastic) across nodes: the argument list, and a runner that starts it on
every host through an ssh-like agent and says which host is to blame when it fails.

Two rendezvous styles:
- c10d (default): every node runs the same line with ``--rdzv_backend=c10d`` and an endpoint on
  the first host; ``--rdzv_conf is_host=1`` on that host and ``--local_addr`` on each are
  needed where the machine's host name does not resolve to its cluster address (containers,
  namespaces);
- static: ``--node_rank=R`` plus ``--master_addr/--master_port``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.common import Spec, check_host, check_text, env_argv, remote_line

DEFAULT_PORT = 29400

# How long a host told to stop (SIGTERM to its agent's process group) has before it is killed.
# torchrun gives its workers 30 s to end after the signal before it kills them (PyTorch elastic's
# close timeout), and within that time rank 0 stores the run it has: a host is waited for until
# its last process holding our pipes has ended (rank 0 included, which runs in a session of its
# own: the group's SIGKILL would not reach it), so the launch never returns while rank 0 is
# still writing the run.
STOP_GRACE_S = 40.0


def endpoint_of(host: str, port: int) -> str:
    """``HOST:PORT``, an IPv6 address in brackets: ``fe80::1:29400`` names no port torchrun
    can tell from the address."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6addr]:PORT`` too) with a plain host name and a port number."""
    host, _, port = endpoint.rpartition(":")
    if not host or not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:
        raise UsageError(f"invalid --rdzv-endpoint {endpoint!r}: expected HOST:PORT")
    bracketed = host.startswith("[") and host.endswith("]")   # [v6addr]; no other brackets
    if ":" in host and not bracketed:
        raise UsageError(f"invalid --rdzv-endpoint {endpoint!r}: write an IPv6 address in brackets, "
                         f"[{host}]:{port}")
    name = check_host(host[1:-1] if bracketed else host, "rendezvous host")
    return f"[{name}]" if bracketed else name, int(port)


def torchrun_argv(
    spec: Spec,
    endpoint: str,
    *,
    node_rank: int | None = None,
    rdzv_id: str = "clusterbench",
    local_addr: str | None = None,
    is_host: bool | None = None,
    join_timeout: float | None = None,
    torchrun: Sequence[str] = ("torchrun",),
) -> list[str]:
    """The torchrun line for one node; the clusterbench command runs as ``python -m clusterbench``."""
    host, port = parse_endpoint(endpoint)
    endpoint = f"{host}:{port}"   # as checked: without white space around the host
    check_text(rdzv_id, "--rdzv-id")
    argv = [*torchrun, f"--nnodes={spec.nodes}", f"--nproc_per_node={spec.procs_per_node}"]
    if node_rank is not None:
        if not 0 <= node_rank < spec.nodes:
            raise UsageError(f"--node-rank {node_rank} is outside 0..{spec.nodes - 1}")
        argv += [f"--node_rank={node_rank}", f"--master_addr={host}", f"--master_port={port}"]
    else:
        argv += ["--rdzv_backend=c10d", f"--rdzv_endpoint={endpoint}", f"--rdzv_id={rdzv_id}"]
        conf = []
        if is_host is not None:
            conf.append(f"is_host={1 if is_host else 0}")
        if join_timeout is not None:
            conf.append(f"join_timeout={int(max(join_timeout, 1))}")
        if conf:
            argv.append(f"--rdzv_conf={','.join(conf)}")
    if local_addr:
        argv.append(f"--local_addr={check_host(local_addr, 'local address')}")
    argv += ["--max_restarts=0"]
    if spec.exe == ["clusterbench"]:
        argv += ["-m", "clusterbench", *spec.command]
    else:
        argv += ["--no_python", *spec.argv()]
    return argv


# -- starting it on every host ------------------------------------------------------------

@dataclass
class HostProcess:
    host: str
    proc: subprocess.Popen
    stderr: deque = field(default_factory=lambda: deque(maxlen=40))
    stdout: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    pumps: list[threading.Thread] = field(default_factory=list)   # its stdout and stderr readers

    def done(self) -> bool:
        """Its agent has exited and every process holding its output (torchrun, its ranks) too."""
        return self.proc.poll() is not None and not any(t.is_alive() for t in self.pumps)


@dataclass
class HostsResult:
    hosts: list[str]
    returncodes: dict[str, int | None]
    stdout: str     # rank 0's standard output: the rendezvous, not the host order, says which
                    # host that is, and only rank 0 prints, so every host's output in host order
    stderr: dict[str, list[str]]
    timed_out: bool = False
    killed: list[str] = field(default_factory=list)   # still running when the run was ended
    unstopped: list[str] = field(default_factory=list)   # still running STOP_GRACE_S after SIGTERM

    @property
    def ok(self) -> bool:
        return not self.timed_out and all(rc == 0 for rc in self.returncodes.values())


# Every host process started and not yet waited for. A caller that runs launches in threads
# (sweep rounds) ends them all with end_all() when it is interrupted: Ctrl-C reaches the main
# thread only, and these processes are in sessions of their own, out of the terminal's reach.
_LIVE: dict[int, HostProcess] = {}
_LIVE_LOCK = threading.Lock()


def end_all() -> None:
    """End every host process still running (a launch interrupted in another thread)."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    stop_hosts(live)


def _pump(stream, sink) -> None:
    for line in iter(stream.readline, ""):
        sink(line.rstrip("\n"))
    stream.close()


def _signal_group(hp: HostProcess, sig: signal.Signals) -> None:
    # the agent's group: the agent may be gone (a shell killed by SIGTERM at once) while
    # torchrun, started by it, still ends its workers in that group
    try:
        os.killpg(hp.proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_hosts(procs: Sequence[HostProcess], grace: float = STOP_GRACE_S) -> list[str]:
    """SIGTERM every host that has not ended, all at once; wait up to ``grace`` seconds for each to
    end with every process holding its output (so rank 0 has stored its run, or failed to),
    then SIGKILL what is left. Returns the hosts that had to be killed."""
    live = [hp for hp in procs if not hp.done()]
    told = [hp for hp in live if hp.proc.poll() is None]
    for hp in told:
        _signal_group(hp, signal.SIGTERM)
    start = time.monotonic()
    deadline = start + grace
    while live and time.monotonic() < deadline:
        live = [hp for hp in live if not hp.done()]
        if time.monotonic() - start > 1.0:
            # an agent that exited on its own has had a second for its pipes to drain: what
            # still holds them is a process it left (torchrun, a rank), told to stop now
            for hp in live:
                if hp not in told:
                    told.append(hp)
                    _signal_group(hp, signal.SIGTERM)
        if live:
            time.sleep(0.05)
    for hp in live:
        _signal_group(hp, signal.SIGKILL)
    for hp in live:
        try:
            hp.proc.wait(3)
        except subprocess.TimeoutExpired:   # a process the kill cannot reap (D state): not ours to wait for
            pass
    return [hp.host for hp in live]


def start_on_hosts(hosts: Sequence[str], agent: Sequence[str], per_host: Sequence[list[str]],
                   quote: bool = True, echo: bool = False) -> list[HostProcess]:
    """Start ``per_host[i]`` on ``hosts[i]`` through the agent (``AGENT HOST WORD...``).

    ``quote``: the agent joins its words into a shell line (ssh); False for agents that
    execute the words as an argument list (``srun -N1 -n1 -w``, ``kubectl exec``).
    ``echo``: copy rank 0's output to our stdout as it arrives (c10d rendezvous numbers the
    nodes by their address, not in this order, so whichever host prints is copied)."""
    procs: list[HostProcess] = []
    try:
        for host, argv in zip(hosts, per_host):
            full = [*agent, host, *(remote_line(argv) if quote else argv)]
            try:
                p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
            except OSError as e:
                raise UsageError(f"cannot start the launch agent {agent[0]!r}: {e.strerror}") from None
            hp = HostProcess(host, p)
            out_sink = hp.stdout.append
            if echo:
                def out_sink(line: str, keep=hp.stdout.append) -> None:
                    keep(line)
                    print(line, flush=True)
            hp.pumps = [threading.Thread(target=_pump, args=(p.stdout, out_sink), daemon=True),
                        threading.Thread(target=_pump, args=(p.stderr, hp.stderr.append), daemon=True)]
            for t in hp.pumps:
                t.start()
            procs.append(hp)
            with _LIVE_LOCK:
                _LIVE[id(hp)] = hp
    except BaseException:
        stop_hosts(procs)
        for hp in procs:
            with _LIVE_LOCK:
                _LIVE.pop(id(hp), None)
        raise
    return procs


def wait_hosts(procs: list[HostProcess], timeout: float, grace: float = 5.0,
               stop_grace: float = STOP_GRACE_S) -> HostsResult:
    """Wait for every host; once one fails, give the others ``grace`` seconds, then stop them
    (``stop_hosts``: ``stop_grace`` seconds to end, rank 0 storing its run, before the kill).
    Returns once every host's processes have ended, never while rank 0 may still write."""
    deadline = time.monotonic() + timeout
    first_fail: float | None = None
    timed_out = False
    killed: list[str] = []
    unstopped: list[str] = []
    try:
        while True:
            now = time.monotonic()
            running = [hp for hp in procs if hp.proc.poll() is None]
            for hp in procs:
                if hp.ended is None and hp.proc.returncode is not None:
                    hp.ended = now
                    if hp.proc.returncode != 0 and first_fail is None:
                        first_fail = now
            if not running:
                break
            if now > deadline or (first_fail is not None and now - first_fail > grace):
                timed_out = now > deadline
                killed = [hp.host for hp in running]
                break
            time.sleep(0.1)
    finally:
        # also after a clean end: a host's agent may have exited before the processes it
        # started (rank 0 storing the run) ended, and its output is read to the end
        unstopped = stop_hosts(procs, stop_grace)
        for hp in procs:
            with _LIVE_LOCK:
                _LIVE.pop(id(hp), None)
    for hp in procs:   # the pipes drained (a killed host's last lines)
        for t in hp.pumps:
            t.join(1.0)
    return HostsResult(
        hosts=[hp.host for hp in procs],
        returncodes={hp.host: (None if hp.host in killed else hp.proc.returncode) for hp in procs},
        stdout="\n".join(line for hp in procs for line in hp.stdout),
        stderr={hp.host: list(hp.stderr) for hp in procs},
        timed_out=timed_out, killed=killed, unstopped=unstopped,
    )


_RDZV_WORDS = ("rendezvoustimeouterror", "rendezvous timed out", "rendezvousclosederror",
               "rendezvous' timed out", "timed out waiting for")


def _last_error(lines: list[str]) -> str:
    for line in reversed(lines):
        text = line.strip()
        if text.startswith("clusterbench: error:"):
            return text[len("clusterbench: error:"):].strip()
    for line in reversed(lines):
        text = line.strip()
        if text and ("Error" in text or "error" in text) and not text.startswith(("File ", "[W")):
            return text[:240]
    return lines[-1].strip()[:240] if lines else "no output"


# ssh and our agents exit 255 when the host cannot be reached
UNREACHABLE = 255


def diagnose(result: HostsResult, endpoint: str, join_timeout: float) -> str | None:
    """One line naming the host at fault, or None when every host succeeded; it says so when a
    host had to be killed (its rank 0 may have stored no run)."""
    if result.ok:
        return None
    message = _at_fault(result, endpoint, join_timeout)
    if result.unstopped:
        message += (f"; {', '.join(result.unstopped)} did not stop within {STOP_GRACE_S:g} s of SIGTERM "
                    "and was killed: the run rank 0 had may not be stored")
    return message


def _at_fault(result: HostsResult, endpoint: str, join_timeout: float) -> str:
    waited = [h for h in result.hosts
              if any(w in line.lower() for line in result.stderr[h] for w in _RDZV_WORDS)]
    if waited:
        missing = [h for h in result.hosts if h not in waited]
        if missing:
            return (f"rendezvous at {endpoint} timed out after {join_timeout:g} s: "
                    f"{', '.join(missing)} never joined (joined: {', '.join(waited)})")
        return f"rendezvous at {endpoint} timed out after {join_timeout:g} s on every host"
    early = [h for h in result.hosts if result.returncodes[h] == UNREACHABLE]
    if early:
        h = early[0]
        return f"host {h} is unreachable: {_last_error(result.stderr[h])}"
    died = [h for h in result.hosts if (result.returncodes[h] or 0) < 0]
    if died:  # killed by a signal: the node (or its agent) went away
        h = died[0]
        try:
            sig = signal.Signals(-(result.returncodes[h] or 0)).name
        except ValueError:
            sig = f"signal {-(result.returncodes[h] or 0)}"
        return f"host {h} died ({sig}) before the run finished"
    failed = [h for h in result.hosts if result.returncodes[h] not in (0, None)]
    if failed:
        h = failed[0]
        return f"host {h} exited with code {result.returncodes[h]}: {_last_error(result.stderr[h])}"
    if result.timed_out:
        return f"no result within the time limit; still running on {', '.join(result.killed)}"
    return f"ended on {', '.join(result.killed)}"


def run_torchrun_on_hosts(
    hosts: Sequence[str],
    agent: Sequence[str],
    spec: Spec,
    *,
    port: int = DEFAULT_PORT,
    rdzv_id: str = "clusterbench",
    join_timeout: float = 60.0,
    timeout: float = 3600.0,
    local_addr: bool = True,
    torchrun: Sequence[str] = ("torchrun",),
    quote: bool = True,
    echo: bool = False,
) -> HostsResult:
    """torchrun with c10d rendezvous on every host; the first host holds the store (which host
    gets rank 0 is the rendezvous's choice)."""
    hosts = [check_host(h) for h in hosts]
    if len(hosts) != spec.nodes:
        raise UsageError(f"{len(hosts)} hosts given for --nodes {spec.nodes}")
    endpoint = endpoint_of(hosts[0], port)
    per_host = []
    for i, host in enumerate(hosts):
        argv = torchrun_argv(spec, endpoint, rdzv_id=rdzv_id, is_host=(i == 0),
                             local_addr=host if local_addr else None, join_timeout=join_timeout,
                             torchrun=torchrun)
        # Rank 0's rows should reach us as they are printed, not when its pipe buffer fills.
        per_host.append([*env_argv({"PYTHONUNBUFFERED": "1", **spec.env}), *argv])
    procs = start_on_hosts(hosts, agent, per_host, quote, echo)
    return wait_hosts(procs, timeout)


def check_result(result: HostsResult, endpoint: str, join_timeout: float) -> None:
    message = diagnose(result, endpoint, join_timeout)
    if message:
        raise ClusterbenchError(message)
