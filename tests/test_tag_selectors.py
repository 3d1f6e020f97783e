"""Every tag a run can hold is selectable, and ``--tag``/``results tag`` refuse tags nobody could
use: the quoted form of the selector grammar (``team="a,b"``, ``"bench:x"=1``), ``tag_term``
which writes it, and the one-line refusals of empty, oversized, non-UTF-8 and control-character
tags. Stores are SQLite and a real PostgreSQL (``any_db``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from judge_helpers import run_cli

from clusterbench.cli.options import MAX_TAG_KEY, MAX_TAG_VALUE, parse_tags
from clusterbench.errors import UsageError
from clusterbench.records import Run
from clusterbench.store import Store
from clusterbench.store.selectors import parse_selector, tag_term

NCCL_LOG = Path(__file__).parent / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"

# Tags that collide with the grammar: its separator, '=', bench:, ranges, ids, last, quotes,
# backslashes, space at the ends, an empty key or value, control characters (an import keeps
# whatever its lines held).
AWKWARD = [
    ("team", "a,b"), ("bench:x", "1"), ("a=b", "c"), ("k", "x=y=z"), ("k", " v "), (" k ", "v"),
    ("", "empty key"), ("e", ""), ("", ""), ("last", "1"), ("last~2", "x"), ("12", "x"), ("3..7", "y"),
    ("3-7", "1..2"), ("q", '"quoted"'), ("q", 'say "hi"'), ("bs", "a\\b"), ("bs", "\\x41"), ("bs", "\\"),
    ("ctl\n", "a\rb\tc\x1b[2J"), ("bidi", "\u202eevil"), ("c1", "\x85\x9b"), ("sp", " "), ("u", "Größe µs"),
    ("colon:x", "a:b"), ("bench:", "bench:"), ("comma,key", ","), ('"', '"'), ("=", "="),
]


def test_tag_term_is_plain_for_plain_tags():
    assert tag_term("env", "prod") == "env=prod"
    assert tag_term("link_speed", "100Gbps") == "link_speed=100Gbps"
    assert tag_term("k", "a=b") == "k=a=b"          # '=' after the first one is the value's
    assert tag_term("last", "1") == "last=1"        # a term with '=' is never last, an id or a range
    assert tag_term("team", "a,b") == 'team="a,b"'
    assert tag_term("bench:x", "1") == '"bench:x"=1'
    assert tag_term("", "v") == '""=v'
    assert tag_term("k", " v ") == 'k=" v "'
    assert tag_term("k", "a\nb") == 'k="a\\nb"'      # escaped as printable shows it: one line


@pytest.mark.parametrize("key, value", AWKWARD)
def test_tag_term_reads_back_as_exactly_that_tag(key, value):
    sel = parse_selector(tag_term(key, value))
    assert sel.tags == {key: value}
    assert not sel.ids and not sel.ranges and sel.last is None and not sel.benchmarks


def test_tag_terms_join_into_one_selector():
    """What ``results list`` prints in its tags column is itself a selector."""
    tags = dict(AWKWARD[:8])
    sel = parse_selector(",".join(tag_term(k, v) for k, v in tags.items()))
    assert sel.tags == tags
    sel = parse_selector(" , ".join([tag_term("team", "a,b"), "last~1", "bench:stream", "2..9"]))
    assert sel.tags == {"team": "a,b"} and sel.last == 1 and sel.ranges == ((2, 9),)
    assert sel.benchmarks[0].name == "stream"


def test_random_tags_round_trip():
    rng = random.Random(7)
    alphabet = ' ,="\\:.~-_benchlast0123\x00\n\t\x1b\u202e\x85éxuU'
    for _ in range(5000):
        k, v = ("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in "kv")
        assert parse_selector(tag_term(k, v)).tags == {k: v}, (k, v, tag_term(k, v))


@pytest.mark.parametrize("text, tags", [
    ('team="a,b"', {"team": "a,b"}),
    ('"bench:x"=1', {"bench:x": "1"}),
    ('"a=b"=c', {"a=b": "c"}),
    ('"" = "" ', {"": ""}),
    (' "k" = " v " , env=prod', {"k": " v ", "env": "prod"}),
    ('k="\\"\\\\\\n\\r\\t\\x41\\u00e9\\U0001F600"', {"k": '"\\\n\r\tAé\U0001F600'}),
    ('k=a"b', {"k": 'a"b'}),                    # a quote inside a bare value is a quote
    ('k=" a,b ",j=x', {"k": " a,b ", "j": "x"}),
    ("env=a,env=a", {"env": "a"}),
])
def test_quoted_terms(text, tags):
    assert parse_selector(text).tags == tags


def test_unquoted_selectors_mean_what_they_meant():
    assert parse_selector("bench:x=1").benchmarks[0].name == "x=1"   # bench:NAME takes the whole term
    assert parse_selector("env=a=b").tags == {"env": "a=b"}
    assert parse_selector(" env = prod ").tags == {"env": "prod"}
    assert parse_selector("3..7").ranges == ((3, 7),)


@pytest.mark.parametrize("text, msg", [
    ('k="abc', "is never closed"),
    ('"k"', "quoted KEY must be followed by =VALUE"),
    ('"k",3', "quoted KEY must be followed by =VALUE"),
    ('k="a"b', "text after a closing quote"),
    ('k="\\q"', "unknown escape"),
    ('k="\\x4"', "unknown escape"),
    ('k="\\ud800"', "is not a character"),
    ('k="\\U00110000"', "is not a character"),
    ("=x", "is not a run id"),
    ("env=a,env=b", "given twice with different values"),
])
def test_bad_quoted_selectors(text, msg):
    with pytest.raises(UsageError, match=msg) as e:
        parse_selector(text)
    assert "\n" not in str(e.value)


def _run(tags: dict[str, str]) -> Run:
    return Run(benchmark="all_reduce", source="clusterbench 0.1.0", started_at="2026-11-01T10:00:00.000Z",
               hosts=["h1"], tags=tags)


def test_every_stored_tag_selects_exactly_its_runs(any_db):
    """For each awkward tag, a run holding it and decoys holding its pieces (team=a and team=b
    for team="a,b", bench-looking and trimmed keys): the tag's term picks only the first."""
    with Store.open(any_db) as store:
        expect: dict[tuple[str, str], list[int]] = {}
        for key, value in AWKWARD:
            decoys = [{key.strip(): value.strip()}, {key: value + "x"}, {key + "x": value},
                      *({key: part} for part in value.split(","))]
            for tags in decoys:
                if tags != {key: value}:
                    store.save_run(_run(tags), [])
            rid = store.save_run(_run({key: value, "other": "1"}), [])
            expect.setdefault((key, value), []).append(rid)
        # PostgreSQL cannot hold NUL in text: neither backend stores such a tag, and its term
        # matches no run on both
        nul = ("k", "a\x00b")
        with pytest.raises(UsageError, match="tag 'k' holds a NUL character"):
            store.save_run(_run(dict([nul])), [])
        with pytest.raises(UsageError, match="matches no run"):
            store.select(tag_term(*nul))
        for (key, value), ids in expect.items():
            assert [r.id for r in store.select(tag_term(key, value))] == ids, (key, value)
            assert [r.tags[key] for r in store.select(tag_term(key, value))] == [value] * len(ids)


