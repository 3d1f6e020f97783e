"""Tests of clusterbench.cli.options."""

from __future__ import annotations

import pytest

from clusterbench.cli.options import MAX_TAG_KEY, MAX_TAG_VALUE, parse_tags
from clusterbench.errors import UsageError

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


def test_a_tag_key_given_twice_with_two_values_is_refused():
    with pytest.raises(UsageError, match=r"tag 'a' given twice with different values, 'b' and 'c'"):
        parse_tags(["a=b", "a=c"])
    assert parse_tags(["a=b", " a = b ", "c=d"]) == {"a": "b", "c": "d"}   # the same value twice is one tag


@pytest.mark.parametrize("item, msg", BAD_TAGS, ids=lambda x: ascii(x)[:30])
def test_parse_tags_refuses(item, msg):
    with pytest.raises(UsageError, match=msg) as e:
        parse_tags([item])
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_parse_tags_keeps_what_selectors_can_quote():
    assert parse_tags([" k = v ", "team=a,b", "bench:x=1", "a=b=c", 'q="x"', "k2=" + "v" * MAX_TAG_VALUE]) == {
        "k": "v", "team": "a,b", "bench:x": "1", "a": "b=c", "q": '"x"', "k2": "v" * MAX_TAG_VALUE}


def test_the_command_line_a_run_records_holds_no_password(monkeypatch):
    # what `--json` prints as the run's command and what qualify shows of its steps: the
    # database URL without its password, wherever it stands in the line
    from clusterbench.cli.options import command_line, shown_argv

    monkeypatch.setattr("sys.argv", ["clusterbench", "stream", "--db", "postgresql://cb:PW-1@h:5432/cb",
                                     "--tag", "x=1", "--db=postgres://u:PW-2@h/d?password=PW-3"])
    line = command_line()
    assert line == ["clusterbench", "stream", "--db", "postgresql://cb@h:5432/cb", "--tag", "x=1",
                    "--db=postgres://u@h/d"]
    assert shown_argv(["x", "postgresql://a:PW-4@h/d"]) == ["x", "postgresql://a@h/d"]


@pytest.mark.parametrize("argv", [["import", "nccl-tests/a3mega-h100-2node-all_reduce.txt"],
                                  ["results", "tag", "1", "k=v"], ["results", "delete", "1"],
                                  ["stream", "--device", "cpu", "-n", "2"]])
def test_every_command_refuses_a_database_in_memory(capsys, argv):
    from judge_helpers import cli
    from paths import DATA

    if argv[0] == "import":
        argv = ["import", str(DATA / argv[1])]
    rc, out, err = cli(capsys, *argv, "--db", ":memory:")
    assert rc == 2
    assert "a database in memory keeps nothing after the command" in err
    assert "stored" not in out + err and len(err.strip().splitlines()) == 1
