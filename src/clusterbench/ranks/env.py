"""The one place that reads a launcher's environment: torchrun, Slurm's srun, Open MPI / PMI.

Under a launcher every process runs the same clusterbench command and joins one job; without
one, clusterbench starts its own local ranks (see ``clusterbench.ranks.driver``).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace

from clusterbench.errors import UsageError
from clusterbench.hostlist import expand_hostlist

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class RankEnv:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    launcher: str  # "torchrun", "mpi", "slurm", "local"
    host: str

    @property
    def is_root(self) -> bool:
        return self.rank == 0


# Launchers write plain decimal numbers. Python's int() also takes "1_0", " 3 " and other
# scripts' digits ("\u0663"), which would turn a garbled variable into some other rank.
_INTEGER = re.compile(r"-?[0-9]+")

# c10d keeps the world size in a C int: a larger one is a TypeError deep inside the store.
MAX_WORLD_SIZE = 2**31 - 1


def _int(env: Mapping[str, str], key: str, needed_by: str | None = None) -> int:
    if key not in env:
        raise UsageError(f"launcher variable {needed_by} is set but {key} is not: both are needed")
    text = env[key]
    if not _INTEGER.fullmatch(text):
        raise UsageError(f"launcher variable {key}={text!r} is not an integer")
    return int(text)


def _port(env: Mapping[str, str], default: int) -> int:
    return _int(env, "MASTER_PORT") if "MASTER_PORT" in env else default


def _addr(env: Mapping[str, str], default: str) -> str:
    """MASTER_ADDR as set, else ``default``. Set but empty (``export MASTER_ADDR=$(cmd)`` where
    the command failed) is refused later when more than one rank must meet there."""
    return env["MASTER_ADDR"].strip() if "MASTER_ADDR" in env else default


def detect(env: Mapping[str, str] | None = None) -> RankEnv | None:
    """Return the rank environment set by a launcher, or None when not started by one."""
    found = _detect(os.environ if env is None else env)
    return _checked(found) if found is not None else None


def _checked(r: RankEnv) -> RankEnv:
    """Numbers no launcher sets: a rank that waits for a peer that can never join (rank 5 of 2)
    would hang until --timeout; refused at once instead."""
    if not 1 <= r.world_size <= MAX_WORLD_SIZE:
        raise UsageError(f"{r.launcher} says the world has {r.world_size} ranks: 1..{MAX_WORLD_SIZE} are possible")
    if not 0 <= r.rank < r.world_size:
        raise UsageError(f"{r.launcher} says this is rank {r.rank} of {r.world_size}: ranks are 0..{r.world_size - 1}")
    if r.local_world_size < 1 or not 0 <= r.local_rank < r.local_world_size:
        raise UsageError(f"{r.launcher} says this is local rank {r.local_rank} of {r.local_world_size} on "
                         f"this host: local ranks are 0..{max(r.local_world_size, 1) - 1}")
    if r.local_world_size > r.world_size:
        raise UsageError(f"{r.launcher} says {r.local_world_size} ranks run on this host but the world has "
                         f"only {r.world_size}")
    if not r.master_addr:
        if r.world_size > 1:
            raise UsageError(f"MASTER_ADDR is empty: set it to the address of rank 0's host ({r.launcher}, "
                             f"{r.world_size} ranks), or unset it")
        r = replace(r, master_addr="127.0.0.1")   # one rank meets only itself
    if any(ch.isspace() for ch in r.master_addr):
        raise UsageError(f"MASTER_ADDR {r.master_addr!r} is not a host name or address (it holds white space)")
    if not 1 <= r.master_port <= 65535:
        raise UsageError(f"MASTER_PORT {r.master_port} is not a port (1..65535)")
    return r


def _detect(env: Mapping[str, str]) -> RankEnv | None:
    host = env.get("CLUSTERBENCH_HOSTNAME") or socket.gethostname()

    if ("RANK" in env) != ("WORLD_SIZE" in env):
        # torchrun (and every launcher speaking its protocol) sets both. Half of them is a
        # launcher environment set up wrong by hand: running local ranks instead would store a
        # one-host run where a multi-host one was meant.
        given, missing = ("RANK", "WORLD_SIZE") if "RANK" in env else ("WORLD_SIZE", "RANK")
        raise UsageError(f"launcher variable {given} is set but {missing} is not: torchrun sets both RANK "
                         f"and WORLD_SIZE; set both, or unset {given} to run without a launcher")
    if "RANK" in env and "WORLD_SIZE" in env:  # torchrun, or anything that speaks its protocol
        return RankEnv(
            rank=_int(env, "RANK"), world_size=_int(env, "WORLD_SIZE"),
            local_rank=_int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else 0,
            local_world_size=_int(env, "LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in env else 1,
            master_addr=_addr(env, "127.0.0.1"), master_port=_port(env, DEFAULT_PORT),
            launcher="torchrun", host=host,
        )

    # Open MPI first: mpirun inside a Slurm allocation also carries SLURM_* of its daemons.
    if "OMPI_COMM_WORLD_RANK" in env or "PMI_RANK" in env:
        ompi = "OMPI_COMM_WORLD_RANK" in env
        rank_key = "OMPI_COMM_WORLD_RANK" if ompi else "PMI_RANK"
        rank = _int(env, rank_key)
        size = _int(env, "OMPI_COMM_WORLD_SIZE" if ompi else "PMI_SIZE", needed_by=rank_key)
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") if "OMPI_COMM_WORLD_LOCAL_RANK" in env else (
            _int(env, "MPI_LOCALRANKID") if "MPI_LOCALRANKID" in env else 0)
        local_size = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE") if "OMPI_COMM_WORLD_LOCAL_SIZE" in env else (
            _int(env, "MPI_LOCALNRANKS") if "MPI_LOCALNRANKS" in env else 1)
        if "MASTER_ADDR" not in env and size > 1:
            raise UsageError(
                "under mpirun, set MASTER_ADDR to the first host (mpirun -x MASTER_ADDR=<host> ...)"
            )
        return RankEnv(rank, size, local, local_size, _addr(env, "127.0.0.1"),
                       _port(env, DEFAULT_PORT), "mpi", host)

    # srun sets SLURM_STEP_ID; a batch script alone (no srun) has none and is a single process.
    if "SLURM_PROCID" in env and ("SLURM_STEP_ID" in env or "SLURM_STEPID" in env):
        size = _int(env, "SLURM_NTASKS") if "SLURM_NTASKS" in env else 1
        nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST", "")
        # The script sets MASTER_ADDR; otherwise the node list's first host is the address.
        first = "127.0.0.1"
        if "MASTER_ADDR" not in env and nodelist:
            hosts = expand_hostlist(nodelist, "SLURM_JOB_NODELIST")
            if not hosts:
                raise UsageError(f"SLURM_JOB_NODELIST {nodelist!r} names no host: set MASTER_ADDR")
            first = hosts[0]
        job = env.get("SLURM_JOB_ID", "0")
        default_port = DEFAULT_PORT + (int(job) % 1000 if re.fullmatch(r"[0-9]+", job) else 0)
        return RankEnv(
            rank=_int(env, "SLURM_PROCID"), world_size=size,
            local_rank=_int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0,
            local_world_size=_slurm_local_size(env),
            master_addr=_addr(env, first), master_port=_port(env, default_port),
            launcher="slurm", host=host,
        )
    return None


_TASKS_ITEM = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")


def _slurm_local_size(env: Mapping[str, str]) -> int:
    """This node's tasks of this step: its entry of ``SLURM_STEP_TASKS_PER_NODE`` (srun sets it:
    ``2(x3),1`` is 2 tasks on each of the step's first three nodes, 1 on the fourth), picked by
    ``SLURM_NODEID``; else ``SLURM_NTASKS_PER_NODE`` (the job's --ntasks-per-node, which a step
    of fewer tasks does not follow); else 1."""
    key = "SLURM_STEP_TASKS_PER_NODE"
    if key not in env:
        return _int(env, "SLURM_NTASKS_PER_NODE") if "SLURM_NTASKS_PER_NODE" in env else 1
    node = _int(env, "SLURM_NODEID") if "SLURM_NODEID" in env else 0
    seen = 0   # nodes listed before the item read; counted, never expanded (1(x99999999999))
    for item in env[key].split(","):
        m = _TASKS_ITEM.fullmatch(item.strip())
        if m is None:
            raise UsageError(f"launcher variable {key}={env[key]!r} is not a Slurm task count list (2(x3),1)")
        seen += int(m.group(2) or 1)
        if 0 <= node < seen:
            return int(m.group(1))
    raise UsageError(f"SLURM_NODEID={node} but {key}={env[key]!r} lists {seen} node(s)")
