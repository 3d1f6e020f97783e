"""System tests (progress): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os

from clusterbench.launch import slurm

SCONTROL = """#!/bin/sh
# a scontrol that answers from a script of states, one per call
n=$(cat "{d}/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "{d}/calls"
sed -n "${{n}}p" "{d}/states" | grep . || tail -n 1 "{d}/states"
"""


def test_slurm_wait_reports_states_and_backs_off(tmp_path, monkeypatch):
    job = "JobId=7 JobName=cb"
    states = ([f"{job} JobState=PENDING Reason=Resources SubmitTime=2024-05-01T10:00:00 StartTime=Unknown "
               "RunTime=00:00:00 ExitCode=0:0"] * 4
              + [f"{job} JobState=RUNNING Reason=None SubmitTime=2024-05-01T10:00:00 "
                 f"StartTime=2024-05-01T10:00:42 RunTime=00:00:{s:02d} ExitCode=0:0" for s in (1, 3, 7)]
              + [f"{job} JobState=COMPLETED Reason=None SubmitTime=2024-05-01T10:00:00 "
                 "StartTime=2024-05-01T10:00:42 RunTime=00:01:10 ExitCode=0:0"])
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    exe = tmp_path / "scontrol"
    exe.write_text(SCONTROL.format(d=tmp_path))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    seen, slept = [], []
    info = slurm.wait("7", 3600, on_state=lambda i: seen.append(i.describe()), sleep=slept.append)
    assert info.state == "COMPLETED" and info.queued_s == 42 and info.run_s == 70
    assert seen[0].startswith("PENDING (Resources) ") and seen[4] == "RUNNING 0:00:01 (queued 0:00:42)"
    assert seen[-1] == "COMPLETED 0:01:10 (queued 0:00:42)"
    # 1 s, then longer and longer; back to 1 s when the job starts running
    assert slept == [1.0, 1.5, 2.25, 3.375, 1.0, 1.5, 2.25]
    assert max(slurm.poll_intervals().__next__() for _ in range(1)) == 1.0
    gen = slurm.poll_intervals()
    assert [next(gen) for _ in range(12)][-1] == 30.0  # never more often than every 30 s later on
