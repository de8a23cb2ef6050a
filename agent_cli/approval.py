"""Who decides whether a call runs: deny rules, the read-only policy, then an Approver.

Decisions are data. A yes is bound to one call id and the hash of the exact arguments shown; a
decision for another id or another hash is treated as a denial. There is no approve-all switch.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
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


Decision = Approved | Denied


class Approver(Protocol):
    """Asks someone (or something) about one write call."""

    def decide(self, request: ApprovalRequest) -> Decision: ...


APPROVE_WORDS = {"y", "yes"}


def parse_answer(text: str | None) -> tuple[bool, str | None]:
    """`y`/`yes` (any case, trimmed) approves; anything else denies. Text after a denial word is
    the user's reason (`n use ./tmp`)."""
    if text is None:
        return False, None
    answer = text.strip()
    if answer.lower() in APPROVE_WORDS:
        return True, None
    m = _DENY_WITH_REASON.match(answer)
    if m:
        return False, m.group(1).strip()
    return False, None


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
        ok, reason = parse_answer(text)
        if ok:
            return Approved(request.call_id, request.args_hash)
        return Denied(request.call_id, reason)


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
    """The policy in one place: deny rules, read-only mode, then read-only calls, then the
    approver."""

    def __init__(self, approver: Approver, rules: Iterable[DenyRule] = (),
                 read_only: Callable[[], str | None] | None = None) -> None:
        self.approver = approver
        self.rules = list(rules)
        self.read_only = read_only
        """Returns the reason when the session is in read-only mode (tools/scope.py), else None:
        then every write call is refused before a panel, whatever reached the gate."""

    def decide(self, request: ApprovalRequest) -> Decision:
        for rule in self.rules:
            if rule.matches(request.name, request.args):
                why = rule.describe() + (f": {rule.reason}" if rule.reason else "")
                return Denied(request.call_id, f"refused by {why}", by="rule")
        mode = self.read_only() if self.read_only is not None else None
        if mode is not None and request.effect != "read":
            return Denied(request.call_id, f"refused: {mode}", by="policy")
        if request.effect == "read":
            return Approved(request.call_id, request.args_hash, by="policy")
        decision = self.approver.decide(request)
        if decision.call_id != request.call_id:
            return Denied(request.call_id, "decision was for another call", by="policy")
        if isinstance(decision, Approved) and decision.args_hash != request.args_hash:
            return Denied(request.call_id, "approval did not match the arguments shown",
                          by="policy")
        return decision
