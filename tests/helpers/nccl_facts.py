"""What nccl-tests' doc/PERFORMANCE.md defines, written out here rather than read from the spec
table, so tests check the table against an independent copy."""

from __future__ import annotations

# nccl-tests' bus-bandwidth factors, written out here rather than read from the spec table
FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}

PER_RANK = {"all_gather", "reduce_scatter", "alltoall"}   # size column = count x n x sizeof

WIDTH = {"half": 2, "int8": 1, "float": 4}

# nccl-tests' src/common.cu: the operators of -o all and the types of -d all, in its order
NCCL_TESTS_REDOPS = ("sum", "prod", "max", "min", "avg")
NCCL_TESTS_TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16")
