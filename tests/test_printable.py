"""Tests of clusterbench.printable: text from a run or a log made safe for a terminal."""

from __future__ import annotations

from hostile_text import EVIL

from clusterbench.printable import _UNSAFE, printable


def test_printable_shortcut_covers_every_unsafe_character():
    """printable returns a str.isprintable() text as it is: no character it escapes is printable."""
    unsafe = [c for c in map(chr, range(0x3000)) if _UNSAFE.match(c)] + [chr(c) for c in range(0xD800, 0xE000)]
    assert not [c for c in unsafe if c.isprintable()]
    assert printable("a\u202eb") == "a\\u202eb" and printable("plain text") == "plain text"


def test_printable_escapes_and_leaves_plain_text_alone():
    assert printable("plain text, 41.2 GB/s") == "plain text, 41.2 GB/s"
    assert printable("a\x1b[31mb") == "a\\x1b[31mb"
    assert printable("x\ny\rz\t") == "x\\ny\\rz\\t"
    assert printable("\u202edcba\x9b\x7f\udcff") == "\\u202edcba\\x9b\\x7f\\udcff"
    assert printable("Größe µs") == "Größe µs"          # ordinary non-ASCII text stays
    assert printable(printable(EVIL + "\udcff")) == printable(EVIL + "\udcff")  # escaping twice changes nothing more
    assert "\n" not in printable(EVIL)


def test_invisible_characters_are_shown():
    # "node1" and "node1\u200b" are two hosts that look the same in a table
    assert printable("node1\u200b") == "node1\\u200b"
    for ch in ("\u00ad", "\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\u2064", "\ufeff"):
        want = f"\\u{ord(ch):04x}" if ord(ch) > 0xff else f"\\x{ord(ch):02x}"
        assert printable(f"a{ch}b") == f"a{want}b"
    assert printable("漢字 ideographic\u3000space") == "漢字 ideographic\u3000space"   # visible: kept
