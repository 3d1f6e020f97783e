"""Tests of clusterbench.launch.dstack: a dstack distributed task (``type."""

from __future__ import annotations

import shlex

import jsonschema
import pytest
from k8s_schemas import DSTACK_SCHEMA
from launch_rows import EVIL

from clusterbench.errors import UsageError
from clusterbench.launch import dstack
from clusterbench.launch.common import Spec


def test_dstack_task_like_the_seed():
    spec = Spec(nodes=2, gpus_per_node=8, procs_per_node=8, env={"NCCL_IB_GID_INDEX": "3"},
                command=["coll", "all_reduce", "--tag", EVIL])
    doc = dstack.task(spec, gpu="MI300X", setup=("pip install clusterbench",))
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["resources"]["gpu"] == "MI300X:8" and doc["nodes"] == 2
    run = doc["commands"][-1]
    assert "--node_rank=$DSTACK_NODE_RANK" in run and "--master_addr=$DSTACK_MASTER_NODE_IP" in run
    assert shlex.split(run)[-1] == EVIL   # the shell dstack runs sees the tag as one word
    with pytest.raises(UsageError):
        dstack.task(spec, startup_order="whenever")
