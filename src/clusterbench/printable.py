"""Text from a run or a log made safe for a terminal: the one escaping function.

Tags, notes, host and device names, error messages and imported text come from users and from
other programs' output. Printed raw, an ESC sequence in a tag could clear the screen, retitle
the window or rewrite the lines above it, a carriage return could overwrite a PASS with a FAIL,
and a newline could forge a line of its own. ``printable`` shows every such character as a
Python-style escape instead (``\\x1b``, ``\\n``, ``\\u202e``); a line without one is returned
unchanged, so ordinary output is byte-identical. JSON output is never passed through it: JSON
escapes control characters itself, and its strings must stay exact.
"""

from __future__ import annotations

import re

# C0 controls and DEL and C1 controls (CSI is \x9b on some terminals); the Unicode bidi
# controls, which reorder what is shown ("Trojan Source"); the characters a terminal shows as
# nothing (soft hyphen, zero-width space, joiners, word joiner and invisible operators, the BOM),
# with which "node1" and "node1\u200b" look the same in a table and are two hosts; the line and
# paragraph separators; and lone surrogates (undecodable bytes of a file name), which would make
# print() fail.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
                     "\u2066-\u2069\ufeff\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` (``str()`` of anything) with every control character escaped: one line, shown
    as it is stored, never interpreted by the terminal."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():   # every character _UNSAFE holds is not (Cc, Cf, Cs, Zl, Zp): checked in C
        return s
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


def not_utf8(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate: what Python keeps of bytes that are not UTF-8
    (a file name, a command-line argument), and what JSON's ``\\ud800`` escapes decode to. No
    database or UTF-8 file can hold one: a tag or an imported value with one is refused."""
    return not text.isprintable() and any("\ud800" <= ch <= "\udfff" for ch in text)


def undecodable_escaped(text: str) -> str:
    """``text`` with the bytes that were not UTF-8 (kept by Python as lone surrogates: a URL or a
    driver message from the command line) written as ``\\xff``, the bytes they stand for."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