def _ids(out: str) -> list[int]:
    return [json.loads(line)["id"] for line in out.splitlines() if line.startswith('{"kind": "run"')]


def _run_line(tags: dict[str, str], run_id: int) -> str:
    return json.dumps({"kind": "run", "id": run_id, "benchmark": "all_reduce", "source": "clusterbench 0.1.0",
                       "command": ["clusterbench", "coll"], "started_at": "2026-11-01T10:00:00.000Z",
                       "ended_at": None, "status": "complete", "hosts": ["h1"], "ranks": 1, "devices": [],
                       "versions": {}, "env": {}, "tags": tags, "errors": [], "meta": {}})


def test_imported_tags_are_shown_as_the_selectors_that_pick_them(any_db, tmp_path):
    """clusterbench's own JSON lines bring back whatever tags they hold; results list prints each
    run's tags as a selector, and that selector, typed back, picks the run in every command."""
    awkward = dict(AWKWARD)   # one run: the last value of each key
    lines = [_run_line({"team": "a"}, 1), _run_line({"team": "b"}, 2), _run_line(awkward, 3)]
    log = tmp_path / "runs.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert run_cli("import", log, "--db", any_db)[0] == 0
    code, out, _ = run_cli("results", "list", "--db", any_db)
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("3 "))
    shown = row.split("  ")[-1].strip()     # the tags column
    assert parse_selector(shown).tags == awkward
    code, out, _ = run_cli("results", "show", shown, "--json", "--db", any_db)
    assert code == 0 and _ids(out) == [3]
    code, out, _ = run_cli("results", "show", 'team="a,b"', "--db", any_db)
    tags_line = next(line for line in out.splitlines() if line.startswith("# tags: "))
    assert code == 0 and parse_selector(tags_line[len("# tags: "):]).tags == awkward
    assert all(term in tags_line for term in ('team="a,b"', '"bench:x"=1', '"a=b"=c', 'bidi="\\u202eevil"'))
    code, out, _ = run_cli("results", "export", '"bench:x"=1', "--csv", "--db", any_db)
    assert code == 0
    assert run_cli("results", "tag", '"a=b"=c,team="a,b"', "seen=yes", "--db", any_db)[0] == 0
    code, out, _ = run_cli("results", "show", "seen=yes", "--json", "--db", any_db)
    assert _ids(out) == [3]
    code, out, err = run_cli("results", "show", "team=a,b", "--db", any_db)   # bare: team=a and b
    assert code == 2 and "'b' is not a run id" in err
    code, out, _ = run_cli("results", "delete", '""=,"bench:"=bench:', "--db", any_db)
    assert code == 0 and out == "deleted run 3\n"


