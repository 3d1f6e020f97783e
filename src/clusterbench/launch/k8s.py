"""Kubernetes manifests: a Kubeflow PyTorchJob (Master + Worker replicas running torchrun) and an
MPIJob (Launcher + Worker) variant, with GPU resources, a memory-backed /dev/shm, and optional
Multus secondary networks (``k8s.v1.cni.cncf.io/networks``) as the OpenShift RDMA study used.

The container runs the clusterbench command as an argument list; no shell is involved.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.common import Spec

_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?$")


@dataclass(frozen=True)
class K8sOptions:
    name: str = "clusterbench"
    namespace: str | None = None
    image: str = "clusterbench:latest"
    gpu_resource: str = "nvidia.com/gpu"     # amd.com/gpu on AMD
    shm_size: str = "16Gi"
    networks: tuple[str, ...] = ()           # Multus NetworkAttachmentDefinitions
    cpu: str | None = None
    memory: str | None = None
    extra_resources: dict[str, str] = field(default_factory=dict)   # e.g. rdma/roce_gdr: "1"

    def check(self) -> None:
        if not _DNS1123.match(self.name) or len(self.name) > 63:
            raise UsageError(f"invalid --name {self.name!r}: lower-case letters, digits and '-'")
        if self.namespace is not None and not _DNS1123.match(self.namespace):
            raise UsageError(f"invalid --namespace {self.namespace!r}")
        for what, q in (("--shm-size", self.shm_size), ("--cpu", self.cpu), ("--memory", self.memory)):
            if q is not None and not _QUANTITY.match(q):
                raise UsageError(f"invalid {what} {q!r}: expected a Kubernetes quantity such as 16Gi")
        for n in self.networks:
            if not re.match(r"^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$", n):
                raise UsageError(f"invalid --network {n!r}: a NetworkAttachmentDefinition name")


def _container(spec: Spec, opts: K8sOptions, name: str, command: list[str], gpus: int) -> dict[str, Any]:
    limits: dict[str, str] = dict(opts.extra_resources)
    requests: dict[str, str] = dict(opts.extra_resources)
    if gpus:
        limits[opts.gpu_resource] = str(gpus)
        requests[opts.gpu_resource] = str(gpus)
    if opts.cpu:
        requests["cpu"] = opts.cpu
    if opts.memory:
        requests["memory"] = opts.memory
    c: dict[str, Any] = {
        "name": name, "image": opts.image, "command": list(command),
        "env": [{"name": k, "value": v} for k, v in spec.env.items()],
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if limits or requests:
        c["resources"] = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    return c


def _pod(spec: Spec, opts: K8sOptions, container: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": opts.shm_size}}],
    }}
    if opts.networks:
        template["metadata"] = {"annotations": {"k8s.v1.cni.cncf.io/networks": ",".join(opts.networks)}}
    return template


def _meta(opts: K8sOptions) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": opts.name}
    if opts.namespace:
        meta["namespace"] = opts.namespace
    return meta


def pytorchjob(spec: Spec, opts: K8sOptions) -> dict[str, Any]:
    """Kubeflow PyTorchJob: the operator sets MASTER_ADDR/RANK/WORLD_SIZE; torchrun per pod."""
    opts.check()
    cmd = ["torchrun", f"--nnodes={spec.nodes}", f"--nproc_per_node={spec.procs_per_node}",
           "-m", "clusterbench", *spec.command]
    gpus = spec.gpus_per_node

    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "restartPolicy": "Never",
                "template": _pod(spec, opts, _container(spec, opts, "pytorch", cmd, gpus))}

    replicas = {"Master": replica(1)}  # each replica builds its own lists: no YAML anchors
    if spec.nodes > 1:
        replicas["Worker"] = replica(spec.nodes - 1)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": _meta(opts),
            "spec": {"nprocPerNode": str(spec.procs_per_node), "pytorchReplicaSpecs": replicas,
                     "runPolicy": {"cleanPodPolicy": "None"}}}


def mpijob(spec: Spec, opts: K8sOptions) -> dict[str, Any]:
    """Kubeflow MPIJob (v2beta1): a launcher pod runs mpirun over the worker pods."""
    opts.check()
    mpirun = ["mpirun", "-n", str(spec.world_size), "-N", str(spec.procs_per_node),
              "-x", "MASTER_ADDR=" + f"{opts.name}-worker-0.{opts.name}-worker",
              *[x for k in spec.env for x in ("-x", k)], *spec.argv()]
    launcher = _pod(spec, opts, _container(spec, opts, "launcher", mpirun, 0))
    launcher["spec"]["containers"][0].pop("resources", None)
    worker = _pod(spec, opts, _container(spec, opts, "worker", ["/usr/sbin/sshd", "-De"],
                                         spec.gpus_per_node))
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": _meta(opts),
            "spec": {"slotsPerWorker": spec.procs_per_node,
                     "runPolicy": {"cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": launcher},
                         "Worker": {"replicas": spec.nodes, "restartPolicy": "Never", "template": worker},
                     }}}


def apply(manifest_yaml: str, timeout: float = 60.0) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise UsageError("kubectl not found on PATH: use the printed manifest with your cluster's tools")
    try:
        r = subprocess.run([kubectl, "apply", "-f", "-"], input=manifest_yaml, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterbenchError(f"kubectl apply did not finish within {timeout:g} s") from None
    if r.returncode != 0:
        raise ClusterbenchError("kubectl apply failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])
    return r.stdout.strip()
