"""Tests of clusterbench.cli.commands.launch: ``clusterbench launch ENGINE [options] -- <clusterbench command>``."""

from __future__ import annotations

import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml
from host_doubles import _fake_sys
from judge_helpers import cli, run_cli
from k8s_schemas import (
    DSTACK_SCHEMA,
    check,
    check_cronjob,
    mpijob_schema,
    pytorchjob_schema,
    strict,
)
from launch_rows import TAIL, _master, launch_cli
from stored_runs import cli_store_cli

from clusterbench.errors import UsageError
from clusterbench.launch import k8s, slurm
from clusterbench.launch.common import Spec, check_text
from clusterbench.launch.cron import check_time_zone


def _refused(*argv: str) -> str:
    code, out, err = run_cli(*argv)
    assert code == 2 and out == "" and err.startswith("clusterbench: error: ") and err.count("\n") == 1, \
        (code, out, err)
    return err


def test_malformed_hostfile_cli_is_one_line(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("node1 slots=2\nnode2 banana\n")
    r = launch_cli("launch", "mpi", "--hostfile", str(f), "--", "net")
    assert r.returncode == 2
    assert r.stderr.strip() == "clusterbench: error: hosts line 2: unexpected 'banana' (expected slots=N or max_slots=N)"


def test_an_unknown_launcher_option_is_not_taken_for_the_command():
    r = launch_cli("launch", "torchrun", "--nnodes", "2", "--rdzv-endpoint", "node1:29500", "--print", "--", "net")
    assert r.returncode == 2
    assert r.stderr == ("clusterbench: error: no such option: --nnodes (options go before --, "
                        "the clusterbench command after it)\n")
    assert launch_cli("launch", "slurm", "--nodes", "2", "coll", "all_reduce", "-b", "8").returncode == 0


def test_print_makes_no_process_and_bad_host_is_one_line():
    r = launch_cli("launch", "torchrun", "--hosts", "a,$(reboot)", "--print", "--", "net")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "invalid host" in r.stderr


@pytest.mark.parametrize("option, value", [("--time", "1:00\nx"), ("--env", "A=1\nx"), ("--sbatch-opt", "--a=1\nx")])
def test_a_refused_value_is_named_by_the_option_as_typed(option, value):
    r = launch_cli("launch", "slurm", "--print", option, value, "--", "coll", "all_reduce")
    assert r.returncode == 2 and r.stderr.startswith(f"clusterbench: error: invalid {option} "), r.stderr


def test_ipv6_rendezvous_hosts_are_addresses_not_options():
    r = launch_cli("launch", "torchrun", "--print", "--nodes", "2", "--rdzv-endpoint", "[::1]:29400", "--", "coll",
            "all_reduce")
    assert r.returncode == 0 and "--rdzv_endpoint=[::1]:29400" in r.stdout, r.stderr
    r = launch_cli("launch", "torchrun", "--print", "--nodes", "2", "--rdzv-endpoint", "[::1;reboot]:29400", "--",
            "coll", "all_reduce")
    assert r.returncode == 2 and "invalid rendezvous host" in r.stderr


def test_k8s_cli_yaml_has_no_anchors_and_validates():
    r = launch_cli("launch", "k8s", "--nodes", "3", "--gpus-per-node", "8", "--gpu-resource", "amd.com/gpu",
            "--network", "roce-net", "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    assert "&id" not in r.stdout
    check(pytorchjob_schema(), yaml.safe_load(r.stdout))
    assert launch_cli("launch", "k8s", "--name", "Bad_Name", "--", "net").returncode == 2


def test_auto_net_env_cli_prints_its_choice(tmp_path):
    root = _fake_sys(tmp_path, {"mlx5_0": {"link": "InfiniBand"}}, {"ib0": "up"})
    r = launch_cli("launch", "slurm", "--auto-net-env", "--sys-root", str(root), "--env", "NCCL_IB_HCA=mlx5_9",
            "--", "net")
    assert r.returncode == 0
    assert "export NCCL_IB_HCA=mlx5_9" in r.stdout   # an explicit --env wins
    assert "export NCCL_SOCKET_IFNAME=ib0" in r.stdout and "auto-net-env" in r.stderr


def test_k8s_db_secret_sets_the_url_from_the_secret_never_the_url():
    r = launch_cli("launch", "k8s", "--nodes", "2", "--db-secret", "team-db:pg-url", "--env", "NCCL_DEBUG=INFO",
            "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    check(pytorchjob_schema(), doc)
    for role in ("Master", "Worker"):
        env = doc["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]["containers"][0]["env"]
        assert env == [{"name": "NCCL_DEBUG", "value": "INFO"},
                       {"name": "CLUSTERBENCH_DB", "valueFrom": {"secretKeyRef": {"name": "team-db", "key": "pg-url"}}}]
    assert "--db" not in _master(doc)["command"]
    default_key = k8s.SecretRef.parse("team-db")
    assert (default_key.name, default_key.key) == ("team-db", "url")
    # a wrong field inside the reference is caught by the transcribed schema
    _master(doc)["env"][1]["valueFrom"]["secretKeyRef"]["keyy"] = "x"
    assert strict(pytorchjob_schema(), doc) == [
        ".spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[1].valueFrom.secretKeyRef.keyy"]


def test_k8s_mpijob_forwards_the_secret_to_the_ranks_and_needs_an_image():
    r = launch_cli("launch", "k8s", "--kind", "mpijob", "--image", "registry.example/cb:0.1", "--db-secret", "team-db",
            "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    check(mpijob_schema(), doc)
    launcher = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    assert cmd[cmd.index("clusterbench") - 2:cmd.index("clusterbench")] == ["-x", "CLUSTERBENCH_DB"]
    assert {"name": "CLUSTERBENCH_DB", "valueFrom": {"secretKeyRef": {"name": "team-db", "key": "url"}}} \
        in launcher["env"]
    assert cmd[-3:] == ["coll", "--json", "all_reduce"]
    for args, word in ((["--kind", "mpijob"], "needs --image"),
                       (["--kind", "mpijob", "--image", "x/y:1", "--install", "clusterbench"], "does not apply"),
                       (["--db-secret", "team-db", "--env", "CLUSTERBENCH_DB=sqlite.db"], "give one"),
                       (["--db-secret", "Team_DB"], "invalid --db-secret"),
                       (["--install", "x", "--no-install"], "give one"),
                       (["--install", "--index-url=http://evil/"], "invalid --install")):
        r = launch_cli("launch", "k8s", *args, "--", "net")
        assert r.returncode == 2 and word in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_k8s_json_is_added_once_and_only_where_the_command_has_it():
    r = launch_cli("launch", "k8s", "--", "stream", "--json")
    assert _master(yaml.safe_load(r.stdout))["command"][-2:] == ["stream", "--json"]
    r = launch_cli("launch", "k8s", "--", "results", "list")
    assert _master(yaml.safe_load(r.stdout))["command"][-2:] == ["results", "list"]
    assert "has no --json" in r.stderr


def test_dstack_secret_and_install():
    from clusterbench import __version__

    r = launch_cli("launch", "dstack", "--nodes", "2", "--gpus-per-node", "8", "--db-secret", "team_db",
            "--setup", "nvidia-smi", "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["env"] == ["CLUSTERBENCH_DB=${{ secrets.team_db }}"]
    assert doc["commands"][:2] == ["nvidia-smi", f"pip install --quiet --no-cache-dir clusterbench=={__version__}"]
    assert shlex.split(doc["commands"][-1])[-3:] == ["coll", "--json", "all_reduce"]
    r = launch_cli("launch", "dstack", "--no-install", "--", "net")
    assert [c.split()[0] for c in yaml.safe_load(r.stdout)["commands"]] == ["torchrun"]
    for bad in ("team-db", "x }}", "secrets.a"):
        r = launch_cli("launch", "dstack", "--db-secret", bad, "--", "net")
        assert r.returncode == 2 and "invalid --db-secret" in r.stderr


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


@pytest.mark.parametrize("value", ["30000-00", "24856-0", "99999-23:59:59"])
def test_a_slurm_time_sbatch_would_wrap_is_refused(value: str) -> None:
    """Slurm adds the fields up in a C int: 30000 days wrapped to a garbage limit."""
    assert "--time" in _refused("launch", "slurm", "--time", value, *TAIL)
    for other in ("1:2:3:4", "1-", "-1-2", "1-2:3:4:5", "1:", "٣٠"):   # and what was refused stays so
        assert "--time" in _refused("launch", "slurm", "--time", other, *TAIL)
    assert slurm.check_time("24855-0") == 24855 * 86400 and slurm.check_time("unlimited") is None


@pytest.mark.parametrize("directive", ["--nodes=4", "--ntasks-per-node=2", "--job-name=x", "--time=10",
                                       "--exclusive", "--nodelist=a"])
def test_sbatch_opt_cannot_override_a_directive_the_script_writes(directive: str) -> None:
    """sbatch takes the later of two directives: --sbatch-opt --nodes=4 after the script's own
    --nodes=2 ran another job than the srun line and the checks were made for."""
    err = _refused("launch", "slurm", "--nodes", "2", "--sbatch-opt", directive, *TAIL)
    assert "sets" in err
    assert run_cli("launch", "slurm", "--sbatch-opt", "--constraint=mi300x", *TAIL)[0] == 0


def test_cron_descriptors_are_written_lower_case() -> None:
    """Kubernetes matches @daily exactly: @DAILY was written as given."""
    code, out, err = run_cli("launch", "k8s", "--schedule", "@DAILY", *TAIL)
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["schedule"] == "@daily"


def test_torchrun_hosts_take_ipv6_addresses() -> None:
    """--hosts with IPv6 addresses was refused: the endpoint was written HOST:PORT without brackets."""
    for extra in ([], ["--rdzv-endpoint", "[fd00::1]:29400"]):
        code, out, err = run_cli("launch", "torchrun", "--hosts", "fd00::1,fd00::2", *extra, "--print", *TAIL)
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 2
        for line, host in zip(lines, ("fd00::1", "fd00::2")):
            words = shlex.split(line)
            assert words[5] == host
            remote = shlex.split(" ".join(words[6:]))   # what the far side's shell reads
            assert "--rdzv_endpoint=[fd00::1]:29400" in remote and f"--local_addr={host}" in remote
    assert "first of them" in _refused("launch", "torchrun", "--hosts", "fd00::1,fd00::2",
                                       "--rdzv-endpoint", "[fd00::2]:29400", "--print", *TAIL)


def test_mpirun_dash_h_never_gets_an_ipv6_address(tmp_path: Path) -> None:
    """mpirun -H reads HOST:SLOTS up to the first ':': fe80::1:8 was host 'fe80'."""
    assert "--hostfile" in _refused("launch", "mpi", "--hosts", "fd00::1,fd00::2", "--print", *TAIL)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("fd00::1 slots=2\nfd00::2 slots=2\n")
    code, out, err = run_cli("launch", "mpi", "--hostfile", str(hostfile), "--print", *TAIL)
    assert code == 0, err
    assert "MASTER_ADDR=fd00::1" in shlex.split(out)


def test_dstack_gpu_without_a_count_is_not_dropped() -> None:
    assert "--gpus-per-node" in _refused("launch", "dstack", "--gpu", "H100", *TAIL)
    code, out, err = run_cli("launch", "dstack", "--gpu", "H100", "--gpus-per-node", "8", *TAIL)
    assert code == 0, err
    assert yaml.safe_load(out)["resources"]["gpu"] == "H100:8"


def test_dstack_keeps_an_explicit_procs_per_node() -> None:
    """--gpus-per-node 8 --procs-per-node 1 ran 8 ranks per node ($DSTACK_GPUS_PER_NODE)."""
    code, out, err = run_cli("launch", "dstack", "--gpus-per-node", "8", "--procs-per-node", "1", *TAIL)
    assert code == 0, err
    run = yaml.safe_load(out)["commands"][-1]
    assert "--nproc_per_node=1" in shlex.split(run)
    code, out, err = run_cli("launch", "dstack", "--gpus-per-node", "8", *TAIL)
    assert "--nproc_per_node=$DSTACK_GPUS_PER_NODE" in yaml.safe_load(out)["commands"][-1]


def test_dstack_run_names_have_two_characters() -> None:
    assert "--name" in _refused("launch", "dstack", "--name", "a", *TAIL)
    assert run_cli("launch", "dstack", "--name", "ab", *TAIL)[0] == 0


@pytest.mark.parametrize("argv", [
    ["--nodes", "3000000000"], ["--procs-per-node", "3000000000"], ["--gpus-per-node", "3000000000"],
    ["--schedule", "@daily", "--nodes", "100001"],
    ["--kind", "mpijob", "--image", "r/cb:1", "--nodes", "70000", "--procs-per-node", "70000"],
])
def test_k8s_counts_fit_the_manifest(argv: list[str]) -> None:
    """replicas and slots are int32, an Indexed Job's parallelism at most 100000: larger counts
    made manifests the API server refuses. Each is refused, by the count's bound (cli/bounds.py)
    or by what the manifest holds."""
    err = _refused("launch", "k8s", *argv, *TAIL)
    assert "Kubernetes" in err or "is not a whole number from " in err


def test_k8s_gpu_count_is_given_once() -> None:
    """--resource nvidia.com/gpu=2 was silently replaced by --gpus-per-node's count."""
    err = _refused("launch", "k8s", "--gpus-per-node", "4", "--resource", "nvidia.com/gpu=2", *TAIL)
    assert "GPU count" in err
    code, out, _ = run_cli("launch", "k8s", "--resource", "nvidia.com/gpu=2", *TAIL)
    limits = yaml.safe_load(out)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert code == 0 and limits["resources"]["limits"] == {"nvidia.com/gpu": "2"}


@pytest.mark.parametrize("argv", [
    ["launch", "k8s", "--env", "NCCL_X=\udcff"], ["launch", "dstack", "--env", "NCCL_X=\udcff"],
    ["launch", "k8s", "--install", "clusterbench\udcff"], ["launch", "dstack", "--setup", "echo \udcff"],
    ["launch", "k8s", "--datatype-is-a-word-below"],
])
def test_text_that_is_not_utf8_is_refused(argv: list[str]) -> None:
    """A byte that is not UTF-8 on the command line (a lone surrogate in Python) went into the
    manifest as "\\uDCFF", which no YAML reader or API server takes."""
    if argv[-1] == "--datatype-is-a-word-below":
        argv = [*argv[:-1], *TAIL, "--datatype", "\udcff"]
    else:
        argv = [*argv, *TAIL]
    assert "UTF-8" in _refused(*argv)
    with pytest.raises(UsageError, match="UTF-8"):
        Spec(env={"X": "a\udcffb"})
    assert check_text("日本語 é", "x") == "日本語 é"


@pytest.mark.parametrize("launcher", ["slurm", "k8s", "mpi", "torchrun", "dstack"])
@pytest.mark.parametrize("tail, says", [
    (["net", "--rdma-qps", "99999"], "--rdma-qps must be 1..16384"),
    (["coll", "all_reduce", "-b", "1X"], "invalid minbytes (-b) '1X'"),
    (["train", "--warmup", "5", "--steps", "5"], "--warmup 5 leaves none of the 5 --steps timed"),
    (["stream", "--kernels", "Tirad"], "Tirad"),
])
def test_a_value_the_command_would_refuse_is_refused_before_launching(launcher: str, tail: list[str],
                                                                      says: str) -> None:
    """launch checked only the syntax after --: `-- net --rdma-qps 99999` wrote a job script (or
    started mpirun) whose every node then refused it. The values a command checks without the
    nodes' hardware are checked here, as sweep and qualify check their tests."""
    needs = ["--hosts", "n[1-2]"] if launcher == "mpi" else []
    err = _refused("launch", launcher, *needs, "--", *tail)
    assert "the command after --" in err and says in err, err


def test_launched_ranks_get_the_database_without_its_password(capsys, tmp_path, monkeypatch):
    """`launch` hands --db to every rank's command line (an sbatch script, mpirun's argv): a URL
    goes without its password (ranks authenticate with a passfile), a path goes absolute."""
    rc, script, err = cli_store_cli(capsys, "launch", "slurm", "--nodes", "2", "--print", "--db",
                          "postgresql://cb:hunter2@db1:5432/cb?sslmode=require", "--", "coll", "all_reduce")
    assert rc == 0, err
    assert "--db postgresql://cb@db1:5432/cb?sslmode=require" in script.replace("'", "")
    assert "hunter2" not in script
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts").write_text("localhost slots=1\n")
    rc, line, err = cli_store_cli(capsys, "launch", "mpi", "--hostfile", "hosts", "--print", "--db", "rel.db",
                        "--", "coll", "all_reduce")
    assert rc == 0 and f"--db {tmp_path / 'rel.db'}" in line, err


AMD_EXAMPLE = ("launch", "k8s", "--schedule", "0 3 * * *", "--nodes", "16", "--gpus-per-node", "8",
               "--db-secret", "cb-db", "--", "qualify", "--profile", "amd-mi300x-oem")


def test_the_amd_kubernetes_example_makes_a_pod_amd_nodes_can_run():
    """Before: nvidia.com/gpu, pytorch/pytorch:latest (CUDA) and pip install from PyPI at start."""
    from clusterbench import __version__

    r = launch_cli(*AMD_EXAMPLE)
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    check_cronjob(doc)
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["resources"]["limits"] == {"amd.com/gpu": "8"} and c["image"] == "rocm/pytorch:latest"
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/dev/shm", "/dev/kfd", "/dev/dri"}
    assert {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v} == {"/dev/kfd", "/dev/dri"}
    assert pod["securityContext"]["supplementalGroups"] == [44, 109]
    assert c["command"] == ["clusterbench", "qualify", "--json", "--profile", "amd-mi300x-oem"]
    assert "pip" not in r.stdout
    # and it says that the image must bring clusterbench
    assert r.stderr == (f"# the pods run the clusterbench of image rocm/pytorch:latest and install nothing at start: "
                        f"give an image that has clusterbench {__version__} (--image, docs/multi-node.md) or "
                        "--install-from WHEEL|INDEX_URL\n")


def test_vendor_option_and_profile():
    r = launch_cli("launch", "k8s", "--vendor", "amd", "--gpus-per-node", "1", "--", "coll", "all_reduce")
    assert r.returncode == 0 and _master(yaml.safe_load(r.stdout))["resources"]["limits"] == {"amd.com/gpu": "1"}
    r = launch_cli("launch", "k8s", "--gpus-per-node", "1", "--", "qualify", "--profile", "cpu-smoke")   # no vendor: nvidia
    assert r.returncode == 0 and _master(yaml.safe_load(r.stdout))["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    r = launch_cli("launch", "k8s", "--vendor", "nvidia", "--", "qualify", "--profile", "amd-mi300x-oem")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "profile amd-mi300x-oem is for amd GPUs" in r.stderr
    r = launch_cli("launch", "k8s", "--vendor", "intel", "--", "net")
    assert r.returncode == 2 and "--vendor" in r.stderr


def test_install_from_a_wheel_or_an_index_and_groups():
    wheel = "/mnt/wheels/clusterbench-0.1.0-py3-none-any.whl"
    r = launch_cli("launch", "k8s", "--install-from", wheel, "--", "net")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # (the kubelet reduces the scripts' $$ to $)
    assert _master(yaml.safe_load(r.stdout))["command"][:6] == ["sh", "-c", k8s.k8s_literal(k8s.INSTALL_SCRIPT),
                                                              "clusterbench-install", wheel, "torchrun"]
    r = launch_cli("launch", "k8s", "--install-from", "https://pypi.mirror.internal/simple", "--", "net")
    assert _master(yaml.safe_load(r.stdout))["command"][:7] == [
        "sh", "-c", k8s.k8s_literal(k8s.INDEX_INSTALL_SCRIPT), "clusterbench-install", "https://pypi.mirror.internal/simple",
        k8s.DEFAULT_INSTALL, "torchrun"]
    r = launch_cli("launch", "k8s", "--vendor", "amd", "--gpus-per-node", "8", "--supplemental-groups", "44,992", "--", "net")
    pod = yaml.safe_load(r.stdout)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["securityContext"] == {"supplementalGroups": [44, 992]}
    r = launch_cli("launch", "k8s", "--vendor", "amd", "--gpus-per-node", "8", "--supplemental-groups", "none", "--", "net")
    assert "securityContext" not in yaml.safe_load(r.stdout)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    for args, word in ((["--install-from", "clusterbench"], "invalid --install-from"),
                       (["--install-from", wheel, "--install", "clusterbench"], "give one"),
                       (["--install-from", wheel, "--no-install"], "give one"),
                       (["--supplemental-groups", "video"], "invalid --supplemental-groups"),
                       (["--kind", "mpijob", "--image", "x/y:1", "--install-from", wheel], "does not apply")):
        r = launch_cli("launch", "k8s", *args, "--", "net")
        assert r.returncode == 2 and word in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_an_image_of_ones_own_is_said_to_be_run_as_it_is():
    r = launch_cli("launch", "k8s", "--image", "registry.example/cb:0.1", "--", "net")
    assert r.returncode == 0
    assert r.stderr == "# the pods run the clusterbench of image registry.example/cb:0.1; nothing is installed at start\n"
    assert _master(yaml.safe_load(r.stdout))["command"][0] == "torchrun"
