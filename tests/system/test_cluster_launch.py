"""System tests (cluster launch): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import shlex
import subprocess

from launch_rows import EVIL

from clusterbench.launch import slurm
from clusterbench.launch.common import Spec, parse_env, remote_line


def test_remote_words_round_trip_through_a_shell(tmp_path):
    marker = tmp_path / "pwned"
    words = ["clusterbench", "net", "--tag", f"x=$(touch {marker}); `touch {marker}`", EVIL]
    line = " ".join(remote_line(words))
    # what an ssh-like agent does on the far side: one shell line
    out = subprocess.run(["/bin/sh", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True,
                         timeout=10)
    assert out.stdout.splitlines() == words
    assert not marker.exists()


def test_sbatch_script_quotes_env_and_tags(tmp_path):
    marker = tmp_path / "pwned"
    spec = Spec(nodes=2, procs_per_node=8, gpus_per_node=8,
                env=parse_env(["NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_BUFFSIZE=8388608",
                               "UCX_NET_DEVICES=mlx5_0:1", f"EVIL=$(touch {marker})"]),
                command=["coll", "all_reduce", "--tag", f"t=`touch {marker}`"])
    script = slurm.sbatch_script(spec, slurm.SlurmOptions(partition="gpu", time="01:00:00"))
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=01:00:00",
                 "export NCCL_IB_QPS_PER_CONNECTION=4", "export UCX_NET_DEVICES=mlx5_0:1"):
        assert line in script.splitlines()
    srun = [line for line in script.splitlines() if line.startswith("srun ")][0]
    assert shlex.split(srun)[-5:] == ["clusterbench", "coll", "all_reduce", "--tag", f"t=`touch {marker}`"]
    # run the script's shell parts with srun and scontrol replaced by printers
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("srun", "scontrol"):
        (bindir / tool).write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
        (bindir / tool).chmod(0o755)
    r = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=10,
                       env={"PATH": f"{bindir}:/usr/bin:/bin", "SLURM_JOB_NODELIST": "n[1-2]",
                            # the printers name no node getent finds: the address is given
                            "MASTER_ADDR": "127.0.0.1"})
    assert r.returncode == 0, r.stderr
    assert f"t=`touch {marker}`" in r.stdout.splitlines()
    assert not marker.exists()
