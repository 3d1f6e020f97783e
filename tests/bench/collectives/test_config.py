"""Tests of clusterbench.bench.collectives.config."""

from __future__ import annotations

import pytest
from nccl_facts import NCCL_TESTS_REDOPS, NCCL_TESTS_TYPES

from clusterbench.bench.collectives.config import CollConfig
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import OPS


def test_build_config_defaults_and_suffixes():
    c = build_config("all_reduce", minbytes="1K", maxbytes="1M")
    assert (c.minbytes, c.maxbytes, c.stepfactor, c.check, c.average) == (1024, 1 << 20, 2, 1, 1)
    assert build_config("all", datatype="all").ops == OPS
    assert build_config("allreduce_perf").ops == ("all_reduce",)
    # nccl-tests' -o all and -d all: its operators and its ten types in its order (unsigned 32/64-bit included)
    assert build_config("all_reduce", redop="all").redops == NCCL_TESTS_REDOPS
    assert build_config("all_reduce", datatype="all").dtypes == NCCL_TESTS_TYPES
    assert build_config("sendrecv", datatype="uint32,uint64").dtypes == ("uint32", "uint64")
    assert build_config("all_reduce").engine == "torch" and build_config("all", engine="nccl").engine == "nccl"
    # -i alone means an additive sweep, as with nccl-tests' default -f 1
    c = build_config("all_reduce", minbytes="1K", maxbytes="4K", stepbytes="1K")
    assert c.sizes() == [1024, 2048, 3072, 4096]


@pytest.mark.parametrize("kwargs,words", [
    ({"minbytes": "12Q"}, "12Q"),
    ({"minbytes": "1M", "maxbytes": "1K"}, "larger than"),
    ({"datatype": "float128"}, "unknown datatype"),
    ({"redop": "xor"}, "unknown reduction"),
    ({"average": 7}, "average"),
    ({"engine": "mpi"}, "unknown engine 'mpi': expected torch or nccl"),
    ({"iters": 0}, "iters"),
    ({"stepfactor": 1, "stepbytes": "0"}, "stepbytes"),
    ({"minbytes": "0"}, "never grows"),
    ({"minbytes": "1", "maxbytes": "1G", "stepfactor": 1, "stepbytes": "1"}, "more than"),
])
def test_bad_config_is_a_usage_error(kwargs, words):
    with pytest.raises(UsageError, match=words):
        build_config("all_reduce", **kwargs)


def test_unknown_op():
    with pytest.raises(UsageError, match="unknown collective 'foo'"):
        build_config("foo")


@pytest.mark.parametrize("typed,meant", [("all_reduc", "all_reduce"), ("allgathr", "all_gather"),
                                         ("sendrcv", "sendrecv"), ("brodcast", "broadcast")])
def test_a_mistyped_op_gets_the_op_it_is_closest_to(typed, meant):
    with pytest.raises(UsageError) as e:
        build_config(f"alltoall,{typed}")
    assert str(e.value).startswith(f"unknown collective {typed!r}: expected ")
    assert str(e.value).endswith(f". Did you mean {meant!r}?")   # click's words for a command


def test_config_is_picklable_for_ranks():
    import pickle

    c = CollConfig(ops=("all_reduce",))
    assert pickle.loads(pickle.dumps(c)) == c
