"""A record's params as canonical JSON (sorted keys, less the keys left out), the key by which
judgements group rows, with each set of params written once where it repeats. A report of 1,000
fleet runs groups 400,000 records; writing each one's JSON took more time than the grouping."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

# The texts kept: the memo is emptied when it holds more (params that keep a host's name, or a
# run's own value, differ for every run, and their texts would fill memory).
MEMO_SIZE = 4096
# Values whose equality is their JSON's: 1 == 1.0 == True and 0.0 == -0.0 are one dict key but
# three or two texts, so params holding a float or a bool (or a list) are written each time.
_EXACT = frozenset({str, int, type(None)})
_ENCODER = json.JSONEncoder(sort_keys=True, default=str)   # made once, not once a record


def params_json(params: Mapping[str, Any]) -> str:
    """The params as canonical JSON: ``json.dumps(params, sort_keys=True, default=str)``."""
    return _ENCODER.encode(params)


class ParamsText:
    """``params_json`` of a record's params less ``drop``, the same text for the same params."""

    def __init__(self, drop: frozenset[str] | set[str] = frozenset()) -> None:
        self._drop = frozenset(drop)
        self._memo: dict[Hashable, str] = {}

    def kept(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The params less ``drop``, in their order."""
        return {k: v for k, v in params.items() if k not in self._drop}

    def __call__(self, params: Mapping[str, Any]) -> str:
        key = self.key(params)
        if isinstance(key, str):
            return key
        # keyed by what is kept: the same few hundred texts for every host of a fleet
        text = self._memo.get(key)
        if text is None:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            text = self._memo[key] = params_json(self.kept(params))
        return text

    def key(self, params: Mapping[str, Any]) -> Hashable:
        """What tells records' params apart as their texts would, for grouping: the kept items
        themselves where every value is a text, a whole number or None (their equality is their
        JSON's), else the text."""
        if not _EXACT.issuperset(map(type, params.values())):
            return params_json(self.kept(params))
        drop = self._drop
        return frozenset([kv for kv in params.items() if kv[0] not in drop])
