"""Who decides whether a call runs: deny rules, the read-only policy, then an Approver.

Decisions are data. A yes is bound to one call id and the hash of the exact arguments shown; a
decision for another id or another hash is treated as a denial. There is no approve-all switch.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

DecidedBy = Literal["user", "rule", "policy", "recording"]


@dataclass(frozen=True)
class ApprovalRequest:
    call_id: str
    name: str
    effect: str
    args: dict[str, Any]
    args_hash: str
    preview: str | None = None
    description: str = ""
    source: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    arg_order: tuple[str, ...] = ()
    """The argument names in the order the tool's schema declares them (path before content), so
    the panel lists them as the author wrote them; names not in it follow, sorted."""


@dataclass(frozen=True)
class Approved:
    call_id: str
    args_hash: str
    by: DecidedBy = "user"


@dataclass(frozen=True)
class Denied:
    call_id: str
    reason: str | None = None
    by: DecidedBy = "user"
    stop_turn: bool = False
    """The person answered `q`, Esc or Ctrl-C: deny this call and every remaining call of the
    reply and end the turn (each call still gets its tool_result)."""


Decision = Approved | Denied


class Approver(Protocol):
    """Asks someone (or something) about one write call."""

    def decide(self, request: ApprovalRequest) -> Decision: ...


APPROVE_WORDS = {"y", "yes"}
STOP_WORDS = {"q", "quit", "\x1b"}
"""Answers that deny this call and the rest of the reply (`\x1b` is what the Esc key sends)."""
ONLY_YES = "only y or yes approves"


@dataclass(frozen=True)
class Answer:
    """What a typed answer means. `kind` is approve, deny or stop (deny the rest of the reply);
    `ask_reason` says the person typed a bare `n`/`no` and may want to give a reason; `note` is
    what the UI should say back (a word that is not y/yes denies: "only y or yes approves")."""

    kind: Literal["approve", "deny", "stop"]
    reason: str | None = None
    ask_reason: bool = False
    note: str | None = None


def read_answer(text: str | None) -> Answer:
    """`y`/`yes` (any case, trimmed) approves; `q` or Esc stops the reply; anything else denies.
    Text after a denial word is the user's reason (`n use ./tmp`); any other word (`ok`, `sure`,
    `yes please`) denies too, and is kept as the reason so the model sees what was typed."""
    if text is None:
        return Answer("deny")
    answer = text.strip()
    low = answer.lower()
    if low in APPROVE_WORDS:
        return Answer("approve")
    if low in STOP_WORDS:
        return Answer("stop")
    if not answer:
        return Answer("deny")
    if low in ("n", "no"):
        return Answer("deny", ask_reason=True)
    m = _DENY_WITH_REASON.match(answer)
    if m:
        return Answer("deny", m.group(1).strip())
    return Answer("deny", answer, note=ONLY_YES)


def parse_answer(text: str | None) -> tuple[bool, str | None]:
    """(approved, reason) of a typed answer; see `read_answer`."""
    a = read_answer(text)
    return a.kind == "approve", a.reason


def decision_for(request: ApprovalRequest, answer: Answer) -> Decision:
    """The decision an answer gives for one request (a `stop` denies the rest of the reply too)."""
    if answer.kind == "approve":
        return Approved(request.call_id, request.args_hash)
    if answer.kind == "stop":
        return Denied(request.call_id, answer.reason or "the user stopped the turn at the panel",
                      stop_turn=True)
    return Denied(request.call_id, answer.reason)


# `n use ./tmp`, `no, use ./tmp`, `n: too big`: a denial word, a separator, then the reason.
_DENY_WITH_REASON = re.compile(r"(?is)(?:n|no)(?:\s+|\s*[,.:;!]+\s*)(\S.*)")


class NonInteractiveApprover:
    """No terminal and no answer source: write calls are denied, never approved by default."""

    def decide(self, request: ApprovalRequest) -> Decision:
        return Denied(
            request.call_id,
            "no one was there to approve it (non-interactive run); write calls are denied "
            "without a terminal",
            by="policy",
        )


class ScriptedApprover:
    """Answers from a list, as if typed at the prompt (tests, `--answers`)."""

    def __init__(self, answers: Iterable[str]) -> None:
        self.answers = list(answers)
        self.seen: list[ApprovalRequest] = []

    def decide(self, request: ApprovalRequest) -> Decision:
        self.seen.append(request)
        text = self.answers.pop(0) if self.answers else None
        return decision_for(request, read_answer(text))


class DenyRule(BaseModel):
    """Refuse a call before any panel: `tool` is a glob over tool names, `args` maps an argument
    name to a glob over its value (all must match)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, str] = {}
    reason: str = ""

    def matches(self, name: str, args: dict[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        for key, pattern in self.args.items():
            if key not in args:
                return False
            value = args[key]
            text = " ".join(map(str, value)) if isinstance(value, list) else str(value)
            if not fnmatch.fnmatchcase(text, pattern):
                return False
        return True

    def describe(self) -> str:
        parts = [f"tool={self.tool}"] + [f"{k}={v}" for k, v in self.args.items()]
        return "deny rule [" + ", ".join(parts) + "]"


class Gate:
    """The policy in one place: deny rules, then read-only calls, then the approver."""

    def __init__(self, approver: Approver, rules: Iterable[DenyRule] = ()) -> None:
        self.approver = approver
        self.rules = list(rules)

    def rule_denial(self, request: ApprovalRequest) -> Denied | None:
        """The denial of the first deny rule that matches, if any (asked before any panel)."""
        for rule in self.rules:
            if rule.matches(request.name, request.args):
                why = rule.describe() + (f": {rule.reason}" if rule.reason else "")
                return Denied(request.call_id, f"refused by {why}", by="rule")
        return None

    def would_ask(self, request: ApprovalRequest) -> bool:
        """True when `decide` would open a panel: a write call no deny rule refuses."""
        return request.effect != "read" and self.rule_denial(request) is None

    def decide(self, request: ApprovalRequest) -> Decision:
        refused = self.rule_denial(request)
        if refused is not None:
            return refused
        if request.effect == "read":
            return Approved(request.call_id, request.args_hash, by="policy")
        decision = self.approver.decide(request)
        if decision.call_id != request.call_id:
            return Denied(request.call_id, "decision was for another call", by="policy")
        if isinstance(decision, Approved) and decision.args_hash != request.args_hash:
            return Denied(request.call_id, "approval did not match the arguments shown",
                          by="policy")
        return decision
