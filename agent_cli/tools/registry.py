"""The registry: the tools offered to the model, and the one place model output meets them.

Model text is data: a tool is found by exact dictionary lookup of its name, and its input is
validated by the tool's pydantic model in strict JSON mode with unknown fields rejected.
"""

from __future__ import annotations

import json
import secrets
import types
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_cli.approval import path_arg_names
from agent_cli.calls import Call
from agent_cli.tools.base import Tool, args_digest


def _has_lone_surrogate(value: Any) -> bool:
    """A Python string decoded from JSON holds a surrogate only when it was unpaired."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


class CallRejected(Exception):
    """A proposal that cannot become a call; `reason` is what the model is told."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _forbid_extra(model: type[BaseModel]) -> type[BaseModel]:
    """Unknown fields (say `"approved": true`) must fail validation, whatever the author wrote."""
    if model.model_config.get("extra") == "forbid":
        return model
    ns = {"model_config": {**model.model_config, "extra": "forbid"}, "__module__": model.__module__}
    return types.new_class(model.__name__, (model,), {}, lambda n: n.update(ns))


def format_validation_error(name: str, err: ValidationError) -> str:
    lines = [f"Invalid arguments for {name}:"]
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"]) or "(input)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (not in the tool's schema)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        got = e.get("input")
        if e["type"] not in ("missing",) and not isinstance(got, dict):
            shown = json.dumps(got, ensure_ascii=False)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            msg += f" (got {shown})"
        lines.append(f"- {loc}: {msg}")
    return "\n".join(lines)


def _json_kind(value: Any) -> str:
    """The JSON name of a value's type: the model thinks in JSON, not Python."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


class Registry:
    """The tools of a session by name. The loop asks it for the specs it sends and for the
    validation of every proposal; nothing else turns model output into a call."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.args_key: bytes = secrets.token_bytes(32)
        """Keys `args_hash` (tools/base.args_digest). A session sets its log key here; until
        then a random one, so no unkeyed hash of the arguments is ever made."""
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        """Offer `tool` to the model. Refuses a second tool of the same name (naming both
        sources) and input examples the tool's own validation rejects; a pydantic model that
        allows unknown fields is given one that forbids them."""
        if tool.name in self._tools:
            other = self._tools[tool.name].source or "another plugin"
            raise ValueError(
                f"Two tools are named {tool.name!r}: {tool.source or '?'} and {other}. "
                "Rename one of them."
            )
        if tool.input_schema is None:
            tool.args = _forbid_extra(tool.args)
        for i, example in enumerate(tool.input_examples, 1):
            try:
                self._check_example(tool, example)
            except CallRejected as e:
                raise ValueError(f"Input example {i} of tool {tool.name!r} ({tool.source or '?'})"
                                 f" does not fit its own schema: {e.reason} Fix the example."
                                 ) from None
        self._tools[tool.name] = tool

    def args_hash(self, args: Any) -> str:
        """The keyed `args_hash` of shown arguments (tools/base.args_digest)."""
        return args_digest(self.args_key, args)

    @staticmethod
    def _check_example(tool: Tool, example: Any) -> None:
        """An example the tool would reject teaches the model a wrong call."""
        if not isinstance(example, dict):
            raise CallRejected("an example must be a JSON object.")
        try:
            tool.validate(example)
        except ValidationError as e:
            raise CallRejected(format_validation_error(tool.name, e)) from None
        except ValueError as e:
            raise CallRejected(str(e)) from None

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool of exactly this name (model output is matched by dictionary lookup only)."""
        return self._tools.get(name) if isinstance(name, str) else None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __iter__(self) -> Any:
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        return len(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """The tool definitions sent with every request, sorted by name (every request sends
        them in the same order)."""
        return [t.spec() for t in self]

    def validate(self, call_id: str, name: Any, raw_input: Any, *,
                 workspace: str = "") -> Call:
        """Turn a proposal into a frozen call, or raise CallRejected with the reason for the
        model. The call's `args` are the validated arguments in the schema's declared order."""
        tool = self.get(name) if isinstance(name, str) else None
        if tool is None:
            available = ", ".join(self.names()) or "(none)"
            quoted = json.dumps(name, ensure_ascii=True)
            raise CallRejected(f"Unknown tool {quoted}. Available tools: {available}.")
        if not isinstance(raw_input, dict):
            raise CallRejected(
                f"Invalid arguments for {tool.name}: the input must be a JSON object, "
                f"got {_json_kind(raw_input)}."
            )
        if _has_lone_surrogate(raw_input):
            raise CallRejected(
                f"Invalid arguments for {tool.name}: a string holds an unpaired UTF-16 "
                "surrogate (not valid Unicode text); send plain text."
            )
        try:
            value = tool.validate(raw_input)
        except ValidationError as e:
            raise CallRejected(format_validation_error(tool.name, e)) from None
        except ValueError as e:
            raise CallRejected(f"Invalid arguments for {tool.name}:\n{e}") from None
        schema = tool.schema()
        order = _declared_order(schema)
        shown = tool.dump(value)
        return Call(id=call_id, name=tool.name, effect=tool.effect, args=_in_order(shown, order),
                    args_hash=self.args_hash(shown), description=tool.description,
                    source=tool.source, panel_extra=dict(tool.panel_extra), arg_order=order,
                    path_args=path_arg_names(schema), workspace=workspace, tool=tool,
                    value=value)


def _declared_order(schema: dict[str, Any]) -> tuple[str, ...]:
    """Argument names in the order the tool's schema lists them (pydantic keeps field order)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return tuple(str(k) for k in props) if isinstance(props, dict) else ()


def _in_order(args: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """The same arguments, keyed in the declared order (the log then keeps the panel's order)."""
    first = {k: args[k] for k in order if k in args}
    return first | {k: v for k, v in args.items() if k not in first}
