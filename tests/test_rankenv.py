import pytest

from clusterbench.errors import UsageError
from clusterbench.ranks.env import detect, expand_hostlist


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


@pytest.mark.parametrize("spec,hosts", [
    ("n1", ["n1"]), ("n[1-3]", ["n1", "n2", "n3"]), ("gpu[07-09,12],login", ["gpu07", "gpu08", "gpu09", "gpu12", "login"]),
    ("a,b", ["a", "b"]), ("rack1-n[1-2]", ["rack1-n1", "rack1-n2"]),
])
def test_hostlist(spec, hosts):
    assert expand_hostlist(spec) == hosts


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
