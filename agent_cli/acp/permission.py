"""session/request_permission: the approval panel as an ACP question, and its answer as a
decision.

The question carries the call as the panel shows it (calls.Call): the exact arguments as
`rawInput` (a private copy, `Call.shown_args()`), the preview (a diff for a file edit) and the
panel's extra rows as text. It offers exactly two options, `allow_once` and `reject_once`: a yes
covers one call, so there is no *_always option to offer. Only the answer "selected" with the
allow option's id approves, and the yes is bound to the call's id and argument hash like a yes
typed at the panel; every other answer (reject, cancelled, an unknown option, an error, the
client gone) denies. The decision is the user's (`by = "user"`), with who answered recorded as
`via` ("acp:" and the client's name from initialize).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent_cli.acp.updates import text_content, tool_kind, tool_title
from agent_cli.calls import Approved, Call, Decision, Denied

ALLOW = "allow"
REJECT = "reject"
OPTIONS = [
    {"optionId": ALLOW, "name": "Allow this call", "kind": "allow_once"},
    {"optionId": REJECT, "name": "Reject", "kind": "reject_once"},
]


def question(session_id: str, call: Call) -> dict[str, Any]:
    """The params of session/request_permission for `call`."""
    content: list[dict[str, Any]] = []
    if call.preview:
        content.append(text_content(call.preview))
    if call.panel_extra:
        content.append(text_content("\n".join(f"{k}: {v}" for k, v in call.panel_extra.items())))
    return {"sessionId": session_id,
            "toolCall": {"toolCallId": call.id, "title": tool_title(call.name, call.args),
                         "kind": tool_kind(call.name, call.effect), "status": "pending",
                         "rawInput": call.shown_args(), "content": content},
            "options": [dict(o) for o in OPTIONS]}


def decision(call: Call, answer: Any, via: str | None) -> Decision:
    """The decision an answer (the request's result, or None when there was none) gives."""
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    picked = outcome.get("outcome") if isinstance(outcome, dict) else None
    if picked == "selected" and isinstance(outcome, dict) and outcome.get("optionId") == ALLOW:
        return with_via(Approved(call.id, call.args_hash, by="user"), via)
    if picked == "selected" and isinstance(outcome, dict) and outcome.get("optionId") == REJECT:
        return with_via(Denied(call.id, "the user rejected it in the editor", by="user"), via)
    if picked == "cancelled":
        return with_via(Denied(call.id, "the question was cancelled in the editor", by="user",
                               stop_turn=True), via)
    return with_via(Denied(call.id, "the editor gave no answer that approves it", by="user"),
                    via)


def cancelled(call: Call, via: str | None) -> Decision:
    """The decision when session/cancel arrives while the question is open."""
    return with_via(Denied(call.id, "the user cancelled the turn in the editor", by="user",
                           stop_turn=True), via)


def with_via(d: Decision, via: str | None) -> Decision:
    """The decision with `via` set: who answered for the user."""
    return dataclasses.replace(d, via=via)
