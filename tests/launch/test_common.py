"""Tests of clusterbench.launch.common: what every launcher shares."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.launch.common import bench_command, parse_env, parse_hosts


@pytest.mark.parametrize("bad", ["a;touch /tmp/x", "$(id)", "a b;c", "`id`", "a|b", "-oProxyCommand=x"])
def test_hosts_with_metacharacters_are_rejected(bad):
    with pytest.raises(UsageError):
        parse_hosts(bad)


def test_hostlist_expansion():
    assert parse_hosts("gpu[01-03],login1") == ["gpu01", "gpu02", "gpu03", "login1"]


def test_env_and_command_validation():
    with pytest.raises(UsageError):
        parse_env(["1BAD=x"])
    with pytest.raises(UsageError):
        parse_env(["NOVALUE"])
    with pytest.raises(UsageError):
        bench_command([])
    assert bench_command(["clusterbench", "net"]) == ["net"]
