"""Tests of clusterbench.launch.k8s: kubernetes manifests."""

from __future__ import annotations

import jsonschema
import pytest
from k8s_schemas import (
    CRONJOB,
    OPENAPI,
    check,
    check_cronjob,
    mpijob_schema,
    pytorchjob_schema,
    strict,
    strict_openapi,
)

from clusterbench.errors import UsageError
from clusterbench.launch import k8s
from clusterbench.launch.common import Spec


def _cron(*extra: str, command=("qualify", "--profile", "amd-mi300x-oem")) -> dict:
    return k8s.cronjob(Spec(nodes=4, gpus_per_node=8, command=list(command)),
                       k8s.K8sOptions(name="nightly", gpu_resource="amd.com/gpu",
                                      db_secret=k8s.SecretRef.parse("cb-db")), *extra)


def test_pytorchjob_matches_the_crd_schema():
    spec = Spec(nodes=8, procs_per_node=2, gpus_per_node=2, env={"NCCL_IB_GID_INDEX": "3"},
                command=["coll", "all_reduce", "-b", "1M", "-e", "1G"])
    doc = k8s.pytorchjob(spec, k8s.K8sOptions(networks=("sriov-a", "sriov-b"), cpu="1", memory="10Gi",
                                              extra_resources={"rdma/roce_gdr": "1"}))
    check(pytorchjob_schema(), doc)
    master, worker = doc["spec"]["pytorchReplicaSpecs"]["Master"], doc["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert master["replicas"] == 1 and worker["replicas"] == 7
    pod = worker["template"]
    c = pod["spec"]["containers"][0]
    assert c["name"] == "pytorch" and c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["spec"]["volumes"]
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "sriov-a,sriov-b"
    assert c["command"][-6:] == ["coll", "all_reduce", "-b", "1M", "-e", "1G"]
    # a typo'd field is caught: the strict walk knows the schema's fields
    pod["spec"]["containers"][0]["volumeMount"] = []
    assert strict(pytorchjob_schema(), doc) == [
        ".spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].volumeMount"]


def test_mpijob_matches_the_crd_schema_and_single_node_has_no_worker():
    spec = Spec(nodes=2, procs_per_node=8, gpus_per_node=8, command=["coll", "all_reduce"])
    doc = k8s.mpijob(spec, k8s.K8sOptions(gpu_resource="amd.com/gpu", image="registry.example/cb:0.1",
                                          install=None))
    check(mpijob_schema(), doc)
    assert doc["spec"]["slotsPerWorker"] == 8 and doc["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    one = k8s.pytorchjob(Spec(nodes=1, command=["net"]), k8s.K8sOptions())
    check(pytorchjob_schema(), one)
    assert "Worker" not in one["spec"]["pytorchReplicaSpecs"]
    bad = dict(doc, spec=dict(doc["spec"], slotsPerWorker=0))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, mpijob_schema())


def test_cronjob_matches_the_kubernetes_schema():
    doc = _cron("0 3 * * *", "Europe/Berlin", "clusterbench-tainter")
    check_cronjob(doc)
    assert doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == "clusterbench-tainter"
    spec = doc["spec"]
    assert spec["schedule"] == "0 3 * * *" and spec["timeZone"] == "Europe/Berlin"
    assert spec["concurrencyPolicy"] == "Forbid"
    job = spec["jobTemplate"]["spec"]
    assert job["completions"] == job["parallelism"] == 4 and job["backoffLimit"] == 0
    pod = job["template"]
    term = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == {"clusterbench.io/cronjob": "nightly"}
    assert pod["metadata"]["labels"]["clusterbench.io/cronjob"] == "nightly"   # one pod per node
    c = pod["spec"]["containers"][0]
    assert c["command"][-4:] == ["clusterbench", "qualify", "--profile", "amd-mi300x-oem"]
    env = {e["name"]: e for e in c["env"]}
    assert env["CLUSTERBENCH_NODE"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["CLUSTERBENCH_DB"]["valueFrom"]["secretKeyRef"] == {"name": "cb-db", "key": "url"}
    assert c["resources"]["limits"]["amd.com/gpu"] == "8"
    # the walk is a real check: a misspelt field is reported
    pod["spec"]["containers"][0]["volumeMount"] = []
    assert strict_openapi(OPENAPI["components"]["schemas"][CRONJOB], doc) == [
        ".spec.jobTemplate.spec.template.spec.containers[0].volumeMount"]
    with pytest.raises(jsonschema.ValidationError):   # and so is a wrong type
        check_cronjob({**doc, "spec": {**doc["spec"], "successfulJobsHistoryLimit": "three"}})


def test_command_words_stay_literal_in_kubernetes():
    doc = _cron("@daily", command=("qualify", "--tag", "x=$(CLUSTERBENCH_DB)", "--tag", "y=$$z"))
    words = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    # Kubernetes expands $(VAR) in commands and reduces $$ to $: doubled, each arrives as typed
    assert words[-4:] == ["--tag", "x=$$(CLUSTERBENCH_DB)", "--tag", "y=$$$$z"]


def test_k8s_module_checks_counts_from_python() -> None:
    with pytest.raises(UsageError, match="Kubernetes"):
        k8s.pytorchjob(Spec(nodes=2**31, command=["coll"]), k8s.K8sOptions(install=None))


def test_mpijob_master_addr_is_worker_0_under_the_job_service() -> None:
    """mpi-operator v2beta1 names the headless Service after the job (NAME-worker-0.NAME resolves;
    the older NAME-worker Service no longer exists)."""
    from clusterbench.launch import k8s
    from clusterbench.launch.common import Spec

    doc = k8s.mpijob(Spec(nodes=2, procs_per_node=1, command=["coll", "all_reduce"]),
                     k8s.K8sOptions(name="bench", image="repo/img:1", install=None))
    argv = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert argv[argv.index("-x") + 1] == "MASTER_ADDR=bench-worker-0.bench"


def _amd_cron() -> dict:
    """The AMD example: launch k8s --schedule "0 3 * * *" --nodes 16 --gpus-per-node 8
    --db-secret cb-db -- qualify --profile amd-mi300x-oem (the profile is for AMD GPUs)."""
    vendor = k8s.choose_vendor(None, ("amd-mi300x-oem", "amd"))
    return k8s.cronjob(Spec(nodes=16, gpus_per_node=8, command=["qualify", "--json", "--profile", "amd-mi300x-oem"]),
                       k8s.K8sOptions(vendor=vendor, db_secret=k8s.SecretRef.parse("cb-db")), "0 3 * * *")


def test_the_amd_example_makes_a_pod_amd_nodes_can_run():
    doc = _amd_cron()
    check_cronjob(doc)   # hostPath and supplementalGroups as Kubernetes' OpenAPI publishes them
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["resources"] == {"limits": {"amd.com/gpu": "8"}, "requests": {"amd.com/gpu": "8"}}
    assert c["image"] == "rocm/pytorch:latest"
    assert c["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "kfd", "mountPath": "/dev/kfd"},
                                 {"name": "dri", "mountPath": "/dev/dri"}]
    assert pod["volumes"][1:] == [{"name": "kfd", "hostPath": {"path": "/dev/kfd", "type": "CharDevice"}},
                                  {"name": "dri", "hostPath": {"path": "/dev/dri", "type": "Directory"}}]
    assert pod["securityContext"] == {"supplementalGroups": [k8s.VIDEO_GID, k8s.RENDER_GID]}
    # nothing installed from a public index at pod start: the image's clusterbench runs
    assert c["command"] == ["clusterbench", "qualify", "--json", "--profile", "amd-mi300x-oem"]
    pod["volumes"][1]["hostPath"]["typ"] = "CharDevice"   # the transcribed schema is a real check
    assert strict_openapi(OPENAPI["components"]["schemas"][CRONJOB], doc) == [
        ".spec.jobTemplate.spec.template.spec.volumes[1].hostPath.typ"]


def test_amd_pytorchjob_and_mpijob_workers_get_the_devices_and_the_launcher_none():
    spec = Spec(nodes=2, procs_per_node=8, gpus_per_node=8, command=["coll", "all_reduce"])
    doc = k8s.pytorchjob(spec, k8s.K8sOptions(vendor="amd", supplemental_groups=(44, 992)))
    check(pytorchjob_schema(), doc)
    for replica in doc["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert [v["name"] for v in pod["volumes"]] == ["dshm", "kfd", "dri"]
        assert pod["securityContext"] == {"supplementalGroups": [44, 992]}
        assert pod["containers"][0]["resources"]["limits"] == {"amd.com/gpu": "8"}
    doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["securityContext"]["supplementalGroup"] = []
    assert strict(pytorchjob_schema(), doc) == [
        ".spec.pytorchReplicaSpecs.Master.template.spec.securityContext.supplementalGroup"]
    mpi = k8s.mpijob(spec, k8s.K8sOptions(vendor="amd", image="registry.example/cb-rocm:0.1"))
    check(mpijob_schema(), mpi)
    replicas = mpi["spec"]["mpiReplicaSpecs"]
    assert [v["name"] for v in replicas["Worker"]["template"]["spec"]["volumes"]] == ["dshm", "kfd", "dri"]
    assert [v["name"] for v in replicas["Launcher"]["template"]["spec"]["volumes"]] == ["dshm"]
    assert "securityContext" not in replicas["Launcher"]["template"]["spec"]


def test_nvidia_pods_and_pods_without_gpus_get_no_device_mounts():
    nvidia = k8s.pytorchjob(Spec(nodes=1, gpus_per_node=8, command=["net"]), k8s.K8sOptions())
    pod = nvidia["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert pod["containers"][0]["image"] == "pytorch/pytorch:latest"
    assert [v["name"] for v in pod["volumes"]] == ["dshm"] and "securityContext" not in pod
    cpu = k8s.pytorchjob(Spec(nodes=1, command=["net"]), k8s.K8sOptions(vendor="amd"))
    pod = cpu["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["dshm"] and "securityContext" not in pod
    none = k8s.pytorchjob(Spec(nodes=1, gpus_per_node=1, command=["net"]),
                          k8s.K8sOptions(vendor="amd", supplemental_groups=()))
    assert "securityContext" not in none["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]


@pytest.mark.parametrize("given, profile, resource, want", [
    (None, None, None, "nvidia"), ("amd", None, None, "amd"), (None, ("amd-mi300x-oem", "amd"), None, "amd"),
    (None, None, "amd.com/gpu", "amd"), (None, None, "nvidia.com/mig-1g.10gb", "nvidia"),
    ("amd", ("amd-mi300x-oem", "amd"), None, "amd"), ("nvidia", None, "amd.com/gpu", "nvidia"),
])
def test_the_vendor_comes_from_vendor_the_profile_or_the_resource(given, profile, resource, want):
    assert k8s.choose_vendor(given, profile, resource) == want


def test_a_vendor_against_its_profile_is_refused():
    with pytest.raises(UsageError, match="profile amd-mi300x-oem is for amd GPUs"):
        k8s.choose_vendor("nvidia", ("amd-mi300x-oem", "amd"))
    with pytest.raises(UsageError, match="invalid --vendor"):
        k8s.choose_vendor("intel")


@pytest.mark.parametrize("text, wheel, index", [
    ("/mnt/wheels/clusterbench-0.1.0-py3-none-any.whl", "/mnt/wheels/clusterbench-0.1.0-py3-none-any.whl", None),
    ("https://files.example/cb/clusterbench-0.1.0-py3-none-any.whl",
     "https://files.example/cb/clusterbench-0.1.0-py3-none-any.whl", None),
    ("https://pypi.mirror.internal/simple", None, "https://pypi.mirror.internal/simple"),
    ("file:///mnt/index", None, "file:///mnt/index"),
])
def test_install_from_a_wheel_or_an_index(text, wheel, index):
    got = k8s.InstallFrom.parse(text)
    assert (got.wheel, got.index_url) == (wheel, index)
    words = got.command(["torchrun", "x"])
    if wheel:
        assert words == ["sh", "-c", k8s.INSTALL_SCRIPT, "clusterbench-install", wheel, "torchrun", "x"]
    else:
        assert words == ["sh", "-c", k8s.INDEX_INSTALL_SCRIPT, "clusterbench-install", index, k8s.DEFAULT_INSTALL,
                         "torchrun", "x"]


@pytest.mark.parametrize("text", ["clusterbench", "pypi.org/simple", "-i https://x/simple", "https://a b/simple",
                                  "ftp://host/simple", "https:///simple", ""])
def test_install_from_what_is_neither_is_refused(text):
    with pytest.raises(UsageError, match="--install-from"):
        k8s.InstallFrom.parse(text)


def test_bad_groups_and_two_installs_are_refused():
    with pytest.raises(UsageError, match="supplemental-groups"):
        k8s.pytorchjob(Spec(nodes=1, gpus_per_node=1, command=["net"]),
                       k8s.K8sOptions(vendor="amd", supplemental_groups=(-1,)))
    with pytest.raises(UsageError, match="give one"):
        k8s.pytorchjob(Spec(nodes=1, command=["net"]),
                       k8s.K8sOptions(install="clusterbench", install_from=k8s.InstallFrom(index_url="https://x/simple")))
