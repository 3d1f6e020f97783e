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
