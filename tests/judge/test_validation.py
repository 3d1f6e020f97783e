"""judge.validation: validate's judgement of stored runs and qualify's judgement of a tagged
group, each reading the database itself."""

import pytest
from small_fleet import save_fleet

from clusterbench.errors import UsageError
from clusterbench.judge import blame as blame_module
from clusterbench.judge import validate as validate_module
from clusterbench.judge import validation as validation_module
from clusterbench.judge.baseline import create_baseline, read_known_good
from clusterbench.judge.hardware import applies
from clusterbench.judge.profiles import Criterion, Profile
from clusterbench.judge.select import rows_of, select
from clusterbench.judge.validation import judge_group, validate_runs
from clusterbench.records import INTERRUPTED, WARNINGS, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import read_runs

PROFILE = Profile("lab", (Criterion("busbw", "all_reduce", "busbw", {"bytes": 1 << 30}, op=">=", value=100.0,
                                    unit="GB/s"),))


def _save(db, busbw, status="complete", tags=None, benchmark="coll", meta=None, hosts=("n1", "n2")):
    ms = [Measurement("all_reduce", m, busbw * f, "GB/s",
                      {"bytes": 1 << 30, "placement": "out", "dtype": "float", "redop": "sum", "root": -1})
          for m, f in (("busbw", 1.0), ("algbw", 0.5))]
    run = Run(benchmark, hosts=list(hosts), ranks=2, status=status, tags=dict(tags or {}), meta=dict(meta or {}))
    with Store.open(db) as s:
        return s.save_run(run, ms if benchmark != "preflight" else [])


def test_passing_and_failing_runs_give_the_exit_code(db):
    _save(db, 150.0)
    v = validate_runs(db, PROFILE, ["last"])
    assert v.run_ids == [1] and [o.status for o in v.outcomes] == ["pass"] and v.exit_code == 0
    assert v.counts() == {"pass": 1, "fail": 0, "skipped": 0, "error": 0}
    _save(db, 50.0, hosts=("n3",))
    bad = validate_runs(db, PROFILE, ["last"])
    assert bad.exit_code == 1 and bad.nodes().problems.keys() == {"n3"}


def test_nothing_checked_is_exit_2(db):
    other = Profile("other", (Criterion("bw", "stream", "bandwidth", op=">=", value=1.0, unit="GB/s"),))
    _save(db, 150.0)
    v = validate_runs(db, other, ["last"])
    assert v.nothing_checked and v.exit_code == 2


def test_link_efficiency_warnings_and_interrupted_runs(db):
    _save(db, 150.0, status=INTERRUPTED, meta={WARNINGS: ["rounded values"]})
    v = validate_runs(db, PROFILE, ["1"], link_speed="100Gbps")
    [(run, e)] = v.best()
    assert run.id == 1 and e.benchmark == "all_reduce" and e.nodes == 2
    assert v.warnings() == [(1, "rounded values")]
    assert v.partial is not None and "run(s) 1 was interrupted" in v.partial
    assert validate_runs(db, PROFILE, ["1"]).efficiencies == []   # no link speed given or tagged


def test_a_selector_matching_nothing_is_a_usage_error(db):
    _save(db, 150.0)
    with pytest.raises(UsageError, match="matches no run"):
        validate_runs(db, PROFILE, ["team=none"])


def test_judge_group_leaves_out_the_health_check_and_other_groups(db):
    _save(db, 0.0, benchmark="preflight", tags={"qualify": "g1"})
    _save(db, 150.0, tags={"qualify": "g1"})
    _save(db, 10.0, tags={"qualify": "g2"})
    g = judge_group(db, PROFILE, {"qualify": "g1"})
    assert g.run_ids == [2] and [o.status for o in g.outcomes] == ["pass"] and len(g.rows) == 2
    empty = judge_group(db, PROFILE, {"qualify": "g3"})
    assert empty.run_ids == [] and [o.status for o in empty.outcomes] == ["skipped"]


class _EveryRow:
    """The selection validate made before ``Selection``: ``select`` over every row, per criterion."""

    def __init__(self, rows):
        self.rows = list(rows)

    def of_metric(self, benchmark, metric):
        return [r for r in self.rows if (r.m.benchmark, r.m.metric) == (benchmark, metric)]

    def select(self, benchmark, metric, params, absent=()):
        return select(self.rows, benchmark, metric, params, absent)


def test_a_fleet_is_judged_as_by_every_row_against_each_criterion(db, monkeypatch):
    """Shared params, ``Selection`` and ``applies`` asked once per device label give the
    outcomes, node findings and peaks that private records, ``select`` over every row and
    ``applies`` asked of every row give: on several nights of hosts with a slow host, a host
    on other GPUs than the profile's and a failed run."""
    save_fleet(db, nights=3)
    good = read_known_good(db, ["1", "3"])   # night 0 of two H100 hosts: the profile's hardware
    profile = create_baseline(rows_of(good.loaded), name="h100", devices=good.devices).profile
    assert profile.hardware is not None and len(profile.hardware.devices) == 1

    def judged():
        v = validate_runs(db, profile, ["5-12"])
        return ([o.to_dict() for o in v.outcomes], v.nodes(), [(label, vars(d)) for label, d in v.peaks],
                v.run_ids, v.exit_code)

    new = judged()
    monkeypatch.setattr(validate_module, "Selection", _EveryRow)
    monkeypatch.setattr(blame_module, "Selection", _EveryRow)
    monkeypatch.setattr(validate_module, "_applying",
                        lambda hw, rows: [r for r in rows if applies(hw, r.run, r.m)])
    monkeypatch.setattr(validation_module, "read_runs",
                        lambda db, selectors, since, shared=False: read_runs(db, selectors, since))
    old = judged()
    assert new == old
    outcomes = new[0]
    assert {o["status"] for o in outcomes} >= {"pass", "fail"} and new[1].problems
    assert any("on other hardware not judged" in (o["detail"] or "") for o in outcomes)
