"""Tests of clusterbench.launch.torchrun: torchrun (PyTorch elastic) across nodes."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import Spec


def test_ipv6_rendezvous_endpoint_in_brackets():
    """A sweep over IPv6 hosts wrote fe80::1:29400, an endpoint torchrun cannot split."""
    spec = Spec(nodes=2, procs_per_node=1, command=["net"])
    assert tr.endpoint_of("fe80::1", 29400) == "[fe80::1]:29400" and tr.endpoint_of("h1", 5) == "h1:5"
    assert "--rdzv_endpoint=[fe80::1]:29400" in tr.torchrun_argv(spec, tr.endpoint_of("fe80::1", 29400))
    with pytest.raises(UsageError, match=r"in brackets, \[fe80::1\]:29400"):
        tr.torchrun_argv(spec, "fe80::1:29400")


def test_diagnose_names_missing_and_dead_hosts():
    r = tr.HostsResult(["a", "b", "c"], {"a": 1, "b": 1, "c": None}, "",
                       {"a": ["torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"],
                        "b": ["RendezvousTimeoutError"], "c": []}, killed=["c"])
    assert tr.diagnose(r, "a:1", 5) == "rendezvous at a:1 timed out after 5 s: c never joined (joined: a, b)"
    r = tr.HostsResult(["a", "b"], {"a": 1, "b": -9}, "", {"a": ["x"], "b": []})
    assert tr.diagnose(r, "a:1", 5) == "host b died (SIGKILL) before the run finished"
    r = tr.HostsResult(["a", "b"], {"a": 0, "b": 255}, "", {"a": [], "b": ["ssh: connect to host b: No route"]})
    assert tr.diagnose(r, "a:1", 5).startswith("host b is unreachable: ssh: connect")
    assert tr.diagnose(tr.HostsResult(["a"], {"a": 0}, "", {"a": []}), "a:1", 5) is None
