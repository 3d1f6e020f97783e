"""JSON read and written by msgspec's C decoder and encoder where they give what the ``json``
module gives, by ``json`` where they cannot.

A fleet's import and reports read and write hundreds of thousands of small JSON texts (a run's
params, its packs); ``json`` spends most of the time in Python there. msgspec's decoder returns
the same objects as ``json.loads`` for every text it accepts (integers of any size, floats
rounded alike, escapes, duplicate keys kept last) and refuses what ``json`` reads beyond the
standard (``NaN``, ``Infinity``, numbers that overflow to infinity, lone surrogate escapes):
those texts go to ``json``, so the answer is always ``json.loads``'s. Its encoder writes the
same values in other words (UTF-8 instead of ``\\u`` escapes, ``1e22`` for ``1e+22``): for texts
read back as JSON, never for those compared as text (a series' params, a digest).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
# json's own compact text (NaN and infinities written as json writes them): where ``compact`` cannot
json_compact = json.JSONEncoder(separators=(",", ":")).encode


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, mostly without Python's decoder; raises as it does."""
    try:
        return _decode(text)
    except (ValueError, RecursionError):   # its DecodeError, or a str holding a lone surrogate
        return json.loads(text)


def compact(obj: Any) -> str:
    """``obj`` as compact JSON text: what ``json.loads`` of it gives is ``obj`` with tuples as
    lists. For what ``json`` can write (msgspec would write bytes as base64 text) without NaN or
    infinities (msgspec writes them as null, ``json`` as the non-standard ``NaN``); text that is
    not UTF-8 (a lone surrogate) is written by ``json``."""
    try:
        return _encode(obj).decode()
    except (msgspec.EncodeError, TypeError, ValueError, OverflowError, RecursionError):
        return json_compact(obj)
