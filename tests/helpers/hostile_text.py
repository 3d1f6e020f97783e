"""Text no terminal may see raw (escape codes, bidi overrides, deep brackets) and the checks that
it did not."""

from __future__ import annotations

import pytest
from judge_helpers import cli

from clusterbench.cli import main
from clusterbench.cli.options import MAX_TAG_KEY, MAX_TAG_VALUE

DEEP = "[" * 3000 + "]" * 3000


cli_store_env = cli   # the in-process CLI, by the name the escaping tests know it


ESC = "\x1b[2J\x1b]0;pwned\x07"


EVIL = f"a{ESC}b\rFAKE\nPASS\u202eevil\x9b31m"


RAW = ("\x1b", "\r", "\x07", "\u202e", "\x9b")


def _cb(capsys, argv: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} printed raw:\n{text!r}"


HOSTILE = ("</script><script>alert(1)</script><img src=x onerror=alert(2)>\"' onload=x `code` "
           "![t](https://e.invalid/t.png) [l](javascript:alert(3)) | ]]> \x1b[31m\x07\x7f\x9b \u202egnp.\u2066")


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
