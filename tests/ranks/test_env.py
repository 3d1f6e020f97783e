"""Tests of clusterbench.ranks.env: the one place that reads a launcher's environment."""

import pytest

from clusterbench.errors import UsageError
from clusterbench.ranks.env import detect


@pytest.mark.parametrize("env, given, missing", [
    ({"RANK": "0"}, "RANK", "WORLD_SIZE"),
    ({"WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "n1"}, "WORLD_SIZE", "RANK"),
    ({"RANK": "1", "SLURM_PROCID": "1", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2"}, "RANK", "WORLD_SIZE"),
])
def test_half_a_torchrun_environment_is_refused(env, given, missing):
    with pytest.raises(UsageError) as e:
        detect(env)
    text = str(e.value)
    assert "\n" not in text and f"{given} is set but {missing} is not" in text


def test_no_launcher_variables_is_no_launcher():
    assert detect({"LOCAL_RANK": "0", "PATH": "/bin"}) is None


@pytest.mark.parametrize("env, words", [
    ({"RANK": "1_0", "WORLD_SIZE": "20"}, "RANK='1_0' is not an integer"),
    ({"RANK": " 1 ", "WORLD_SIZE": "2"}, "is not an integer"),
    ({"RANK": "\u0663", "WORLD_SIZE": "4"}, "is not an integer"),
    ({"RANK": "0", "WORLD_SIZE": str(2**40)}, "world has"),
    ({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"}, "4 ranks run on this host"),
    ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": ""}, "MASTER_ADDR is empty"),
    ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "a b"}, "white space"),
    ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE is not"),
    ({"PMI_RANK": "0"}, "PMI_SIZE is not"),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "MASTER_ADDR": " "}, "MASTER_ADDR is empty"),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": ","}, "names no host"),
    ({"SLURM_PROCID": "1", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2", "MASTER_ADDR": ""}, "MASTER_ADDR is empty"),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS_PER_NODE": "2(x3)"}, "not an integer"),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_STEP_TASKS_PER_NODE": "abc"}, "task count list"),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "8", "SLURM_NODEID": "4",
      "SLURM_STEP_TASKS_PER_NODE": "2(x3)"}, "lists 3 node"),
])
def test_malformed_launcher_variables_are_one_line_errors(env, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        detect(env)


def test_slurm_local_size_is_this_nodes_entry_of_the_steps_list():
    env = {"SLURM_PROCID": "6", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "7", "SLURM_LOCALID": "0",
           "SLURM_NODEID": "3", "SLURM_STEP_TASKS_PER_NODE": "2(x3),1", "SLURM_NTASKS_PER_NODE": "8",
           "MASTER_ADDR": "n1"}
    e = detect(env)
    assert e is not None and (e.local_world_size, e.world_size) == (1, 7)


def test_no_launcher():
    assert detect({}) is None
    # a Slurm batch script without srun is one process, not rank 0 of many
    assert detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"}) is None


def test_torchrun():
    e = detect({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234", "CLUSTERBENCH_HOSTNAME": "h"})
    assert (e.rank, e.world_size, e.local_rank, e.master_addr, e.master_port, e.launcher) == \
        (3, 8, 1, "10.0.0.1", 1234, "torchrun")


def test_slurm():
    e = detect({"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0",
                "SLURM_JOB_NODELIST": "gpu[07-08,10]", "SLURM_JOB_ID": "1234", "SLURM_NTASKS_PER_NODE": "8"})
    assert (e.rank, e.world_size, e.local_rank, e.local_world_size, e.master_addr, e.launcher) == \
        (5, 16, 1, 8, "gpu07", "slurm")
    assert e.master_port == 29500 + 234


def test_mpi_wins_over_slurm():
    env = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
           "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_ADDR": "n1",
           "SLURM_PROCID": "0", "SLURM_STEP_ID": "1", "SLURM_NTASKS": "2"}
    e = detect(env)
    assert (e.rank, e.world_size, e.launcher, e.master_addr) == (2, 4, "mpi", "n1")


def test_mpi_needs_master_addr():
    with pytest.raises(UsageError):
        detect({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})


def test_bad_integer():
    with pytest.raises(UsageError):
        detect({"RANK": "x", "WORLD_SIZE": "2"})


@pytest.mark.parametrize("env, words", [
    ({"RANK": "5", "WORLD_SIZE": "2"}, "rank 5 of 2"),
    ({"RANK": "-1", "WORLD_SIZE": "2"}, "rank -1 of 2"),
    ({"RANK": "0", "WORLD_SIZE": "0"}, "0 ranks"),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "2"}, "local rank 3 of 2"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"}, "MASTER_PORT 70000"),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2", "MASTER_ADDR": "a"}, "rank 2 of 2"),
])
def test_launcher_numbers_no_launcher_sets_are_refused_at_once(env, words):
    with pytest.raises(UsageError, match=words):
        detect(env)
