"""launch.slurm.JobInfo.ended: the line that says how a submitted job ended."""

import time

import pytest

from clusterbench.errors import UsageError
from clusterbench.launch import slurm
from clusterbench.launch.common import Spec
from clusterbench.launch.slurm import JobInfo, parse_job


def test_ended_names_state_exit_and_times():
    assert JobInfo("COMPLETED", "0:0", queued_s=3.4, run_s=41.0).ended("12") == \
        "Slurm job 12 COMPLETED (exit 0:0; queued 3 s, ran 41 s)"


def test_ended_leaves_out_times_slurm_did_not_give():
    assert JobInfo("FAILED", "1:0", run_s=5.0).ended("3") == "Slurm job 3 FAILED (exit 1:0; ran 5 s)"
    assert JobInfo("UNKNOWN").ended("3") == "Slurm job 3 UNKNOWN (exit ?)"


def test_ended_from_scontrol_line():
    info = parse_job("JobId=9 JobState=TIMEOUT ExitCode=0:15 RunTime=00:01:05 "
                     "SubmitTime=2024-05-01T10:00:00 StartTime=2024-05-01T10:00:30")
    assert info.ended("9") == "Slurm job 9 TIMEOUT (exit 0:15; queued 30 s, ran 65 s)"


@pytest.mark.parametrize("opts", [slurm.SlurmOptions(partition="a;b"), slurm.SlurmOptions(time="soon"),
                                  slurm.SlurmOptions(extra=("--x\n#SBATCH --y",))])
def test_sbatch_options_validated(opts):
    with pytest.raises(UsageError):
        slurm.sbatch_script(Spec(command=["net"]), opts)


def test_slurm_job_line_parsing():
    info = slurm.parse_job("JobId=1 JobState=PENDING Reason=Priority SubmitTime=2024-05-01T10:00:00 "
                           "StartTime=Unknown RunTime=00:00:00", now=time.mktime((2024, 5, 1, 10, 5, 0, 0, 0, -1)))
    assert info.describe() == "PENDING (Priority) 0:05:00" and not info.done
    assert slurm.parse_job("JobState=TIMEOUT RunTime=1-00:00:01 ExitCode=0:15").run_s == 86401
    assert slurm.JobInfo("").done


def test_the_script_finds_and_checks_master_addr_before_srun():
    script = slurm.sbatch_script(Spec(nodes=2, command=["net"]), slurm.SlurmOptions())
    lines = script.splitlines()
    check, srun = lines.index(slurm.MASTER_ADDR_LINES[0]), next(i for i, x in enumerate(lines) if x.startswith("srun "))
    assert check < lines.index("export MASTER_ADDR") < srun
    assert sum(1 for x in lines if "exit 2" in x) == 2 and 'getent hosts "$MASTER_ADDR"' in script
    assert "hostname -I" in script and 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in script


def test_the_jobs_own_error_line_is_read_from_its_stderr(tmp_path):
    out = tmp_path / "slurm-7.out"
    out.write_text("# Collective test\nsome output\nclusterbench: error: MASTER_ADDR x does not resolve on n1\n"
                   "srun: error: n1: task 0: Exited with exit code 2\n")
    info = parse_job(f"JobId=7 JobState=FAILED ExitCode=2:0 StdErr={out} StdOut={out}")
    assert info.stderr == str(out)
    assert slurm.job_error(info) == "MASTER_ADDR x does not resolve on n1"
    out.write_text("nothing of ours\n")
    assert slurm.job_error(info) is None
    assert slurm.job_error(JobInfo("FAILED", stderr=str(tmp_path / "elsewhere.out"))) is None
    assert slurm.job_error(JobInfo("FAILED")) is None
