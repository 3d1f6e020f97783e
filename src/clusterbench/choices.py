"""The one parser of option values that name things: ``a,b,c`` or ``all``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clusterbench.errors import UsageError

# The GPU vendors a profile can be for and a launcher can make pods for (``--vendor``).
GPU_VENDORS = ("nvidia", "amd")


def parse_choices(text: str, known: Sequence[str], what: str,
                  canonical: Callable[[str], str | None] | None = None) -> tuple[str, ...]:
    """Names from a comma list, in the order given, each once; ``all`` means every known name.

    ``canonical`` maps a spelling to its known name (aliases, case) or None when unknown; by
    default a name matches case-insensitively. An unknown name is a one-line UsageError.
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
            raise UsageError(f"unknown {what} {word!r}: expected {', '.join(known)} or all")
        names.append(name)
    if not names:
        raise UsageError(f"no {what} given: expected {', '.join(known)} or all")
    return tuple(dict.fromkeys(names))
