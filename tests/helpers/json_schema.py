"""Checks a command's ``--json`` output against the published schema of its lines
(``src/clusterbench/data/schema/lines.schema.json``, docs/json.md)."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from clusterbench.report.jsonl import SCHEMA_PATH

SCHEMA = json.loads(SCHEMA_PATH.read_text())
Draft202012Validator.check_schema(SCHEMA)
VALIDATOR = Draft202012Validator(SCHEMA)
# One validator per kind as well: its errors name the field at fault, where oneOf's only say
# that no branch matched.
BY_KIND = {kind: Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": SCHEMA["$defs"]})
           for kind in SCHEMA["$defs"]}


def _not_json(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON (RFC 8259)")


def check_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``text`` is one JSON object, valid against the schema, with ``kind`` first."""
    objs = []
    for n, line in enumerate(text.splitlines(), 1):
        obj = json.loads(line, parse_constant=_not_json)
        assert isinstance(obj, dict) and next(iter(obj), None) == "kind", f"line {n}: {line[:200]}"
        kind = obj.get("kind")
        errors = sorted((BY_KIND[kind] if kind in BY_KIND else VALIDATOR).iter_errors(obj),
                        key=lambda e: list(e.absolute_path))
        errors = errors or list(VALIDATOR.iter_errors(obj))
        assert not errors, f"line {n} ({obj.get('kind')}): " + "; ".join(
            f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message[:300]}" for e in errors[:5])
        objs.append(obj)
    return objs