def test_tag_with_grammar_characters_given_by_tag_option_is_selectable(tmp_path):
    db = str(tmp_path / "cb.db")
    assert run_cli("import", NCCL_LOG, "--db", db, "--tag", "team=a,b", "--tag", "bench:x=1",
                "--tag", "3..7=last")[0] == 0
    assert run_cli("import", NCCL_LOG, "--db", db, "--tag", "team=a", "--tag", "x=1")[0] == 0
    for selector in ('team="a,b"', '"bench:x"=1', "3..7=last", '"3..7"="last"'):
        code, out, err = run_cli("results", "show", selector, "--json", "--db", db)
        assert code == 0 and _ids(out) == [1], (selector, err)


# --tag and results tag: what no one could read, type or select is refused before anything is stored.
BAD_TAGS = [
    ("novalue", "expected KEY=VALUE"),
    ("=v", "expected KEY=VALUE"),
    ("  =v", "expected KEY=VALUE"),
    ("k=", "empty value"),
    ("k=   ", "empty value"),
    ("k=a\nb", "control character"),
    ("k=a\rb", "control character"),
    ("k=a\tb", "control character"),
    ("k=\x1b[2J", "control character"),
    ("k=\u202eevil", "control character"),
    ("k\x7f=v", "control character"),
    ("k=\x9b31m", "control character"),
    ("k=v\udcff", "not UTF-8 text"),
    ("k=" + "v" * (MAX_TAG_VALUE + 1), f"at most {MAX_TAG_VALUE}"),
    ("k=" + "v" * (1 << 20), f"at most {MAX_TAG_VALUE}"),
    ("k" * (MAX_TAG_KEY + 1) + "=v", f"at most {MAX_TAG_KEY}"),
]


@pytest.mark.parametrize("item, msg", BAD_TAGS, ids=lambda x: ascii(x)[:30])
def test_parse_tags_refuses(item, msg):
    with pytest.raises(UsageError, match=msg) as e:
        parse_tags([item])
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_parse_tags_keeps_what_selectors_can_quote():
    assert parse_tags([" k = v ", "team=a,b", "bench:x=1", "a=b=c", 'q="x"', "k2=" + "v" * MAX_TAG_VALUE]) == {
        "k": "v", "team": "a,b", "bench:x": "1", "a": "b=c", "q": '"x"', "k2": "v" * MAX_TAG_VALUE}


@pytest.mark.parametrize("item, msg", BAD_TAGS[::3] + BAD_TAGS[-3:-1], ids=lambda x: ascii(x)[:30])
def test_bad_tags_are_refused_by_every_command(tmp_path, item, msg):
    db = tmp_path / "cb.db"
    with Store.open(str(db)) as store:
        store.save_run(_run({"env": "a"}), [])
    for argv in (["results", "tag", "1", item], ["import", NCCL_LOG, "--tag", item],
                 ["coll", "all_reduce", "--np", "1", "--device", "cpu", "--tag", item]):
        code, out, err = run_cli(*argv, "--db", db)
        assert code == 2 and out == "", (argv, err)
        assert err.startswith("clusterbench: error: ") and err.count("\n") == 1 and msg in err, err
    with Store.open(str(db)) as store:
        assert [(r.id, r.tags) for r in store.list_runs()] == [(1, {"env": "a"})]


def test_a_bad_tag_in_a_launched_command_is_refused_before_launch(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=1\nnode2 slots=1\n")
    p = subprocess.run([sys.executable, "-m", "clusterbench", "launch", "mpi", "--hostfile", str(hosts), "--print",
                        "--", "coll", "all_reduce", "--tag", "k="], capture_output=True, text=True, timeout=60,
                       env={**os.environ}, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.count("\n") == 1 and "empty value" in p.stderr
