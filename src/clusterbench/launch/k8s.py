"""Kubernetes manifests: a Kubeflow PyTorchJob (Master + Worker replicas running torchrun) and an
MPIJob (Launcher + Worker) variant, with GPU resources, a memory-backed /dev/shm, and optional
Multus secondary networks (``k8s.v1.cni.cncf.io/networks``) as the OpenShift RDMA study used.

The GPU vendor (``nvidia`` or ``amd``) decides the GPU resource, the default image and, on AMD,
the device mounts and groups the ROCm runtime needs: ``amd.com/gpu``, a ROCm PyTorch image,
``/dev/kfd`` and ``/dev/dri`` from the node (hostPath) and the supplemental groups that own them
(video and render), as AMD documents for containers (``--device /dev/kfd --device /dev/dri
--group-add video --group-add render``).

The container runs the clusterbench command as an argument list, with the clusterbench its image
holds: nothing is installed from a public index at pod start unless asked (an air-gapped cluster
cannot reach one). Where clusterbench is installed in the pod first (a wheel, or a requirement
from a given index), a fixed ``sh -c`` script does it and every user value reaches that shell as
a positional argument (``"$1"``, ``"$@"``), never as script text. The manifest is produced by a
YAML dumper, so a value cannot change its structure.

Results come home two ways: the team database URL from a Kubernetes Secret
(``CLUSTERBENCH_DB`` from ``valueFrom.secretKeyRef``, never the URL itself in the manifest), and
the JSON lines rank 0 prints (``kubectl logs POD | clusterbench import -``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

from clusterbench import __version__
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.common import Spec, check_text
from clusterbench.units import shown_value

_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?$")
# What the API server keeps a quantity in: a 64-bit integer (of bytes, or of cores)
MAX_QUANTITY = 2**63 - 1
_SCALE = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
          "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def _quantity(text: str) -> Decimal:
    """A quantity ``_QUANTITY`` matched, as the number it means (``16Gi``: 17179869184)."""
    suffix = text.lstrip("0123456789.")
    number = text[:len(text) - len(suffix)]
    if len(number.partition(".")[0].lstrip("0")) > 40:   # far past MAX_QUANTITY: no huge Decimal made
        return Decimal(MAX_QUANTITY) + 1
    return Decimal(number) * _SCALE[suffix]
# An image reference: [registry[:port]/]path[:tag][@digest]; no white space or quotes.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+\-]*")
# An extended resource name: [domain/]name, e.g. nvidia.com/gpu, rdma/roce_gdr.
_RESOURCE = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")

DB_ENV = "CLUSTERBENCH_DB"
INT32_MAX = 2**31 - 1          # replicas, slots: int32 fields in the operators' schemas
MAX_INDEXED_PARALLELISM = 100_000   # Kubernetes' limit on an Indexed Job's parallelism
DEFAULT_SECRET_KEY = "url"
# Same version as the launching clusterbench, so the pods print the JSON lines this one imports.
DEFAULT_INSTALL = f"clusterbench=={__version__}"
# The fixed installers: the wheel or requirement is $1 (with an index: the index $1, the
# requirement $2), the command the rest; no user text is script text.
INSTALL_SCRIPT = 'pip install --quiet --no-cache-dir "$1" && shift && exec "$@"'
INDEX_INSTALL_SCRIPT = 'pip install --quiet --no-cache-dir --index-url "$1" "$2" && shift 2 && exec "$@"'
# The groups of the AMD device files on Debian and Ubuntu nodes, as ROCm's Ubuntu images create
# them (video 44; render 109, which other distributions number otherwise: --supplemental-groups)
VIDEO_GID, RENDER_GID = 44, 109


@dataclass(frozen=True)
class Vendor:
    """What a GPU vendor's pods need: the device plugin's resource, a public PyTorch image for
    it (torchrun inside), host devices to mount (volume name, path, hostPath type) and the
    groups that may open them."""

    name: str
    gpu_resource: str
    image: str
    devices: tuple[tuple[str, str, str], ...] = ()
    groups: tuple[int, ...] = ()


VENDORS = {   # every vendor of GPU_VENDORS
    "nvidia": Vendor("nvidia", "nvidia.com/gpu", "pytorch/pytorch:latest"),
    # ROCm's runtime opens /dev/kfd (compute) and /dev/dri/renderD* (one per GPU)
    "amd": Vendor("amd", "amd.com/gpu", "rocm/pytorch:latest",
                  (("kfd", "/dev/kfd", "CharDevice"), ("dri", "/dev/dri", "Directory")), (VIDEO_GID, RENDER_GID)),
}


def check_image(image: str) -> str:
    if not _IMAGE.fullmatch(image):
        raise UsageError(f"invalid --image {image!r}: expected an image reference such as "
                         "registry.example.com/team/clusterbench:0.1")
    return image


def check_install(spec: str, what: str = "--install") -> str:
    """A pip requirement or URL: any text but control characters, and no leading '-' (an option)."""
    check_text(spec, what)
    if not spec.strip() or spec.lstrip().startswith("-"):
        raise UsageError(f"invalid {what} {spec!r}: expected a pip requirement or URL, "
                         "e.g. clusterbench==0.1.0 or https://host/clusterbench-0.1.0-py3-none-any.whl")
    return spec


@dataclass(frozen=True)
class InstallFrom:
    """``--install-from``: a wheel (a path as the pod sees it, or a URL) pip installs, or a
    package index pip installs this clusterbench's version from (a mirror inside the cluster)."""

    wheel: str | None = None
    index_url: str | None = None

    @classmethod
    def parse(cls, text: str) -> InstallFrom:
        check_install(text, "--install-from")
        from urllib.parse import urlsplit

        if text.endswith(".whl"):
            return cls(wheel=text)
        parts = urlsplit(text)
        if parts.scheme in ("http", "https", "file") and (parts.netloc or parts.scheme == "file") \
                and not re.search(r"\s", text):
            return cls(index_url=text)
        raise UsageError(f"invalid --install-from {text!r}: expected a wheel (a .whl path in the pod, or "
                         "its URL) or a package index URL (https://pypi.example.org/simple)")

    def command(self, command: list[str]) -> list[str]:
        if self.wheel is not None:
            return ["sh", "-c", INSTALL_SCRIPT, "clusterbench-install", self.wheel, *command]
        return ["sh", "-c", INDEX_INSTALL_SCRIPT, "clusterbench-install", str(self.index_url), DEFAULT_INSTALL,
                *command]


