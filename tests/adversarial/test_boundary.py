"""Family: the output boundary (issue 11 items 1 and 7, and the structural requirement).

A hostile log file: every string field of every event type holds escape sequences (clear screen,
OSC 52 clipboard, OSC 8 links, C1 controls, bidi overrides) and Rich markup. The fields are found
by walking the event models, so a field added later is covered without a new case. `replay` in
each output format must write none of it raw. (The static half is tests/test_output_boundary.py:
no Rich call in agent_cli takes text that did not come through the sanitiser.)
"""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from pydantic import BaseModel

from agent_cli import events as ev

from .conftest import FORBIDDEN, assert_terminal_clean, cli, flat

PAYLOAD = ("X\x1b[2J\x1b[H\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b]8;;https://evil.example/\x1b\\"
           "link\x1b]8;;\x1b\\\x9b1A\u202eexe.txt[link=https://evil.example]click[/link]:smile:Y")

EVENT_TYPES: list[type[BaseModel]] = [t for t in get_args(get_args(ev.Event)[0])]


def _value(annotation: Any, field: str) -> Any:
    """A hostile value of the field's type: every string in it is PAYLOAD."""
    origin = get_origin(annotation)
    if annotation is str:
        return PAYLOAD
    if annotation is Any:
        return {PAYLOAD: [PAYLOAD, {"k": PAYLOAD}]}
    if annotation is bool:
        return True
    if annotation is int:
        return 7
    if annotation is float:
        return 1_700_000_000.0
    if origin is Literal:
        return get_args(annotation)[0]
    if origin in (types.UnionType, typing.Union):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _value(options[0], field)
    if origin is dict:
        _, val = get_args(annotation)
        return {PAYLOAD: 3 if val is int else PAYLOAD, "path": 3 if val is int else PAYLOAD}
    if origin is list:
        (item,) = get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return [_record(item)]
        if field == "content":
            return [{"type": "text", "text": PAYLOAD},
                    {"type": "tool_use", "id": PAYLOAD, "name": PAYLOAD,
                     "input": {PAYLOAD: PAYLOAD}}]
        return [_value(item, field)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _record(annotation)
    raise AssertionError(f"no hostile value for {annotation!r} ({field})")


def _record(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in ("v", "seq"):
            continue
        out[name] = _value(info.annotation, name)
    return out


def hostile_log(path: Path) -> Path:
    lines = []
    order = sorted(EVENT_TYPES, key=lambda t: (t is not ev.SessionStart, t is ev.SessionEnd))
    for seq, model in enumerate(order, start=1):
        rec = {"v": 1, "seq": seq, **_record(model)}
        if model is ev.Approval:
            rec["id"] = PAYLOAD
        model.model_validate(rec)  # each record is a valid event: the reader will show it
        lines.append(json.dumps(rec))
    # and the same approval once more, recorded as decided by the user with a preview diff
    appr = {"v": 1, "seq": len(lines) + 1, **_record(ev.Approval), "by": "user",
            "preview": f"EDIT {PAYLOAD}\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{PAYLOAD}\n+{PAYLOAD}\n"}
    lines.insert(-1, json.dumps(appr))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_event_type_and_string_field_is_covered(tmp_path: Path) -> None:
    log = hostile_log(tmp_path / "hostile.jsonl")
    text = log.read_text()
    types_seen = {json.loads(line)["type"] for line in text.splitlines()}
    assert types_seen == {t.model_fields["type"].default for t in EVENT_TYPES}
    assert text.count(json.dumps(PAYLOAD)[1:-1]) > 40


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_replay_of_a_hostile_log_writes_nothing_raw(tmp_path: Path, output: str) -> None:
    log = hostile_log(tmp_path / "hostile.jsonl")
    # The export is what goes to stdout; agent-cli's own (styled) warnings go to stderr.
    code, shown = cli(["replay", str(log), "--output", output], stdout_only=output != "text")
    assert code == 0, shown
    if output == "text":
        assert_terminal_clean(shown)
        assert "\x1b[2J" not in shown and "\x1b]52" not in shown and "\x1b]8" not in shown
        assert "Approve call" in shown  # the panel of the user's decision was drawn
        assert "[link=https://evil.example]click[/link]" in flat(shown)  # markup shown as text
    else:
        bad = FORBIDDEN.search(shown)
        assert bad is None, f"raw {bad.group()!r} in the Markdown export"
        assert "\x1b" not in shown


@pytest.mark.parametrize("field", ["effect", "during", "args_hash", "decision-reason", "kind"])
def test_the_fields_issue_11_named_are_tokens_on_screen(tmp_path: Path, field: str) -> None:
    """approval.effect and interrupt.during reached the terminal raw (OSC 52 set the clipboard);
    the Markdown export wrote args_hash raw."""
    osc52 = "\x1b]52;c;Y3VybCBldmls\x07"
    start = {"v": 1, "seq": 1, "type": "session_start", "version": "0", "model": "m",
             "provider": "scripted", "workspace": str(tmp_path)}
    appr = {"v": 1, "seq": 2, "type": "approval", "id": "toolu_1", "name": "write_file",
            "decision": "denied", "by": "user", "args_hash": "abc", "args": {"path": "a"}}
    inter = {"v": 1, "seq": 3, "type": "interrupt", "during": "tool"}
    note = {"v": 1, "seq": 4, "type": "notice", "message": "m", "kind": "info"}
    target = {"effect": (appr, "effect"), "during": (inter, "during"),
              "args_hash": (appr, "args_hash"), "decision-reason": (appr, "reason"),
              "kind": (note, "kind")}[field]
    target[0][target[1]] = "ok" + osc52 + "tail"
    log = tmp_path / "one.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in (start, appr, inter, note)) + "\n")
    for output in ("text", "markdown"):
        code, shown = cli(["replay", str(log), "--output", output])
        assert code == 0
        assert "\x1b]52" not in shown and "\x07" not in shown, (output, shown)
        if output == "text" and field not in ("kind", "args_hash"):  # not shown in text
            assert re.search(r"\\x1b\]52;c;Y3VybCBldmls\\x07", flat(shown)), shown
