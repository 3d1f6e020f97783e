"""Profile YAML as ``load_profile`` reads it: PyYAML's safe loader whose mappings know their line
numbers, refusing a key given twice and aliases that would expand a document past a bound."""

from __future__ import annotations

import re
from typing import Any

import yaml

from clusterbench.errors import UsageError


def load_yaml(text: str) -> Any:
    """The document in ``text``; raises yaml.YAMLError, UsageError (a key twice, too many
    values) or RecursionError."""
    return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader that notes line numbers


class _Mapping(dict):  # type: ignore[type-arg]
    """A YAML mapping that remembers its line and each key's line (1-based), for messages."""

    line: int = 0
    key_lines: dict[Any, int]


class _LineLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain data only) whose mappings know their line numbers and refuse
    a key given twice (which safe_load silently takes the last of)."""


# YAML 1.2 floats that PyYAML's YAML 1.1 rules read as strings: an exponent without a dot or
# without a sign (1e9, 4.1e6, 1.0e308), as JSON and most people write them; refused as "must be
# a number, got '1e9'" otherwise.
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
_LineLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))


# A profile is a few hundred values; aliases may repeat a node, but never expand it past this.
MAX_NODES = 100_000


def _expanded_nodes(root: yaml.Node) -> int:
    """How many nodes the document would have with every alias written out: counted once per
    distinct node (memoised), so a "billion laughs" is measured without being expanded."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key not in sizes:
            sizes[key] = 1   # a node that contains itself (a recursive alias) counts once
            children: list[yaml.Node] = []
            if isinstance(node, yaml.SequenceNode):
                children = node.value
            elif isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            sizes[key] = min(MAX_NODES + 1, 1 + sum(size(c) for c in children))
        return sizes[key]

    return size(root)


def _distinct_nodes(root: yaml.Node) -> int:
    """How many nodes the document holds as written (an alias is no new node)."""
    seen: set[int] = set()
    todo = [root]
    while todo and len(seen) <= MAX_NODES:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            todo.extend(n for pair in node.value for n in pair)
    return len(seen)


def _construct_document(loader: _LineLoader, node: yaml.Node) -> Any:
    # a large document is not an alias bomb: say which of the two it is
    if _distinct_nodes(node) > MAX_NODES:
        raise UsageError(f"it holds more than {MAX_NODES} values: refused")
    if _expanded_nodes(node) > MAX_NODES:
        raise UsageError(f"its aliases expand it past {MAX_NODES} values: refused, not expanded")
    return yaml.SafeLoader.construct_document(loader, node)


_LineLoader.construct_document = _construct_document  # type: ignore[method-assign,assignment]


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    # flatten_mapping puts the pairs a merge key (<<: *shared) brings in before the mapping's own:
    # those are defaults its own keys override, as YAML says, not a key given twice.
    own = sum(k.tag != "tag:yaml.org,2002:merge" for k, _ in node.value)
    loader.flatten_mapping(node)
    merged = len(node.value) - own
    out = _Mapping()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    own_keys: set[Any] = set()
    for i, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise UsageError(f"line {key_node.start_mark.line + 1}: a mapping key must be a plain value") from None
        if i >= merged and key in own_keys:
            raise UsageError(f"line {key_node.start_mark.line + 1}: key {key!r} given twice "
                             f"(first at line {out.key_lines[key]})")
        if i >= merged:
            own_keys.add(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _construct_int(loader: _LineLoader, node: yaml.ScalarNode) -> int:
    # Python refuses int() of more than 4300 digits (a ValueError, not a YAML error): no
    # threshold, size or count a profile holds comes near that
    try:
        return yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:
        raise UsageError(f"line {node.start_mark.line + 1}: the integer {node.value[:20]}... "
                         f"({len(node.value)} characters) is too long") from None


_LineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
