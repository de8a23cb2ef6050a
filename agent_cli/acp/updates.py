"""agent-cli's events as ACP `session/update` payloads, and its turn endings as stop reasons.

Pure functions over the event models (plus the undo store for a diff's text, diffs.py): no I/O
of their own, so the mapping is one table a reader can check. What the client sees of a tool's
output is the `tool_result` content the model saw (redacted like the log), never more.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_cli import events as ev
from agent_cli.safe_text import one_line, sanitize

STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "max_tokens": "max_tokens",
    "max_turns": "max_turn_requests",
    "refusal": "refusal",
    "interrupted": "cancelled",
}
"""TurnResult.reason -> ACP stopReason. Every other reason (budget, repeated_failure, error)
answers end_turn after an agent_message_chunk with the turn's sentence; log_unwritable answers
a JSON-RPC error instead (the record cannot be kept, so the session ends)."""

LIVE_OUTPUT_CAP = 32 * 1024
"""A running command's output is shown live up to its last this many characters."""
LIVE_OUTPUT_EVERY_S = 0.25
"""At most one live-output update per call this often (the result replaces it anyway)."""

SAID_REASONS = frozenset({"budget", "repeated_failure", "error", "max_turns", "max_tokens",
                          "refusal"})
"""Reasons whose sentence the client is told as text: ACP has no stop reason that says them."""

EDIT_TOOLS = frozenset({"write_file", "edit_file", "apply_patch"})
EXECUTE_TOOLS = frozenset({"run_command"})
SEARCH_TOOLS = frozenset({"search_text", "list_dir", "grep", "glob", "find"})


def tool_kind(name: str, effect: str | None) -> str:
    """ACP's ToolKind for a tool: from what it is (its name among the bundled tools) and its
    effect class; an unknown write tool is `other`, never a kind that looks harmless."""
    if name in EDIT_TOOLS:
        return "edit"
    if name in EXECUTE_TOOLS:
        return "execute"
    if "fetch" in name.lower():
        return "fetch"
    if effect == "read":
        return "search" if name in SEARCH_TOOLS else "read"
    return "other"


def tool_title(name: str, args: Any) -> str:
    """One line for the client's list of calls: the tool and its first argument (sanitised:
    the model wrote it)."""
    first = ""
    if isinstance(args, dict) and args:
        key = next((k for k in ("command", "path", "url", "pattern") if k in args),
                   next(iter(args)))
        value = args[key]
        first = " ".join(map(str, value)) if isinstance(value, list) else str(value)
    title = f"{name} {first}".strip() if first else name
    return one_line(title, 120)


def text_chunk(text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    """A message chunk. Text from outside (the model, a log) is sanitised as for the terminal
    (safe_text.py: escapes, bidi and invisible characters become visible tokens); padding is
    not collapsed here, since a stream's chunks cut runs anyway."""
    return {"sessionUpdate": kind,
            "content": {"type": "text", "text": sanitize(text, collapse_padding=False)}}


def text_content(text: str) -> dict[str, Any]:
    """A ToolCallContent of text (a result, a preview, a reason), sanitised as the panel
    shows it. Diffs are not: their text is the file's, for the editor to compare."""
    return {"type": "content", "content": {"type": "text", "text": sanitize(text)}}


def say(message: str) -> dict[str, Any]:
    """A sentence from agent-cli itself (a notice, an error), told as message text and marked
    so it is not mistaken for the model's words."""
    return text_chunk(f"\n[agent-cli] {message}\n")


class EventMapper:
    """Turns the engine's events into session/update payloads, one call's state at a time.
    `effect_of(name)` answers a tool's effect class (None for a name no tool has); `workspace`
    makes a diff's path absolute, as ACP wants it; `redact` is the log's redactor, for what
    only the client sees (a diff's text)."""

    def __init__(self, effect_of: Any, workspace: str,
                 redact: Callable[[str], str] = lambda s: s) -> None:
        self.effect_of = effect_of
        self.workspace = workspace
        self.redact = redact
        self._diffs: dict[str, list[dict[str, Any]]] = {}
        self._output: dict[str, tuple[str, float]] = {}
        """A running call's output so far, and when it was last sent."""

    def __call__(self, event: ev.AnyEvent) -> list[dict[str, Any]]:
        if isinstance(event, ev.TextDelta):
            return [text_chunk(event.text)] if event.text else []
        if isinstance(event, ev.ToolProposed):
            name = str(event.name)
            return [{"sessionUpdate": "tool_call", "toolCallId": event.id,
                     "title": tool_title(name, event.input),
                     "kind": tool_kind(name, self.effect_of(name)), "status": "pending",
                     "rawInput": event.input}]
        if isinstance(event, ev.ToolInvalid):
            return [progress(event.id, "failed", [text_content(event.reason)])]
        if isinstance(event, ev.Approval):
            if event.decision == "denied":
                why = f"Denied ({event.by}): {event.reason}" if event.reason \
                    else f"Denied ({event.by})."
                return [progress(event.id, "failed", [text_content(why)])]
            return []
        if isinstance(event, ev.ToolStarted):
            return [progress(event.id, "in_progress")]
        if isinstance(event, ev.ToolOutputDelta):
            return self._live(event)
        if isinstance(event, ev.Effects):
            from agent_cli.acp.diffs import diff_blocks

            self._diffs[event.id] = diff_blocks(event, self.redact)
            return []
        if isinstance(event, ev.ToolResultEvent):
            self._output.pop(event.id, None)
            content = [text_content(event.content), *self._diffs.pop(event.id, [])]
            return [progress(event.id, "failed" if event.is_error else "completed", content)]
        if isinstance(event, ev.Notice):
            return [say(event.message)]
        if isinstance(event, ev.ErrorEvent):
            return [say(event.message)]
        return []


    def _live(self, event: ev.ToolOutputDelta) -> list[dict[str, Any]]:
        """The output so far (its tail, redacted like the log), at most every
        LIVE_OUTPUT_EVERY_S: the client replaces a call's content with each update."""
        text, sent = self._output.get(event.id, ("", 0.0))
        text = (text + event.text)[-LIVE_OUTPUT_CAP:]
        now = time.monotonic()
        if now - sent < LIVE_OUTPUT_EVERY_S:
            self._output[event.id] = (text, sent)
            return []
        self._output[event.id] = (text, now)
        return [progress(event.id, "in_progress", [text_content(self.redact(text))])]


def progress(call_id: str, status: str, content: list[dict[str, Any]] | None = None
             ) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                              "status": status}
    if content is not None:
        update["content"] = content
    return update


def stop_reason(reason: str) -> str:
    return STOP_REASONS.get(reason, "end_turn")
