"""The one place that reads a launcher's environment: torchrun, Slurm's srun, Open MPI / PMI.

Under a launcher every process runs the same clusterbench command and joins one job; without
one, clusterbench starts its own local ranks (see ``clusterbench.ranks.driver``).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

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


def _int(env: Mapping[str, str], key: str) -> int:
    try:
        return int(env[key])
    except ValueError:
        raise UsageError(f"launcher variable {key}={env[key]!r} is not an integer") from None


def _port(env: Mapping[str, str], default: int) -> int:
    return _int(env, "MASTER_PORT") if "MASTER_PORT" in env else default


def detect(env: Mapping[str, str] | None = None) -> RankEnv | None:
    """Return the rank environment set by a launcher, or None when not started by one."""
    found = _detect(os.environ if env is None else env)
    return _checked(found) if found is not None else None


def _checked(r: RankEnv) -> RankEnv:
    """Numbers no launcher sets: a rank that waits for a peer that can never join (rank 5 of 2)
    would hang until --timeout; refused at once instead."""
    if r.world_size < 1:
        raise UsageError(f"{r.launcher} says the world has {r.world_size} ranks: at least 1 is needed")
    if not 0 <= r.rank < r.world_size:
        raise UsageError(f"{r.launcher} says this is rank {r.rank} of {r.world_size}: ranks are 0..{r.world_size - 1}")
    if r.local_world_size < 1 or not 0 <= r.local_rank < r.local_world_size:
        raise UsageError(f"{r.launcher} says this is local rank {r.local_rank} of {r.local_world_size} on "
                         f"this host: local ranks are 0..{max(r.local_world_size, 1) - 1}")
    if not 1 <= r.master_port <= 65535:
        raise UsageError(f"MASTER_PORT {r.master_port} is not a port (1..65535)")
    return r


def _detect(env: Mapping[str, str]) -> RankEnv | None:
    host = env.get("CLUSTERBENCH_HOSTNAME") or socket.gethostname()

    if "RANK" in env and "WORLD_SIZE" in env:  # torchrun, or anything that speaks its protocol
        return RankEnv(
            rank=_int(env, "RANK"), world_size=_int(env, "WORLD_SIZE"),
            local_rank=_int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else 0,
            local_world_size=_int(env, "LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in env else 1,
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"), master_port=_port(env, DEFAULT_PORT),
            launcher="torchrun", host=host,
        )

    # Open MPI first: mpirun inside a Slurm allocation also carries SLURM_* of its daemons.
    if "OMPI_COMM_WORLD_RANK" in env or "PMI_RANK" in env:
        ompi = "OMPI_COMM_WORLD_RANK" in env
        rank = _int(env, "OMPI_COMM_WORLD_RANK" if ompi else "PMI_RANK")
        size = _int(env, "OMPI_COMM_WORLD_SIZE" if ompi else "PMI_SIZE")
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") if "OMPI_COMM_WORLD_LOCAL_RANK" in env else (
            _int(env, "MPI_LOCALRANKID") if "MPI_LOCALRANKID" in env else 0)
        local_size = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE") if "OMPI_COMM_WORLD_LOCAL_SIZE" in env else (
            _int(env, "MPI_LOCALNRANKS") if "MPI_LOCALNRANKS" in env else 1)
        addr = env.get("MASTER_ADDR")
        if not addr and size > 1:
            raise UsageError(
                "under mpirun, set MASTER_ADDR to the first host (mpirun -x MASTER_ADDR=<host> ...)"
            )
        return RankEnv(rank, size, local, local_size, addr or "127.0.0.1",
                       _port(env, DEFAULT_PORT), "mpi", host)

    # srun sets SLURM_STEP_ID; a batch script alone (no srun) has none and is a single process.
    if "SLURM_PROCID" in env and ("SLURM_STEP_ID" in env or "SLURM_STEPID" in env):
        size = _int(env, "SLURM_NTASKS") if "SLURM_NTASKS" in env else 1
        nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST", "")
        # The script sets MASTER_ADDR; otherwise the node list's first host is the address.
        first = env.get("MASTER_ADDR") or (
            expand_hostlist(nodelist, "SLURM_JOB_NODELIST")[0] if nodelist else "127.0.0.1")
        job = env.get("SLURM_JOB_ID", "0")
        default_port = DEFAULT_PORT + (int(job) % 1000 if job.isdigit() else 0)
        local_size = 1
        if "SLURM_NTASKS_PER_NODE" in env and env["SLURM_NTASKS_PER_NODE"].isdigit():
            local_size = int(env["SLURM_NTASKS_PER_NODE"])
        elif "SLURM_STEP_TASKS_PER_NODE" in env:
            m = re.match(r"(\d+)", env["SLURM_STEP_TASKS_PER_NODE"])
            local_size = int(m.group(1)) if m else 1
        return RankEnv(
            rank=_int(env, "SLURM_PROCID"), world_size=size,
            local_rank=_int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0,
            local_world_size=local_size,
            master_addr=env.get("MASTER_ADDR", first), master_port=_port(env, default_port),
            launcher="slurm", host=host,
        )
    return None