def choose_vendor(given: str | None, profile: tuple[str, str] | None = None,
                  gpu_resource: str | None = None) -> str:
    """The GPU vendor of the pods: ``--vendor``, else the one the command's profile is for
    (``(profile name, vendor)``; a profile for AMD hardware implies AMD), else the one whose
    resource ``--gpu-resource`` names, else NVIDIA. ``--vendor`` against its profile is an error."""
    if given is not None and given not in VENDORS:
        raise UsageError(f"invalid --vendor {given!r}: expected {' or '.join(VENDORS)}")
    if given is not None and profile is not None and profile[1] != given:
        raise UsageError(f"--vendor {given}, but profile {profile[0]} is for {profile[1]} GPUs: give the "
                         "vendor of the nodes the profile describes, or leave --vendor out")
    if given is not None:
        return given
    if profile is not None:
        return profile[1]
    return next((v.name for v in VENDORS.values() if v.gpu_resource == gpu_resource), "nvidia")


@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret: ``NAME[:KEY]`` on the command line."""

    name: str
    key: str = DEFAULT_SECRET_KEY

    @classmethod
    def parse(cls, text: str) -> SecretRef:
        name, _, key = text.partition(":")
        key = key or DEFAULT_SECRET_KEY
        if not _DNS1123_SUBDOMAIN.fullmatch(name) or len(name) > 253:
            raise UsageError(f"invalid --db-secret {text!r}: expected NAME[:KEY], NAME a Secret's "
                             "name (lower-case letters, digits, '-', '.')")
        if not _SECRET_KEY.fullmatch(key) or len(key) > 253:
            raise UsageError(f"invalid --db-secret key {key!r}: letters, digits, '-', '_' and '.' only")
        return cls(name, key)


@dataclass(frozen=True)
class K8sOptions:
    name: str = "clusterbench"
    namespace: str | None = None
    image: str | None = None                 # None: a public PyTorch image for the GPU vendor
    gpu_resource: str | None = None          # None: the vendor's (nvidia.com/gpu, amd.com/gpu)
    shm_size: str = "16Gi"
    networks: tuple[str, ...] = ()           # Multus NetworkAttachmentDefinitions
    cpu: str | None = None
    memory: str | None = None
    extra_resources: dict[str, str] = field(default_factory=dict)   # e.g. rdma/roce_gdr: "1"
    install: str | None = None               # a requirement pip-installs in the pod first; None: in the image
    install_from: InstallFrom | None = None  # or a wheel or an index to install from
    db_secret: SecretRef | None = None       # CLUSTERBENCH_DB from this Secret key
    vendor: str | None = None                # None: the one --gpu-resource names, else nvidia
    supplemental_groups: tuple[int, ...] | None = None   # None: the vendor's (AMD: video, render)

    @property
    def gpu_vendor(self) -> Vendor:
        return VENDORS[choose_vendor(self.vendor, gpu_resource=self.gpu_resource)]

    @property
    def gpu(self) -> str:
        return self.gpu_resource or self.gpu_vendor.gpu_resource

    @property
    def image_ref(self) -> str:
        return self.image or self.gpu_vendor.image

    @property
    def groups(self) -> tuple[int, ...]:
        return self.gpu_vendor.groups if self.supplemental_groups is None else self.supplemental_groups

    @property
    def installs(self) -> bool:
        return self.install is not None or self.install_from is not None

    def check(self) -> None:
        if not _DNS1123.fullmatch(self.name) or len(self.name) > 63:
            raise UsageError(f"invalid --name {self.name!r}: lower-case letters, digits and '-'")
        if self.namespace is not None and (not _DNS1123.fullmatch(self.namespace) or len(self.namespace) > 63):
            raise UsageError(f"invalid --namespace {self.namespace!r}")
        for what, q in (("--shm-size", self.shm_size), ("--cpu", self.cpu), ("--memory", self.memory)):
            if q is not None and not _QUANTITY.fullmatch(q):
                raise UsageError(f"invalid {what} {shown_value(q)}: expected a Kubernetes quantity such as 16Gi")
            if q is not None and _quantity(q) > MAX_QUANTITY:
                raise UsageError(f"invalid {what} {shown_value(q)}: more than a Kubernetes quantity holds "
                                 f"(at most {MAX_QUANTITY:,} units)")
        for n in self.networks:
            if not re.fullmatch(r"^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$", n):
                raise UsageError(f"invalid --network {n!r}: a NetworkAttachmentDefinition name")
        check_image(self.image if self.image is not None else self.image_ref)   # '' is no image
        choose_vendor(self.vendor)
        if self.install is not None and self.install_from is not None:
            raise UsageError("--install and --install-from both say what to install: give one")
        for gid in self.groups:
            if isinstance(gid, bool) or not isinstance(gid, int) or not 0 <= gid <= 2**31 - 1:
                raise UsageError(f"invalid --supplemental-groups GID {gid!r}: a group id from 0 to 2147483647")
        for what, r in (("--gpu-resource", self.gpu), *(("--resource", n) for n in self.extra_resources)):
            if not _RESOURCE.fullmatch(r):
                raise UsageError(f"invalid {what} {r!r}: a resource name such as nvidia.com/gpu")
        for r, count in self.extra_resources.items():
            if not re.fullmatch(r"[0-9]+", count):
                raise UsageError(f"invalid --resource {r}={count!r}: expected a whole count")
        if self.install is not None:
            check_install(self.install)


def check_counts(spec: Spec, most_nodes: int = INT32_MAX) -> None:
    """Node and process counts the manifest's integer fields can hold: a larger one is refused
    by the API server (or wraps), so it is an error here."""
    for what, n, most in (("--nodes", spec.nodes, most_nodes), ("--procs-per-node", spec.procs_per_node, INT32_MAX),
                          ("--gpus-per-node", spec.gpus_per_node, INT32_MAX),
                          ("--nodes x --procs-per-node", spec.world_size, INT32_MAX)):
        if n > most:
            raise UsageError(f"{what} {n} is more than a Kubernetes manifest can hold ({most:,})")


def check_job_name(name: str, replicas: int) -> None:
    """The operators name a Service and a pod host name after the job and its last replica
    (``NAME-worker-N``): Kubernetes wants those to be DNS-1035 labels, a letter first and at
    most 63 characters, so a name that makes them invalid is an error here, not in the cluster."""
    longest = f"{name}-worker-{max(replicas - 1, 0)}"
    if not name[:1].isalpha() or len(longest) > 63:
        raise UsageError(f"invalid --name {name!r}: it must start with a letter and {longest!r} "
                         "(a replica's Service name) must fit in 63 characters")


class _Dumper(yaml.SafeDumper):
    """PyYAML's dumper, quoting the strings other YAML readers take for something else:
    kubectl's (go-yaml, YAML 1.1 and 1.2) reads ``y``/``n`` as booleans and ``1e3``, ``08``,
    ``0o17`` as numbers, which PyYAML would write bare."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$"
               r"|^[-+]?0(?:[oO][0-7_]+|[xX][0-9a-fA-F_]+|[bB][01_]+)$"),
    list("-+.0123456789"))


