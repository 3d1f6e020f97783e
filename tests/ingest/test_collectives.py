"""Tests of clusterbench.ingest.collectives: what a log's numbers say about its collective."""

from clusterbench.families.collectives.spec import op_in_text as op_from_filename
from clusterbench.families.collectives.spec import op_name as normalize_op
from clusterbench.ingest.collectives import infer_op, ranks_from_ratio
from clusterbench.ingest.nccl_tests import nccl_version_from_code


def test_collective_names_and_factors():
    assert normalize_op("all_reduce_perf_mpi") == "all_reduce" and normalize_op("AllReduce") == "all_reduce"
    assert normalize_op("/opt/rccl-tests/build/reduce_scatter_perf") == "reduce_scatter"
    assert normalize_op("bogus") is None
    assert op_from_filename("logs/nccl_reducescatter.log") == "reduce_scatter"
    assert op_from_filename("gather.txt") == "gather" and op_from_filename("x_allgather.txt") == "all_gather"
    assert ranks_from_ratio("all_reduce", 182.30, 353.20) == 32
    assert ranks_from_ratio("all_reduce", 0.5, 0.88) is None  # too imprecise to tell
    assert ranks_from_ratio("broadcast", 10.0, 10.0) is None
    assert infer_op(True, -1, 1.75, 8) == "all_reduce" and infer_op(True, -1, 0.875, 8) == "reduce_scatter"
    assert infer_op(False, 0, 1.0, None) == "broadcast" and infer_op(False, -1, 0.875, 8) is None
    assert nccl_version_from_code(22907) == "2.29.7" and nccl_version_from_code(2708) == "2.7.8"
