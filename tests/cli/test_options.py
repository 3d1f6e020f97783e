"""Tests of clusterbench.cli.options."""

from __future__ import annotations

import pytest
from hostile_text import BAD_TAGS

from clusterbench.cli.options import MAX_TAG_VALUE, parse_tags
from clusterbench.errors import UsageError


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


def test_a_db_whose_directory_does_not_exist_is_refused_while_parsing(tmp_path):
    import click

    from clusterbench.cli.options import DatabaseParam

    typo = tmp_path / "no" / "dir" / "x.db"
    with pytest.raises(click.BadParameter, match="does not exist"):
        DatabaseParam(writes=True).convert(str(typo), None, None)
    assert not (tmp_path / "no").exists()
    assert DatabaseParam(writes=True).convert(str(tmp_path / "x.db"), None, None) == str(tmp_path / "x.db")
    # a command that only reads says "no results database at ..." when it opens it
    assert DatabaseParam().convert(str(typo), None, None) == str(typo)