def dump(doc: Any) -> str:
    """The manifest as YAML that every reader loads back to the same strings and numbers."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)


def k8s_literal(word: str) -> str:
    """A command word as Kubernetes passes it literally: it expands ``$(VAR)`` in container
    commands and reduces ``$$`` to ``$``, so every ``$`` is doubled."""
    return word.replace("$", "$$")


def _env(spec: Spec, opts: K8sOptions, own: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    # the kubelet expands $(VAR) in env values as in commands: every value is kept literal
    for key in own:   # variables the manifest sets itself
        if key in spec.env:
            raise UsageError(f"--env {key}=...: the manifest sets {key} itself")
    env: list[dict[str, Any]] = [{"name": k, "value": k8s_literal(v)} for k, v in spec.env.items()]
    if opts.db_secret is not None:
        if DB_ENV in spec.env:
            raise UsageError(f"--env {DB_ENV}=... and --db-secret both set the database: give one")
        env.append({"name": DB_ENV, "valueFrom": {"secretKeyRef": {
            "name": opts.db_secret.name, "key": opts.db_secret.key}}})
    return env


def _installing(command: list[str], opts: K8sOptions) -> list[str]:
    """``command``, preceded by installing clusterbench when asked (``--install``,
    ``--install-from``); as it is by default, for the clusterbench of the image."""
    if opts.install_from is not None:
        return opts.install_from.command(command)
    if opts.install is None:
        return list(command)
    return ["sh", "-c", INSTALL_SCRIPT, "clusterbench-install", opts.install, *command]


def _container(spec: Spec, opts: K8sOptions, name: str, command: list[str], gpus: int,
               own_env: tuple[str, ...] = ()) -> dict[str, Any]:
    gpu = opts.gpu
    if gpus and gpu in opts.extra_resources:
        # one of the two counts would silently replace the other in limits and requests
        raise UsageError(f"--resource {gpu}={opts.extra_resources[gpu]} and "
                         f"--gpus-per-node {gpus} both set the GPU count: give --gpus-per-node only")
    limits: dict[str, str] = dict(opts.extra_resources)
    requests: dict[str, str] = dict(opts.extra_resources)
    if gpus:
        limits[gpu] = str(gpus)
        requests[gpu] = str(gpus)
    if opts.cpu:
        requests["cpu"] = opts.cpu
    if opts.memory:
        requests["memory"] = opts.memory
    c: dict[str, Any] = {
        # literal words: a $(VAR) in a tag must not become the value of the container's
        # variables (the database Secret's URL) when the kubelet starts it
        "name": name, "image": opts.image_ref, "command": [k8s_literal(w) for w in command],
        "env": _env(spec, opts, own_env),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                         *({"name": v, "mountPath": path} for v, path, _ in (opts.gpu_vendor.devices if gpus else ()))],
    }
    if limits or requests:
        c["resources"] = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    return c


def _pod(spec: Spec, opts: K8sOptions, container: dict[str, Any], gpus: int = 0) -> dict[str, Any]:
    """A pod template of ``container``; one given GPUs gets the vendor's device files from the
    node, and the groups that may open them."""
    devices = opts.gpu_vendor.devices if gpus else ()
    template: dict[str, Any] = {"spec": {
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": opts.shm_size}},
                    *({"name": v, "hostPath": {"path": path, "type": kind}} for v, path, kind in devices)],
    }}
    if gpus and opts.groups:
        template["spec"]["securityContext"] = {"supplementalGroups": list(opts.groups)}
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
    check_counts(spec)
    check_job_name(opts.name, spec.nodes - 1)
    cmd = _installing(["torchrun", f"--nnodes={spec.nodes}", f"--nproc_per_node={spec.procs_per_node}",
                       "-m", "clusterbench", *spec.command], opts)
    gpus = spec.gpus_per_node

    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "restartPolicy": "Never",
                "template": _pod(spec, opts, _container(spec, opts, "pytorch", cmd, gpus), gpus)}

    replicas = {"Master": replica(1)}  # each replica builds its own lists: no YAML anchors
    if spec.nodes > 1:
        replicas["Worker"] = replica(spec.nodes - 1)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": _meta(opts),
            "spec": {"nprocPerNode": str(spec.procs_per_node), "pytorchReplicaSpecs": replicas,
                     "runPolicy": {"cleanPodPolicy": "None"}}}


def mpijob(spec: Spec, opts: K8sOptions) -> dict[str, Any]:
    """Kubeflow MPIJob (v2beta1): a launcher pod runs mpirun over the worker pods.

    mpirun reaches the workers through their sshd, so clusterbench, Open MPI and sshd must be in
    the image (docs/multi-node.md shows how to build one): no public image has all three, and
    an install step in the worker would race the launcher's first ssh."""
    if opts.image is None:
        raise UsageError("--kind mpijob needs --image: an image with Open MPI, sshd, PyTorch and "
                         "clusterbench (see docs/multi-node.md)")
    if opts.installs:
        raise UsageError("--install does not apply to --kind mpijob, which runs the clusterbench "
                         "of its image (see docs/multi-node.md)")
    opts.check()
    check_counts(spec)
    check_job_name(opts.name, spec.nodes)
    mpirun = ["mpirun", "-n", str(spec.world_size), "-N", str(spec.procs_per_node),
              # the operator's headless Service is named after the job and is every pod's subdomain
              # (kubeflow/mpi-operator v2beta1, newJobService): worker 0 is NAME-worker-0.NAME
              "-x", "MASTER_ADDR=" + f"{opts.name}-worker-0.{opts.name}",
              *[x for k in spec.env for x in ("-x", k)],
              *(["-x", DB_ENV] if opts.db_secret else []), *spec.argv()]
    launcher = _pod(spec, opts, _container(spec, opts, "launcher", mpirun, 0))
    launcher["spec"]["containers"][0].pop("resources", None)
    worker = _pod(spec, opts, _container(spec, opts, "worker", ["/usr/sbin/sshd", "-De"],
                                         spec.gpus_per_node), spec.gpus_per_node)
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": _meta(opts),
            "spec": {"slotsPerWorker": spec.procs_per_node,
                     "runPolicy": {"cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": launcher},
                         "Worker": {"replicas": spec.nodes, "restartPolicy": "Never", "template": worker},
                     }}}


