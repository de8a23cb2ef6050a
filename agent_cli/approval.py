"""Who decides whether a call runs: deny rules, the read-only policy, then an Approver.

Decisions are data. A yes is bound to one call id and the hash of the exact arguments shown; a
decision for another id or another hash is treated as a denial. There is no approve-all switch.
"""

from __future__ import annotations

import fnmatch
import os
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
    path_args: tuple[str, ...] = ()
    """Names of the arguments that are paths (see `path_arg_names`): deny rules match them on
    their workspace-relative canonical form."""
    workspace: str = ""
    """The workspace root the paths resolve in ("" when unknown: rules see the raw values)."""


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
    name to a glob over its value (all must match).

    A rule matches a value in any of its spellings, so it cannot be stepped around by writing the
    same thing differently: a path argument also on its workspace-relative canonical form
    (`./secrets/x`, `/abs/ws/secrets/x`, `secrets//x` and `a/../secrets/x` are all `secrets/x`,
    links resolved too), every other argument also on a normalised form (an argv list joined with
    single spaces, runs of whitespace collapsed to one space, ends trimmed)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, str] = {}
    reason: str = ""

    def matches(self, name: str, args: dict[str, Any], *, path_args: Iterable[str] = (),
                workspace: str = "") -> bool:
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        paths = set(path_args)
        for key, pattern in self.args.items():
            if key not in args:
                return False
            forms = _arg_forms(args[key], workspace if key in paths else None)
            if not any(fnmatch.fnmatchcase(text, pattern) for text in forms):
                return False
        return True

    def describe(self) -> str:
        parts = [f"tool={self.tool}"] + [f"{k}={v}" for k, v in self.args.items()]
        return "deny rule [" + ", ".join(parts) + "]"


PATH_ARG_NAMES = frozenset({"path", "file", "filename", "filepath", "dir", "directory",
                            "folder", "cwd", "src", "dst", "source", "destination", "target"})
PATH_ARG_SUFFIXES = ("_path", "_file", "_dir", "_folder", "path")


def path_arg_names(schema: dict[str, Any]) -> tuple[str, ...]:
    """The arguments of a tool's JSON schema that name files: marked `"format": "path"` (a
    plugin can say so with `Field(json_schema_extra={"format": "path"})`), or named like one
    (`path`, `file`, `*_path`, ...). The built-ins use `path`."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ()
    out = []
    for key, prop in props.items():
        lower = str(key).lower()
        marked = isinstance(prop, dict) and prop.get("format") == "path"
        if marked or lower in PATH_ARG_NAMES or lower.endswith(PATH_ARG_SUFFIXES):
            out.append(str(key))
    return tuple(out)


_BLANKS = re.compile(r"\s+")


def _arg_forms(value: Any, workspace: str | None) -> set[str]:
    """Every spelling a deny rule is matched against: as given, normalised, and for a path its
    canonical workspace-relative form."""
    raw = " ".join(map(str, value)) if isinstance(value, list) else str(value)
    forms = {raw, _BLANKS.sub(" ", raw).strip()}
    if workspace is not None and isinstance(value, str):
        forms |= _path_forms(value, workspace)
    return forms


def _path_forms(value: str, workspace: str) -> set[str]:
    """`value` relative to the workspace after `.`, `..` and repeated slashes are folded, both
    lexically and with links resolved; a path outside the workspace keeps its absolute form."""
    root = os.path.abspath(workspace) if workspace else os.getcwd()
    joined = os.path.join(root, os.path.expanduser(value))
    forms: set[str] = set()
    for root_form, full in ((root, os.path.normpath(joined)),
                            (os.path.realpath(root), os.path.realpath(joined))):
        rel = os.path.relpath(full, root_form)
        forms.add(full if rel == ".." or rel.startswith("../") else rel)
    return forms


class Gate:
    """The policy in one place: deny rules, then read-only calls, then the approver."""

    def __init__(self, approver: Approver, rules: Iterable[DenyRule] = ()) -> None:
        self.approver = approver
        self.rules = list(rules)

    def decide(self, request: ApprovalRequest) -> Decision:
        for rule in self.rules:
            if rule.matches(request.name, request.args, path_args=request.path_args,
                            workspace=request.workspace):
                why = rule.describe() + (f": {rule.reason}" if rule.reason else "")
                return Denied(request.call_id, f"refused by {why}", by="rule")
        if request.effect == "read":
            return Approved(request.call_id, request.args_hash, by="policy")
        decision = self.approver.decide(request)
        if decision.call_id != request.call_id:
            return Denied(request.call_id, "decision was for another call", by="policy")
        if isinstance(decision, Approved) and decision.args_hash != request.args_hash:
            return Denied(request.call_id, "approval did not match the arguments shown",
                          by="policy")
        return decision
