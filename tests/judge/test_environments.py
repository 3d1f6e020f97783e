"""judge.environments: the inventories stored with runs (env show) and their differences
(env diff), read from the database."""

import pytest

from clusterbench.errors import UsageError
from clusterbench.judge.environments import (
    EnvDiff,
    HostEnvironment,
    NoHosts,
    environment_diffs,
    stored_environments,
)
from clusterbench.records import Run
from clusterbench.store import Store


def _inv(host, driver):
    return {"host": host, "drivers": {"nvidia": driver}, "env": {"NCCL_IB_HCA": "mlx5_0"}}


def _save(db, hosts, inventories=None, versions=None):
    meta = {"inventory": inventories} if inventories is not None else {}
    with Store.open(db) as s:
        return s.save_run(Run("coll", hosts=list(hosts), meta=meta, versions=dict(versions or {})), [])


@pytest.fixture
def runs(db):
    _save(db, ["a", "b"], {"a": _inv("a", "550.1"), "b": _inv("b", "550.2")})   # 1
    _save(db, [], None)                                                      # 2: names no host
    _save(db, ["c"], None, {"torch": "2.5"})                                 # 3: no inventory stored
    return db


def test_each_host_of_each_run_in_order(runs):
    shown = list(stored_environments(runs, ["1-3"]))
    assert [(type(x).__name__, x.run.id, getattr(x, "host", None)) for x in shown] == [
        ("HostEnvironment", 1, "a"), ("HostEnvironment", 1, "b"), ("NoHosts", 2, None),
        ("HostEnvironment", 3, "c")]
    assert isinstance(shown[0], HostEnvironment) and shown[0].full and shown[0].inventory["drivers"]["nvidia"] == "550.1"
    assert isinstance(shown[2], NoHosts)
    last = shown[3]
    assert isinstance(last, HostEnvironment) and not last.full and last.inventory["versions"] == {"torch": "2.5"}


def test_a_host_the_run_lacks_is_an_error_after_the_runs_before(runs):
    shown = stored_environments(runs, ["1", "3"], host="a")
    first = next(shown)
    assert isinstance(first, HostEnvironment) and first.host == "a"
    with pytest.raises(UsageError, match=r"run 3 has no host 'a' \(hosts: c\)"):
        next(shown)


def test_hosts_of_one_run_against_the_first(runs):
    [d] = list(environment_diffs(runs, "1", None))
    assert isinstance(d, EnvDiff) and d.left == "run 1 (a)" and d.right == "run 1 (b)"
    assert [(x.key, x.a, x.b) for x in d.differences] == [("drivers.nvidia", "550.1", "550.2")]
    [same] = list(environment_diffs(runs, "1", None, ["a", "a"]))
    assert same.differences == []


def test_two_runs_and_their_notes(runs):
    [d] = list(environment_diffs(runs, "1", "3", ["a", "c"]))
    assert d.right == "run 3 (c, versions and env only: no inventory stored)"
    with pytest.raises(UsageError, match="has 1 host"):
        list(environment_diffs(runs, "3", None))
    with pytest.raises(UsageError, match="give RUN_B"):
        list(environment_diffs(runs, "local", None))
    with pytest.raises(UsageError, match=r"selector '1-3' matches 3 runs \(1, 2, 3\)"):
        list(environment_diffs(runs, "1-3", "1"))
