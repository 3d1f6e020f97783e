"""A dstack distributed task (``type: task`` with ``nodes``), as in dstack's cluster examples:
every node runs torchrun with dstack's node rank, master address and GPU counts.

dstack runs ``commands`` in a shell, so each of our words there is quoted with ``shlex.quote``;
the only expansions left are dstack's own variables (``$DSTACK_NODE_RANK``...). ``--setup``
commands are shell text the user wrote, run as given. The team database URL comes from a dstack
secret through dstack's ``${{ secrets.NAME }}`` interpolation in ``env``, so the manifest never
holds it. dstack interpolates ``commands`` and ``env`` values before any shell sees them
(``${{ run.args }}``, ``${{ secrets.NAME }}``, ``$$`` for ``$``), and not in a way a quote can
undo, so a value of ours holding ``${{`` or ``$$`` is an error.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.launch.common import Spec, check_text
from clusterbench.launch.k8s import DB_ENV, check_image, check_install

STARTUP_ORDERS = ("any", "master-first", "workers-first")
STOP_CRITERIA = ("all-done", "master-done")
# GPU specs as dstack's resources take them: H100, MI300X, A100:80GB, 24GB..80GB, H100,H200.
_GPU_RE = re.compile(r"[A-Za-z0-9_.,:\-]+")
# Plain identifiers: the name sits inside dstack's ${{ secrets.NAME }} expression.
_SECRET_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def secret_env(secret: str) -> str:
    """``CLUSTERBENCH_DB=${{ secrets.NAME }}``: dstack fills the value in when the run starts."""
    if not _SECRET_RE.fullmatch(secret):
        raise UsageError(f"invalid --db-secret {secret!r}: a dstack secret name (letters, digits, '_')")
    return f"{DB_ENV}=${{{{ secrets.{secret} }}}}"


def check_literal(text: str, what: str) -> str:
    """``text`` unless dstack would interpolate it (``${{ ... }}``) or unescape it (``$$``)."""
    if "${{" in text or "$$" in text:
        raise UsageError(f"invalid {what} {text!r}: dstack reads '${{{{' and '$$' in a task as its "
                         "own interpolation")
    return text


def _check(name: str, image: str | None, gpu: str | None, startup_order: str, stop_criteria: str,
           setup: tuple[str, ...], install: str | None) -> None:
    if not re.fullmatch(r"^[a-z][a-z0-9-]{1,40}$", name):   # dstack's own rule for run names
        raise UsageError(f"invalid --name {name!r}: 2 to 41 lower-case letters, digits and '-', a letter first")
    if startup_order not in STARTUP_ORDERS:
        raise UsageError(f"--startup-order must be one of {', '.join(STARTUP_ORDERS)}")
    if stop_criteria not in STOP_CRITERIA:
        raise UsageError(f"--stop-criteria must be one of {', '.join(STOP_CRITERIA)}")
    if image is not None:
        check_image(image)
    if gpu is not None and not _GPU_RE.fullmatch(gpu):
        raise UsageError(f"invalid --gpu {gpu!r}: a GPU name or spec such as MI300X or A100:80GB")
    for line in setup:
        check_text(line, "--setup")  # one command per --setup: a newline would hide a second
    if install is not None:
        check_literal(check_install(install), "--install")


def task(spec: Spec, *, name: str = "clusterbench", image: str | None = None,
         gpu: str | None = None, startup_order: str = "workers-first",
         stop_criteria: str = "all-done", setup: tuple[str, ...] = (),
         install: str | None = None, db_secret: str | None = None) -> dict[str, Any]:
    """The task: ``setup`` commands, ``pip install`` of ``install`` when given, then torchrun."""
    _check(name, image, gpu, startup_order, stop_criteria, setup, install)
    if gpu is not None and not spec.gpus_per_node:
        # the GPU spec goes on resources.gpu with the count: without one it would be dropped
        raise UsageError(f"--gpu {gpu} needs --gpus-per-node N (how many of them each node gets)")
    for w in spec.command:
        check_literal(w, "command word")
    for v in spec.env.values():
        check_literal(v, "--env value")
    run = " ".join([
        "torchrun", f"--nnodes={spec.nodes}",
        # one rank per GPU dstack gave the node, unless --procs-per-node says otherwise
        "--nproc_per_node=$DSTACK_GPUS_PER_NODE" if spec.procs_per_node == spec.gpus_per_node else
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
    env = [f"{k}={v}" for k, v in spec.env.items()]
    if db_secret is not None:
        if DB_ENV in spec.env:
            raise UsageError(f"--env {DB_ENV}=... and --db-secret both set the database: give one")
        env.append(secret_env(db_secret))
    if env:
        doc["env"] = env
    installs = [shlex.join(["pip", "install", "--quiet", "--no-cache-dir", install])] if install else []
    doc["commands"] = [*setup, *installs, run]
    if spec.gpus_per_node:
        doc["resources"] = {"gpu": f"{gpu}:{spec.gpus_per_node}" if gpu else spec.gpus_per_node,
                            "shm_size": "16GB"}
    return doc