NODE_ENV = "CLUSTERBENCH_NODE"          # the Node a pod runs on: what --on-fail drains or taints
CRONJOB_LABEL = "clusterbench.io/cronjob"


def cronjob(spec: Spec, opts: K8sOptions, schedule: str, time_zone: str | None = None,
            service_account: str | None = None) -> dict[str, Any]:
    """A batch/v1 CronJob running the clusterbench command on ``spec.nodes`` nodes at a time, one
    pod per node (required pod anti-affinity on the node's host name): a nightly ``qualify`` on
    every node. Each pod knows its Node's name (``CLUSTERBENCH_NODE``, from the downward API), so
    ``--on-fail taint`` acts on the right Node. The schedule is checked, then YAML-dumped."""
    from clusterbench.launch.cron import check_schedule, check_time_zone

    opts.check()
    check_counts(spec, MAX_INDEXED_PARALLELISM)   # completions = parallelism = nodes
    if len(opts.name) > 52:   # its Jobs are named NAME-<11 digits>
        raise UsageError(f"invalid --name {opts.name!r} for --schedule: a CronJob's name has at most 52 characters")
    schedule = check_schedule(schedule)
    command = _installing(["clusterbench", *spec.command], opts)
    container = _container(spec, opts, "clusterbench", command, spec.gpus_per_node, own_env=(NODE_ENV,))
    container["env"].append({"name": NODE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})
    pod = _pod(spec, opts, container, spec.gpus_per_node)
    labels = {"app.kubernetes.io/name": "clusterbench", CRONJOB_LABEL: opts.name}
    pod.setdefault("metadata", {})["labels"] = labels
    pod["spec"]["restartPolicy"] = "Never"
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {CRONJOB_LABEL: opts.name}},
         "topologyKey": "kubernetes.io/hostname"}]}}
    cron_spec: dict[str, Any] = {
        "schedule": schedule,
        "concurrencyPolicy": "Forbid",       # a night's check never overlaps the previous one
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {"spec": {
            "completions": spec.nodes, "parallelism": spec.nodes, "completionMode": "Indexed",
            "backoffLimit": 0,                # a failed check is a result, not something to retry
            "template": pod,
        }},
    }
    if time_zone:
        cron_spec["timeZone"] = check_time_zone(time_zone)
    if service_account is not None:
        # e.g. one allowed to patch Nodes, for qualify --on-fail taint --apply inside the pods
        if not _DNS1123_SUBDOMAIN.fullmatch(service_account) or len(service_account) > 253:
            raise UsageError(f"invalid --service-account {service_account!r}: a ServiceAccount name")
        pod["spec"]["serviceAccountName"] = service_account
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(opts), "spec": cron_spec}


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
