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
