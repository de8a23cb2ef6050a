"""Strict tool schemas for the OpenAI-compatible provider (Structured Outputs).

With `strict: true` the server guarantees that a call's arguments match the schema, but only for
schemas in its subset: every object lists all its properties as required and says
`additionalProperties: false`. An optional argument is kept optional by allowing `null` for it;
the null the model then sends for "not given" is dropped again before the registry sees the
call, so the tool gets its default exactly as with any other provider. A schema that cannot be
put in that form (an open object, an MCP schema with free-form maps) is sent as it is, not strict.
"""

from __future__ import annotations

import copy
from typing import Any


class _NotStrict(Exception):
    pass


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict form of a JSON schema, or None when it has no strict form."""
    try:
        out = _convert(copy.deepcopy(schema))
        for name, sub in list(out.get("$defs", {}).items()):
            out["$defs"][name] = _convert(sub)
    except _NotStrict:
        return None
    return out


def _convert(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node.pop("default", None)
    if node.get("type") == "object" or "properties" in node:
        props = node.get("properties")
        extra = node.get("additionalProperties", False)
        if not isinstance(props, dict) or extra not in (False, None):
            raise _NotStrict
        required = set(node.get("required", []))
        for key, sub in list(props.items()):
            sub = _convert(sub)
            if key not in required:
                sub = _nullable(sub)
            props[key] = sub
        node["required"] = list(props)
        node["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        node["items"] = _convert(node["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if isinstance(node.get(key), list):
            node[key] = [_convert(s) for s in node[key]]
    return node


def _nullable(sub: dict[str, Any]) -> dict[str, Any]:
    options = sub.get("anyOf")
    if isinstance(options, list) and any(o.get("type") == "null" for o in options
                                         if isinstance(o, dict)):
        return sub
    return {"anyOf": [sub, {"type": "null"}]}


def optional_keys(schema: dict[str, Any]) -> set[str]:
    """Top-level arguments the original schema does not require."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return set()
    return set(props) - set(schema.get("required", []))


def drop_nulls(arguments: dict[str, Any], optional: set[str]) -> dict[str, Any]:
    """A null for an optional argument is strict mode's way of leaving it out."""
    return {k: v for k, v in arguments.items() if not (v is None and k in optional)}


_UNSUPPORTED_AS_IS = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "patternProperties", "not", "if", "then", "else", "$ref", "default",
})
"""Keywords that keep a schema from being sent strict as it is (Anthropic's strict tool use
accepts a subset of JSON Schema; a numeric bound, for one, would be refused or dropped there)."""


def is_strict_as_is(schema: dict[str, Any]) -> bool:
    """True when a schema already is in strict form, unchanged: every object lists all its
    properties as required and forbids others, and it uses none of the keywords above. Such a
    tool is sent to the Anthropic API with `strict: true`; any other is sent as it is (no null
    rewriting there, so a call's arguments mean the same with or without strict)."""
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if _UNSUPPORTED_AS_IS & set(node):
            return False
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties")
            if not isinstance(props, dict) or node.get("additionalProperties") is not False:
                return False
            if set(node.get("required", [])) != set(props):
                return False
            stack.extend(props.values())
        for key in ("items", "anyOf", "allOf", "oneOf", "$defs"):
            sub = node.get(key)
            if isinstance(sub, dict) and key == "$defs":
                stack.extend(sub.values())
            elif sub is not None:
                stack.append(sub)
    return True
