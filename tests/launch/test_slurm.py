"""launch.slurm.JobInfo.ended: the line that says how a submitted job ended."""

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
