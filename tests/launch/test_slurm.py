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
