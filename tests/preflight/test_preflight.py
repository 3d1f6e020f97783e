"""Tests of clusterbench.preflight: preflight."""

import json

from host_doubles import BROKEN

from clusterbench.preflight import Expectations, exit_code, overall, run_checks
from clusterbench.preflight import checks as c


def test_broken_tree_gives_na_or_warnings(tmp_path):
    results = run_checks(Expectations(), root=BROKEN)
    assert {r.status for r in results} <= {c.NA, c.WARNING, c.OK}
    assert exit_code(results) == 0
    assert run_checks(Expectations(), root=tmp_path)  # an empty root: all not-applicable, no crash
    assert overall(run_checks(Expectations(), root=tmp_path)) == c.NA


def test_before_run_records_and_never_raises(monkeypatch):
    import clusterbench.preflight as pf

    said = []
    meta = pf.before_run(say=said.append)
    assert meta["preflight"]["status"] in c.STATUSES and meta["preflight"]["host"]
    assert said[0].startswith("# preflight on ")
    json.dumps(meta)

    def broken(*_a, **_k):
        raise OSError("sysfs vanished")

    monkeypatch.setattr(pf, "run_checks", broken)
    meta = pf.before_run(say=said.append)
    assert meta["preflight"]["status"] == "error" and "sysfs vanished" in meta["preflight"]["error"]


def test_before_run_only_on_rank0(monkeypatch):
    import clusterbench.preflight as pf

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert pf.before_run(say=lambda _t: None) is None
