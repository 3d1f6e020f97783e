"""A NUL character (\\x00) in a run's text, on SQLite and on a real PostgreSQL server.

PostgreSQL's text columns cannot hold a NUL, SQLite's can; both backends now behave the same:
text stored as JSON (hosts, errors, meta, metric names, params) keeps its NUL, escaped, on both;
text stored as it is (tags, the run's benchmark, source, times, status, what it measured,
telemetry labels) is refused on both with one line naming the field, exit 2; and a selector
holding a NUL matches no run instead of failing with "cannot read results database"."""

from __future__ import annotations

import json
import sqlite3

import pytest
from judge_helpers import run_cli

from clusterbench.errors import UsageError
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store

NUL = "a\x00b"


def _run(**kw) -> Run:
    return Run(**{"benchmark": "coll", "hosts": ["h1"], "ranks": 1, "tags": {"env": "x"}, **kw})


def _m(**kw) -> Measurement:
    return Measurement(**{"benchmark": "all_reduce", "metric": "busbw", "value": 1.5, "unit": "GB/s",
                          "params": {"bytes": 8, "placement": "out"}, **kw})


def _sample(**kw) -> TelemetrySample:
    return TelemetrySample(**{"t": 0.0, "metric": "power", "value": 300.0, "unit": "W", "host": "h1",
                              "device": "0", **kw})


@pytest.mark.parametrize("run, m, sample, words", [
    (_run(tags={"k": NUL}), _m(), _sample(), "tag 'k' holds a NUL character"),
    (_run(tags={NUL: "v"}), _m(), _sample(), "tag name 'a\\x00b' holds a NUL character"),
    (_run(benchmark=NUL), _m(), _sample(), "run benchmark 'a\\x00b' holds a NUL character"),
    (_run(source=NUL), _m(), _sample(), "run source 'a\\x00b' holds a NUL character"),
    (_run(started_at="2026-01-01T00:00:00Z\x00"), _m(), _sample(), "run started_at"),
    (_run(), _m(benchmark=NUL), _sample(), "benchmark 'a\\x00b' holds a NUL character"),
    (_run(), _m(), _sample(host=NUL), "telemetry host 'a\\x00b' holds a NUL character"),
])
def test_raw_text_with_nul_is_refused_on_both_backends(any_db, run, m, sample, words):
    with Store.open(any_db) as s:
        with pytest.raises(UsageError, match=words.replace("\\", "\\\\")) as e:
            s.save_run(run, [m], [sample])
        assert "\n" not in str(e.value) and "\x00" not in str(e.value)
        assert s.list_runs() == []   # nothing of it stored
        # the store is usable after the refusal, in and out of a transaction
        with s.transaction():
            with pytest.raises(UsageError):
                s.save_run(run, [m], [sample])
            rid = s.save_run(_run(), [_m()])
        assert [r.id for r in s.list_runs()] == [rid]
        assert s.measurements(rid) == [_m()]


@pytest.mark.parametrize("run, m", [
    (_run(hosts=[NUL]), _m()),
    (_run(errors=[f"rank 3: {NUL}"]), _m()),
    (_run(meta={"note": NUL}), _m()),
    (_run(), _m(metric=NUL, unit=NUL, params={"p": NUL})),
])
def test_text_stored_as_json_keeps_its_nul_on_both_backends(any_db, run, m):
    with Store.open(any_db) as s:
        rid = s.save_run(run, [m])
        back = s.get_run(rid)
        assert (back.hosts, back.errors, back.meta) == (run.hosts, run.errors, run.meta)
        assert s.measurements(rid) == [m]
    rc, out, err = run_cli("results", "show", rid, "--db", any_db)
    assert rc == 0 and "\x00" not in out, err   # printed as an escape


def test_tagging_a_run_with_nul_is_refused(any_db):
    with Store.open(any_db) as s:
        s.save_run(_run(), [_m()])
        with pytest.raises(UsageError, match="tag 'k' holds a NUL character"):
            s.tag_runs([1], {"k": NUL})
    # the command line refuses every control character in a tag before it reaches the store
    rc, out, err = run_cli("results", "tag", "1", f"k={NUL}", "--db", any_db)
    assert rc == 2 and err.count("\n") == 1 and "control character" in err, err
    with Store.open(any_db) as s:
        assert s.get_run(1).tags == {"env": "x"}


@pytest.mark.parametrize("selector", [f'k="{NUL}"', f"k={NUL}", f'"{NUL}"=v', f"bench:{NUL}"])
def test_selector_with_nul_matches_no_run(any_db, selector):
    with Store.open(any_db) as s:
        s.save_run(_run(), [_m()])
    for argv in (["results", "show", selector], ["results", "export", "--csv", selector],
                 ["compare", selector, "1"]):
        rc, out, err = run_cli(*argv, "--db", any_db)
        assert rc == 2 and err.count("\n") == 1, (argv, err)
        assert "matches no run" in err and "cannot read" not in err, (argv, err)
    with Store.open(any_db) as s:
        assert s.runs_with_tags({"k": NUL}) == []
        assert s.list_runs(benchmark=NUL) == []


def test_import_of_a_json_line_with_a_nul_tag_is_refused(any_db, tmp_path):
    lines = list(run_lines(_run(id=7), [_m()]))
    run_line = json.loads(lines[-1])
    run_line["tags"] = {"k": NUL}
    log = tmp_path / "pod.log"
    log.write_text("\n".join([*lines[:-1], json.dumps(run_line)]) + "\n")
    rc, out, err = run_cli("import", log, "--db", any_db)
    assert rc == 2 and "tag 'k' holds a NUL character" in err, (out, err)
    assert "cannot read" not in err and "cannot write" not in err and "Traceback" not in err
    with Store.open(any_db) as s:
        assert s.list_runs() == []


def test_copy_of_an_old_run_with_a_nul_tag_names_the_run(any_db, tmp_path):
    """An SQLite file may hold such a tag from before it was refused: it is still found there by
    its selector, and copying it says which run cannot go."""
    old = str(tmp_path / "old.db")
    with Store.open(old) as s:
        s.save_run(_run(), [_m()])
        rid = s.save_run(_run(), [_m()])
    con = sqlite3.connect(old)
    con.execute("INSERT INTO run_tags (run_id, key, value) VALUES (?, 'k', ?)", (rid, NUL))
    con.commit()
    con.close()
    rc, out, err = run_cli("results", "export", "--csv", f'k="{NUL}"', "--db", old)
    assert rc == 0 and out.count("\n") == 2, err
    rc, out, err = run_cli("results", "copy", "--from", old, "--to", any_db)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"run {rid} of" in err and "tag 'k' holds a NUL character" in err, err
