"""Tests of clusterbench.cli.commands.coll: ``clusterbench coll OP``."""

from __future__ import annotations

import pytest
from bench_cli import SMALL, cli

from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import Spec


def test_torchrun_c10d_and_static():
    spec = Spec(nodes=2, procs_per_node=8, command=["coll", "all_reduce"])
    c10d = tr.torchrun_argv(spec, "10.0.0.1:29400", local_addr="10.0.0.2", is_host=False, join_timeout=30)
    assert "--rdzv_backend=c10d" in c10d and "--rdzv_endpoint=10.0.0.1:29400" in c10d
    assert "--rdzv_conf=is_host=0,join_timeout=30" in c10d and "--local_addr=10.0.0.2" in c10d
    assert c10d[-4:] == ["-m", "clusterbench", "coll", "all_reduce"]
    static = tr.torchrun_argv(spec, "head:29500", node_rank=1)
    assert "--node_rank=1" in static and "--master_addr=head" in static and "--master_port=29500" in static
    with pytest.raises(UsageError):
        tr.torchrun_argv(spec, "head:29500", node_rank=2)
    with pytest.raises(UsageError):
        tr.torchrun_argv(spec, "head;reboot:29500")


@pytest.mark.parametrize("args,words", [
    (["coll", "all_reduce", "-b", "12Q"], "invalid minbytes (-b) '12Q'"),
    (["coll", "all_reduce", "-b", "1M", "-e", "1K"], "larger than maxbytes"),
    (["coll", "allscatter"], "unknown collective 'allscatter'"),
    (["coll", "all_reduce", "-d", "float8"], "unknown datatype 'float8'"),
    (["coll", "all_reduce", "-o", "xor"], "unknown reduction op 'xor'"),
    (["coll", "all_reduce", "-a", "9"], "invalid average (-a) 9"),
    (["coll", "all_reduce", "--np", "0"], "--np must be at least 1"),
    (["coll", "all_reduce", "--engine", "mpi"], "Invalid value for '--engine': 'mpi' is not one of 'torch', 'nccl'"),
    (["coll", "all_reduce", "--engine", "nccl", "--device", "cpu"],
     "--engine nccl calls the NCCL/RCCL library on GPU ranks; these ranks run on cpu (--device cpu): "
     "use --engine torch"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, db, args, words):
    code, out, err = cli(capsys, *args, "--db", db)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("clusterbench: error: ") and words in err, err
    assert "Traceback" not in out + err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU message")
def test_np_beyond_gpus_without_gpu(capsys, db):
    code, _, err = cli(capsys, "coll", "all_reduce", "--device", "cuda", "--np", "4", "--db", db)
    assert code == 2 and err == "clusterbench: error: --device cuda: no CUDA or ROCm GPU is visible to PyTorch\n"


def test_unwritable_and_corrupt_databases(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, _, err = cli(capsys, "coll", "all_reduce", *SMALL, "--db", str(blocker / "results.db"))
    assert code == 2 and err.count("\n") == 1 and "cannot create database directory" in err
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not sqlite" * 100)
    code, _, err = cli(capsys, "coll", "all_reduce", *SMALL, "--db", str(corrupt))
    assert code == 2 and err.count("\n") == 1 and "not a database" in err
    assert corrupt.read_bytes() == b"this is not sqlite" * 100  # nothing written into it


def test_cli_exits_2_with_one_line(no_gpu_torch, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--db", str(tmp_path / "r.db")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clusterbench: error: this node has 2 AMD GPU(s)")
    with pytest.raises(SystemExit) as e:
        main(["stream", "-s", "1K", "-n", "2", "--db", str(tmp_path / "r.db")])
    assert e.value.code == 2


@pytest.mark.parametrize("args,words", [
    (["all_gather", "-b", "8", "-e", "32", "--np", "4"],
     "every size of all_gather float holds less than 16 B per rank for 4 ranks"),
    (["alltoall,reduce_scatter", "-b", "1", "-e", "60", "-d", "int8", "--np", "4"],
     "every size of alltoall int8 holds less than 16 B per rank for 4 ranks: nothing to measure"),
    (["all_reduce", "-b", "1", "-e", "7", "-f", "1", "-i", "2", "-d", "double", "--np", "2"],
     "every size of all_reduce double holds less than one element (8 B) per rank"),
])
def test_a_sweep_with_nothing_to_measure_is_refused_before_any_rank_starts(capsys, db, args, words):
    from clusterbench.store import Store

    code, out, err = cli(capsys, "coll", *args, "-n", "1", "-w", "0", "--db", db)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("clusterbench: error: ") and words in err, err
    with Store.open(db) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize("argv", [
    ["coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--tag", "a=b", "--tag", "a=c"],
    ["import", "-", "--tag", "a=b", "--tag", "a= c"],
    ["results", "tag", "1", "a=b", "a=c"],
], ids=["coll", "import", "results-tag"])
def test_every_command_refuses_a_tag_key_with_two_values(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--db", str(tmp_path / "t.db")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "given twice with different values" in err and "Traceback" not in err
    assert not (tmp_path / "t.db").exists()   # refused before anything ran or was opened


def test_the_engine_is_checked_with_the_rest_of_a_parsed_line():
    """A sweep's test or a qualify step checks a coll line as the command does (cli/argv_check.py)."""
    from clusterbench.cli.commands import coll

    params = {"op": "all", "minbytes": "8", "maxbytes": "1M", "stepfactor": None, "stepbytes": None, "iters": 20,
              "warmup_iters": 5, "check": 1, "datatype": "uint32,uint64", "redop": "sum", "root": 0, "average": 1,
              "cycles": 1, "graph": 0, "engine": "nccl"}
    coll.check_params(params)
    with pytest.raises(UsageError, match="unknown engine 'gloo'"):
        coll.check_params({**params, "engine": "gloo"})
