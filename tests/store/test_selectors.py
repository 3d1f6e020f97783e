"""Tests of clusterbench.store.selectors: the one grammar that picks stored runs, for every command that reads them."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest
from stored_runs import AWKWARD

from clusterbench.errors import UsageError
from clusterbench.store.selectors import parse_selector, parse_since, tag_term


def test_since(store_store_selectors):
    store = store_store_selectors
    since = parse_since("2026-11-20")
    assert since == "2026-11-20T00:00:00.000Z"
    assert [r.id for r in store.select("env=b", since)] == [3, 4, 5]
    assert [r.id for r in store.select("last~1", since)] == [5]
    assert [r.id for r in store.select_all(["2", "env=a"], parse_since("2026-11-05T00:00"))] == [2, 6]
    with pytest.raises(UsageError, match="matches no run since"):
        store.select("env=a", parse_since("2026-11-23T12:00:00+00:00"))
    assert [r.id for r in store.list_runs(benchmark="stream", since=since)] == [6, 5]


def test_parse_since_ages():
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    assert parse_since("7d", now) == "2026-11-16T12:00:00.000Z"
    assert parse_since("12h", now) == "2026-11-23T00:00:00.000Z"
    assert parse_since("30m", now) == "2026-11-23T11:30:00.000Z"
    assert parse_since("2w", now) == "2026-11-09T12:00:00.000Z"
    assert parse_since("1.5d", now) == "2026-11-22T00:00:00.000Z"
    # longer ago than the calendar goes: every run, not an overflow
    assert parse_since("99999999d", now) == parse_since("9" * 5000 + "w", now) == "0001-01-01T00:00:00.000Z"
    assert parse_since("2026-11-01T08:00:00+02:00", now) == "2026-11-01T06:00:00.000Z"
    with pytest.raises(UsageError, match="invalid --since"):
        parse_since("last week", now)


def test_parse_selector_terms():
    sel = parse_selector("3..7,last~2,env=prod,bench:all_reduce")
    assert sel.ranges == ((3, 7),) and sel.last == 2 and sel.tags == {"env": "prod"}
    assert sel.benchmarks[0].benchmarks == ("all_reduce",) and sel.benchmarks[0].tool == "all_reduce"


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
