"""`launch k8s --schedule`: a batch/v1 CronJob for nightly checks, validated against Kubernetes'
published OpenAPI (tests/data/schemas), the schedule checked as cron syntax and YAML-dumped."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml
from judge_helpers import cli
from k8s_schemas import CRONJOB, OPENAPI, check_cronjob, strict_openapi

from clusterbench.errors import UsageError
from clusterbench.launch import k8s
from clusterbench.launch.common import Spec
from clusterbench.launch.cron import check_schedule, check_time_zone

SCHEMAS = Path(__file__).parent / "data" / "schemas"


def _cron(*extra: str, command=("qualify", "--profile", "amd-mi300x-oem")) -> dict:
    return k8s.cronjob(Spec(nodes=4, gpus_per_node=8, command=list(command)),
                       k8s.K8sOptions(name="nightly", gpu_resource="amd.com/gpu",
                                      db_secret=k8s.SecretRef.parse("cb-db")), *extra)


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


@pytest.mark.parametrize("good", ["0 3 * * *", "*/15 * * * *", "0 3 * * 1-5", "30 2 1,15 * ?", "0 0 * JAN-MAR SUN",
                                  "@daily", "@hourly", "5-59/10 0-23/2 * * *"])
def test_schedules_kubernetes_accepts(good):
    assert check_schedule(good) == " ".join(good.split())


@pytest.mark.parametrize("bad, why", [
    ("0 3 * *", "expected 5 fields"), ("0 3 * * * *", "expected 5 fields"), ("60 3 * * *", "minute '60'"),
    ("0 24 * * *", "hour '24'"), ("0 3 0 * *", "day of month '0'"), ("0 3 * 13 *", "month '13'"),
    ("0 3 * * 8", "day of week '8'"), ("0 3 * * 7", "day of week '7'"), ("*/0 * * * *", "step '0'"), ("5-1 * * * *", "runs backwards"),
    ("0 3 * * *\n* * * * *", "control characters"), ("TZ=UTC 0 3 * * *", "--time-zone"),
    ("0 3 * * MOO", "day of week 'MOO'"), ("@every 5m", "expected 5 fields"), ("? * * * *", "minute '?'"),
])
def test_bad_schedules(bad, why):
    with pytest.raises(UsageError, match=why):
        check_schedule(bad)


def test_time_zone_and_cli(capsys):
    assert check_time_zone("America/Argentina/Buenos_Aires") == "America/Argentina/Buenos_Aires"
    with pytest.raises(UsageError):
        check_time_zone("UTC\nx: y")
    rc, out, err = cli(capsys, "launch", "k8s", "--schedule", "0 3 * * *", "--nodes", "2", "--name", "nightly",
                       "--", "qualify", "--profile", "cpu-smoke")
    assert rc == 0, err
    doc = yaml.safe_load(out)
    check_cronjob(doc)
    c = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert c["command"][-4:] == ["qualify", "--json", "--profile", "cpu-smoke"]   # its log carries JSON lines
    assert "&id" not in out
    for args, why in ((("--schedule", "0 3 * * * ; rm -rf /"), "expected 5 fields"),
                      (("--time-zone", "UTC"), "need --schedule"),
                      (("--service-account", "sa"), "need --schedule"),
                      (("--schedule", "@daily", "--service-account", "Bad_SA"), "invalid --service-account"),
                      (("--schedule", "@daily", "--kind", "mpijob", "--image", "r/cb:1"), "does not combine")):
        rc, _, err = cli(capsys, "launch", "k8s", *args, "--", "qualify", "--profile", "cpu-smoke")
        assert rc == 2 and err.count("\n") == 1 and why in err, err
