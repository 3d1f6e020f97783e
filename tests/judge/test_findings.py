"""Tests of clusterbench.judge.findings: everything a report shows, gathered once."""


from synthetic_runs import _fill

from clusterbench.judge import findings
from clusterbench.judge.findings import Group, gather
from clusterbench.judge.select import load_runs
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def test_reasons_for_untestable_rows_tell_few_values_from_infinite_ones():
    from clusterbench.judge.compare import compare
    from clusterbench.judge.findings import Findings, Group
    from clusterbench.judge.select import Row

    def rows(values, bench, start):
        return [Row(Run("coll", id=start + i), Measurement(bench, "bandwidth", v, "GB/s", {"kernel": "Copy"}))
                for i, v in enumerate(values)]

    a = rows([100.0, 101.0, 99.0], "stream", 1) + rows([5.0], "transfer", 1)
    b = rows([100.0, float("inf"), 99.0], "stream", 10) + rows([5.0, 5.1, 4.9], "transfer", 10)
    f = Findings([Group("a", []), Group("b", [])], comparisons=compare(a, b))
    reasons = f.verdict().reasons
    assert "not enough repetitions to judge 1 row(s) (n=1 vs 3; a test needs 2 per side): nothing measured " \
           "was noisy" in reasons
    assert "1 row(s) not tested: a value, or the difference of the means, is not finite" in reasons


def test_a_groups_rows_are_made_once_and_follow_its_runs(tmp_path, monkeypatch):
    db = str(tmp_path / "runs.db")
    _fill(db, 6)
    made = []
    real = findings.rows_of

    def counted(runs):
        made.append(1)
        return real(runs)

    monkeypatch.setattr(findings, "rows_of", counted)
    with Store.open(db) as s:
        groups = [Group(sel, load_runs(s, [sel])) for sel in ("grp=a", "grp=b")]
    f = gather(groups)
    for _ in range(5):
        assert len(f.all_rows) == sum(len(ms) for g in groups for _, ms in g.runs)
    assert len(made) == 2
    # a caller changing a group's runs (or the list it got) sees the rows follow
    rows = groups[0].rows
    rows.clear()
    assert len(groups[0].rows) == sum(len(ms) for _, ms in groups[0].runs)
    _, ms = groups[0].runs[0]
    ms.append(Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8}))
    assert groups[0].rows[len(ms) - 1].m.value == 1.0
    groups[0].runs.pop()
    assert len(groups[0].rows) == sum(len(ms) for _, ms in groups[0].runs)


def _seed_findings(tmp_path, **extra):
    from judge_helpers import save_seed_logs

    from clusterbench.judge.profiles import load_profile

    db = save_seed_logs(str(tmp_path / "seed.db"))
    with Store.open(db) as store:
        runs = load_runs(store, ["seed=mi300x"])
    return gather([Group("seed", runs)], profile=load_profile("amd-mi300x-oem"), **extra)


def test_the_verdict_names_every_failing_criterion_with_its_margin(tmp_path):
    # before: "FAIL: validation against amd-mi300x-oem: 17 pass, 1 fail, ..." and nothing on what failed
    f = _seed_findings(tmp_path)
    v = f.verdict()
    failed = [o for o in f.outcomes if o.status == "fail"]
    assert v.status == "FAIL" and len(failed) == 1 and len(v.failures) == 1
    assert v.failures[0] == ("TransferBench config Test 2 (DMA G0->G1): 48.35 GB/s, needs >= 48.4 GB/s: "
                             "-0.051 GB/s (-0.1%)")
    # the reasons stay the counts: the --json `reasons` and the page's list are what they were
    assert v.reasons == ["validation against amd-mi300x-oem: 17 pass, 1 fail, 1 skipped, 0 error"]


def test_the_degraded_search_over_two_devices_is_skipped_not_clean(tmp_path):
    f = _seed_findings(tmp_path)
    assert f.degraded == [] and f.degraded_scan is not None and f.degraded_scan.skipped
    assert f.noise_rows > 0   # BabelStream's min/max/avg: the noise check had rows to read


def test_noise_inside_runs_leaves_a_passed_validation_passed():
    """qualify printed "NOISY: ..." from its report, then "PASS": a pass despite noise is a pass
    (noise makes values worse, not better); without a judged criterion noise is the verdict."""
    from clusterbench.judge.findings import Findings
    from clusterbench.judge.noise import SPREAD, NoiseWarning
    from clusterbench.judge.profiles import Criterion, Profile
    from clusterbench.judge.validate import Outcome

    crit = Criterion(name="triad", benchmark="stream", metric="bandwidth", op=">=", value=1.0)
    warning = NoiseWarning("stream", SPREAD, 2, 3, "kernel=Triad: CV 13%")
    passed = Findings([Group("g", [])], profile=Profile("p", [crit]), outcomes=[Outcome(crit, "pass", 2.0)],
                      warnings=[(1, warning)])
    v = passed.verdict()
    assert v.status == "PASS" and "1 noise warning(s) inside runs: passed all the same" in v.reasons
    assert Findings([Group("g", [])], warnings=[(1, warning)]).verdict().status == "NOISY"


def test_a_run_of_a_repeat_is_not_advised_to_be_repeated():
    from paths import DATA

    from clusterbench.ingest import parse_text

    busy = DATA / "golden" / "busy-2core-run-suite.jsonl"
    (imported,) = parse_text(busy.read_text(), name=busy.name)
    run, ms = imported.run, imported.measurements
    assert any("--repeat" in w.text for _, w in gather([Group("g", [(run, ms)])]).warnings)
    run.tags["repeat_group"] = "g1"
    f = gather([Group("g", [(run, ms)])])
    assert f.warnings and not any("--repeat" in w.text for _, w in f.warnings)
