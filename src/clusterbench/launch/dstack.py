"""A dstack distributed task (``type: task`` with ``nodes``), as in dstack's cluster examples:
every node runs torchrun with dstack's node rank, master address and GPU counts."""

from __future__ import annotations

import re
import shlex
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.launch.common import Spec

STARTUP_ORDERS = ("any", "master-first", "workers-first")
STOP_CRITERIA = ("all-done", "master-done")


def task(spec: Spec, *, name: str = "clusterbench", image: str | None = None,
         gpu: str | None = None, startup_order: str = "workers-first",
         stop_criteria: str = "all-done", setup: tuple[str, ...] = ()) -> dict[str, Any]:
    if not re.match(r"^[a-z][a-z0-9-]{0,40}$", name):
        raise UsageError(f"invalid --name {name!r}: lower-case letters, digits and '-'")
    if startup_order not in STARTUP_ORDERS:
        raise UsageError(f"--startup-order must be one of {', '.join(STARTUP_ORDERS)}")
    if stop_criteria not in STOP_CRITERIA:
        raise UsageError(f"--stop-criteria must be one of {', '.join(STOP_CRITERIA)}")
    run = " ".join([
        "torchrun", f"--nnodes={spec.nodes}",
        "--nproc_per_node=$DSTACK_GPUS_PER_NODE" if spec.gpus_per_node else
        f"--nproc_per_node={spec.procs_per_node}",
        "--node_rank=$DSTACK_NODE_RANK", "--master_addr=$DSTACK_MASTER_NODE_IP", "--master_port=29500",
        "-m", "clusterbench", *[shlex.quote(w) for w in spec.command],
    ])
    doc: dict[str, Any] = {
        "type": "task", "name": name, "nodes": spec.nodes,
        "startup_order": startup_order, "stop_criteria": stop_criteria,
    }
    if image:
        doc["image"] = image
    if spec.env:
        doc["env"] = [f"{k}={v}" for k, v in spec.env.items()]
    doc["commands"] = [*setup, run]
    if spec.gpus_per_node:
        doc["resources"] = {"gpu": f"{gpu}:{spec.gpus_per_node}" if gpu else spec.gpus_per_node,
                            "shm_size": "16GB"}
    return doc
