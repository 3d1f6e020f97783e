"""Launch artifacts probed with edge values: each test here is a defect that was found, the
artifact checked by reading it back as its consumer would (bash, a YAML loader, the scheduler's
own rules: Slurm's time grammar, Kubernetes' cron and time zone checks, Open MPI's -H syntax,
dstack's run names)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from judge_helpers import run_cli

from clusterbench.errors import UsageError
from clusterbench.launch import drain, k8s, slurm
from clusterbench.launch.common import Spec, check_text
from clusterbench.launch.cron import check_schedule, check_time_zone

TAIL = ["--", "coll", "all_reduce"]


def _refused(*argv: str) -> str:
    code, out, err = run_cli(*argv)
    assert code == 2 and out == "" and err.startswith("clusterbench: error: ") and err.count("\n") == 1, \
        (code, out, err)
    return err


# -- Slurm --time: every format sbatch takes, nothing it wraps --------------------------------

@pytest.mark.parametrize("value, seconds", [
    ("1440", 86400), ("10080", 604800), ("1:5", 65), ("30:0", 1800), ("1000:00:00", 3600000),
])
def test_every_slurm_time_format_is_taken(value: str, seconds: int) -> None:
    """Minutes wider than three digits (a day is 1440) and one-digit fields were refused."""
    code, out, err = run_cli("launch", "slurm", "--time", value, *TAIL)
    assert code == 0, err
    assert f"#SBATCH --time={value}\n" in out
    assert subprocess.run(["bash", "-n"], input=out, text=True, timeout=10).returncode == 0
    assert slurm.check_time(value) == seconds


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


# -- cron: what Kubernetes' reader takes ---------------------------------------------------

@pytest.mark.parametrize("schedule", ["0 3 * * 7", "0 3 * * 5-7", "0 3 * * 0,7"])
def test_cron_sunday_is_0_only(schedule: str) -> None:
    """Kubernetes' cron reader bounds day-of-week at 0-6: '7' was written into a CronJob the
    API server refuses."""
    with pytest.raises(UsageError, match="day of week"):
        check_schedule(schedule)
    assert check_schedule("0 3 * * 0") == "0 3 * * 0"


def test_cron_descriptors_are_written_lower_case() -> None:
    """Kubernetes matches @daily exactly: @DAILY was written as given."""
    code, out, err = run_cli("launch", "k8s", "--schedule", "@DAILY", *TAIL)
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["schedule"] == "@daily"


@pytest.mark.parametrize("zone", ["Local", "local", "Etc/-5", "Europe/Abcdefghijklmnop", "Mars/Olympus"])
def test_time_zones_kubernetes_refuses(zone: str) -> None:
    import zoneinfo

    if zone == "Mars/Olympus" and not zoneinfo.available_timezones():
        pytest.skip("this host has no time zone database to tell an unknown zone by")
    with pytest.raises(UsageError, match="--time-zone"):
        check_time_zone(zone)
    for good in ("UTC", "Europe/Berlin", "Etc/GMT+2", "America/Argentina/Buenos_Aires"):
        assert check_time_zone(good) == good


# -- torchrun and mpirun with IPv6 hosts ---------------------------------------------------

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


# -- dstack ---------------------------------------------------------------------------------

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


# -- Kubernetes -------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--nodes", "3000000000"], ["--procs-per-node", "3000000000"], ["--gpus-per-node", "3000000000"],
    ["--schedule", "@daily", "--nodes", "100001"],
    ["--kind", "mpijob", "--image", "r/cb:1", "--nodes", "70000", "--procs-per-node", "70000"],
])
def test_k8s_counts_fit_the_manifest(argv: list[str]) -> None:
    """replicas and slots are int32, an Indexed Job's parallelism at most 100000: larger counts
    made manifests the API server refuses."""
    assert "Kubernetes" in _refused("launch", "k8s", *argv, *TAIL)


def test_k8s_gpu_count_is_given_once() -> None:
    """--resource nvidia.com/gpu=2 was silently replaced by --gpus-per-node's count."""
    err = _refused("launch", "k8s", "--gpus-per-node", "4", "--resource", "nvidia.com/gpu=2", *TAIL)
    assert "GPU count" in err
    code, out, _ = run_cli("launch", "k8s", "--resource", "nvidia.com/gpu=2", *TAIL)
    limits = yaml.safe_load(out)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert code == 0 and limits["resources"]["limits"] == {"nvidia.com/gpu": "2"}


# -- bytes that are not UTF-8 ----------------------------------------------------------------

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


# -- drain and taint reasons -----------------------------------------------------------------

def test_a_drain_reason_holds_no_terminal_control() -> None:
    """C1 controls (CSI \\x9b), bidi overrides and line separators went into the Slurm reason,
    Kubernetes annotation and the printed dry run."""
    reason = drain.reason_text(["busbw \x9b2J low\x85x", "a\u2028b \u202eevil"])
    assert reason.isprintable(), reason
    assert reason.startswith("clusterbench: busbw")
    for argv in drain.taint_argv("node1", reason):
        assert all(w.isprintable() for w in argv)


def test_the_dry_run_prints_one_safe_line_per_command(monkeypatch, capsys) -> None:
    from clusterbench.cli.fleet import OnFail, take_out

    monkeypatch.setattr(drain.shutil, "which", lambda tool: None)   # no scheduler here: a dry run
    take_out(OnFail("drain"), {"node1": ["busbw \x1b[2J\x9b2J low \u202eevil"]}, [], False)
    out = capsys.readouterr().out
    assert out.isascii() or all(ch.isprintable() or ch == "\n" for ch in out), repr(out)
    command = [line for line in out.splitlines() if line.startswith("scontrol")]
    assert len(command) == 1
    assert shlex.split(command[0])[:4] == ["scontrol", "update", "NodeName=node1", "State=DRAIN"]


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


# -- the values of the command after -- ------------------------------------------------------

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
