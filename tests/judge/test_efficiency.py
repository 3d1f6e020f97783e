"""judge.efficiency.stored_link_efficiency: theory --run's efficiency of stored runs over
their links, read from the database."""

import pytest

from clusterbench.errors import UsageError
from clusterbench.judge.efficiency import stored_link_efficiency
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _coll(db, hosts, tags=None):
    ms = [Measurement("all_reduce", "algbw", 10.0, "GB/s", {"bytes": 1 << 30, "placement": "out", "ranks": 4})]
    with Store.open(db) as s:
        return s.save_run(Run("coll", hosts=list(hosts), ranks=4, tags=dict(tags or {})), ms)


def test_each_run_over_the_link_given_its_tag_or_the_default(db):
    _coll(db, ["a", "b"])
    _coll(db, ["a", "b"], {"link_speed": "200Gbps"})
    got = stored_link_efficiency(db, ["1", "2"], None, None, "100Gbps")
    assert [(run_id, link) for run_id, link, _ in got.judged] == [(1, "100Gbps"), (2, "200Gbps")]
    assert got.judged[0][2][0].nodes == 2 and got.unknown == []
    forced = stored_link_efficiency(db, ["2"], None, "50Gbps", "100Gbps")
    assert [link for _, link, _ in forced.judged] == ["50Gbps"]


def test_runs_on_one_host_say_why_they_were_not_judged(db):
    _coll(db, ["a"])
    _coll(db, [])
    got = stored_link_efficiency(db, ["1", "2"], None, None, "100Gbps")
    assert got.judged == []
    assert got.unknown == ["run 1 ran on 1 host",
                           "run 2 names no hosts (an imported log?): give its node count with "
                           "`clusterbench results tag 2 nodes=N`"]
    assert str(got.nothing_judged()) == "no collective algbw rows on 2 or more hosts: run 1 ran on 1 host"


def test_a_tag_that_is_no_link_speed_names_the_run(db):
    _coll(db, ["a", "b"], {"link_speed": "fast"})
    with pytest.raises(UsageError, match="^run 1: link_speed tag: "):
        stored_link_efficiency(db, ["1"], None, None, "100Gbps")
