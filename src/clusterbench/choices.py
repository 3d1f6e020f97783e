"""The one parser of option values that name things: ``a,b,c`` or ``all``."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

from clusterbench.errors import UsageError

# The GPU vendors a profile can be for and a launcher can make pods for (``--vendor``).
GPU_VENDORS = ("nvidia", "amd")


def parse_choices(text: str, known: Sequence[str], what: str,
                  canonical: Callable[[str], str | None] | None = None) -> tuple[str, ...]:
    """Names from a comma list, in the order given, each once; ``all`` means every known name.

    ``canonical`` maps a spelling to its known name (aliases, case) or None when unknown; by
    default a name matches case-insensitively. An unknown name is a one-line UsageError that
    ends, as click's for a mistyped command, with the closest known name when one is close.
    """
    lookup = canonical or (lambda name: next((k for k in known if k.lower() == name.lower()), None))
    names: list[str] = []
    for part in str(text).split(","):
        word = part.strip()
        if not word:
            continue
        if word.lower() == "all":
            return tuple(known)
        name = lookup(word)
        if name is None:
            raise UsageError(f"unknown {what} {word!r}: expected {', '.join(known)} or all{did_you_mean(word, known)}")
        names.append(name)
    if not names:
        raise UsageError(f"no {what} given: expected {', '.join(known)} or all")
    return tuple(dict.fromkeys(names))


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """``. Did you mean 'x'?`` for the known name closest to ``word`` (difflib's ratio, as click
    suggests commands and options), or nothing when none is close."""
    lower = {k.lower(): k for k in known}
    near = difflib.get_close_matches(word.lower(), list(lower), n=1)
    return f". Did you mean {lower[near[0]]!r}?" if near else ""
