"""Who decides whether a call runs: deny rules, the read-only policy, then an Approver.

Decisions are data (agent_cli/calls.py): a yes is bound to one call id and the hash of the exact
arguments shown; a decision for another id or another hash is treated as a denial. There is no
approve-all switch. Every approver receives the one call record, `Call`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from agent_cli.calls import Approved, Call, Decision, Denied


class Approver(Protocol):
    """Asks someone (or something) about one write call."""

    def decide(self, call: Call) -> Decision: ...


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


def decision_for(call: Call, answer: Answer) -> Decision:
    """The decision an answer gives for one call (a `stop` denies the rest of the reply too)."""
    if answer.kind == "approve":
        return Approved(call.id, call.args_hash)
    if answer.kind == "stop":
        return Denied(call.id, answer.reason or "the user stopped the turn at the panel",
                      stop_turn=True)
    return Denied(call.id, answer.reason)


# `n use ./tmp`, `no, use ./tmp`, `n: too big`: a denial word, a separator, then the reason.
_DENY_WITH_REASON = re.compile(r"(?is)(?:n|no)(?:\s+|\s*[,.:;!]+\s*)(\S.*)")


class NonInteractiveApprover:
    """No terminal and no answer source: write calls are denied, never approved by default."""

    def decide(self, call: Call) -> Decision:
        return Denied(
            call.id,
            "no one was there to approve it (non-interactive run); write calls are denied "
            "without a terminal",
            by="policy",
        )


class ScriptedApprover:
    """Answers from a list, as if typed at the prompt (tests, `--answers`)."""

    def __init__(self, answers: Iterable[str]) -> None:
        self.answers = list(answers)
        self.seen: list[Call] = []

    def decide(self, call: Call) -> Decision:
        self.seen.append(call)
        text = self.answers.pop(0) if self.answers else None
        return decision_for(call, read_answer(text))


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
    """The policy in one place: deny rules, read-only mode, then read-only calls, then the
    approver."""

    def __init__(self, approver: Approver, rules: Iterable[DenyRule] = (),
                 read_only: Callable[[], str | None] | None = None) -> None:
        self.approver = approver
        self.rules = list(rules)
        self.read_only = read_only
        """Returns the reason when the session is in read-only mode (tools/scope.py), else None:
        then every write call is refused before a panel, whatever reached the gate."""

    def rule_denial(self, call: Call) -> Denied | None:
        """The denial of the first deny rule that matches, if any (asked before any panel)."""
        for rule in self.rules:
            if rule.matches(call.name, call.args, path_args=call.path_args,
                            workspace=call.workspace):
                why = rule.describe() + (f": {rule.reason}" if rule.reason else "")
                return Denied(call.id, f"refused by {why}", by="rule")
        return None

    def walk_denial(self, call: Call, path: str) -> str | None:
        """The first deny rule that refuses `path` as a file this call reaches by itself (a
        walking tool's search or listing), or None. A rule applies when it would refuse this
        tool's call with its path arguments naming that file, or a read_file of it: the walk
        shows what read_file would, so a rule that keeps a file from read_file keeps it from
        every walk too."""
        forms = ((call.name, {**call.args, **dict.fromkeys(call.path_args, path)},
                  call.path_args), ("read_file", {"path": path}, ("path",)))
        for rule in self.rules:
            if not rule.args:
                continue  # a rule over tool names alone refused the call itself already
            for name, args, path_args in forms:
                if rule.matches(name, args, path_args=path_args, workspace=call.workspace):
                    return rule.describe() + (f": {rule.reason}" if rule.reason else "")
        return None

    def names_paths(self) -> bool:
        """Whether any deny rule matches an argument (only then can a walk hit one)."""
        return any(rule.args for rule in self.rules)

    def would_ask(self, call: Call) -> bool:
        """True when `decide` would open a panel: a write call no deny rule refuses."""
        read_only = self.read_only() if self.read_only is not None else None
        return call.effect != "read" and self.rule_denial(call) is None \
            and read_only is None

    def decide(self, call: Call) -> Decision:
        refused = self.rule_denial(call)
        if refused is not None:
            return refused
        mode = self.read_only() if self.read_only is not None else None
        if mode is not None and call.effect != "read":
            return Denied(call.id, f"refused: {mode}", by="policy")
        if call.effect == "read":
            return Approved(call.id, call.args_hash, by="policy")
        decision = self.approver.decide(call)
        if decision.id != call.id:
            return Denied(call.id, "decision was for another call", by="policy")
        if isinstance(decision, Approved) and decision.args_hash != call.args_hash:
            return Denied(call.id, "approval did not match the arguments shown",
                          by="policy")
        return decision
