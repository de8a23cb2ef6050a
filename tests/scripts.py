"""What the scripted provider plays back, and sessions built on it.

The helpers test files used to copy (a tool_use block, a reply of calls, a closing answer, a
session over a script, the records of its log) in one place, so a change of shape is made once.
Replies are in the Anthropic Messages shape the scripted provider reads (docs/contracts.md, "The
command line").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.base import Provider
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry, make_provider
from agent_cli.tools.registry import Registry

Reply = dict[str, Any]

PLUGIN = '''
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    text: str


def run(args, ctx):
    return "echo:" + args.text


TOOL = Tool(name="echo_write", description="Echo, with effects.", args=Args, effect="write",
            run=run)
'''
"""A write tool that echoes its text: the smallest plugin with effects, for log tests."""


def use(call_id: str, name: Any, input: Any) -> dict[str, Any]:
    """One tool_use block (name and input may be anything: tests of bad calls need that)."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": input}


def calls(*uses: dict[str, Any], text: str | None = None,
          stop_reason: str = "tool_use") -> Reply:
    """A reply that makes these calls, after an optional text block."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return {"content": [*content, *uses], "stop_reason": stop_reason}


def tool_use(call_id: str, name: str, args: dict[str, Any], say: str = "") -> Reply:
    """A reply that makes one call, after an optional sentence."""
    return calls(use(call_id, name, args), text=say or None)


def text(t: str) -> Reply:
    """A reply that answers with `t` and ends the turn."""
    return {"content": [{"type": "text", "text": t}], "stop_reason": "end_turn"}


def done(t: str = "Done.") -> Reply:
    """The closing answer of a scripted turn."""
    return text(t)


def make_session(workspace: Path, replies: list[Reply] | None = None, log: Path | None = None,
                 answers: Sequence[str] = (), tools_dir: Path | None = None, *,
                 settings: Settings | None = None, provider: Provider | None = None,
                 registry: Registry | None = None) -> Session:
    """A session (not started) over `replies` (or the provider `settings` name when there are
    none), the tools of `tools_dir` plus the bundled ones, `answers` for its panels, and its log
    at `log` (next to the workspace by default)."""
    settings = settings or Settings(provider="scripted")
    if provider is None:
        provider = ScriptedProvider(replies) if replies is not None else make_provider(settings)
    if registry is None:
        registry, _ = load_registry(settings, [tools_dir] if tools_dir else [])
    return Session(settings, workspace=workspace, provider=provider, registry=registry,
                   approver=ScriptedApprover(list(answers)), sinks=[Seen()],
                   log_path=log or workspace.parent / "session.jsonl")


class Seen(list[Any]):
    """A sink that keeps every event a session emits (the session's sinks are fixed when it is
    made, so make_session gives every session one)."""

    def __call__(self, event: Any) -> None:
        self.append(event)


def seen_of(session: Session) -> list[Any]:
    """The events `session` emitted so far (its `Seen` sink)."""
    for sink in session.sinks:
        if isinstance(sink, Seen):
            return sink
    raise AssertionError("the session was not made by make_session (no Seen sink)")


def started(session: Session) -> tuple[Session, list[Any]]:
    """Start `session`; (session, the events it emits from now on)."""
    seen = seen_of(session)
    seen.clear()
    session.start()
    return session, seen


def run_session(workspace: Path, log: Path, prompt: str = "go",
                replies: list[Reply] | None = None, answers: Sequence[str] = ("y",),
                tools_dir: Path | None = None) -> None:
    """One whole session: start, one prompt, close (by default one echo_write call, approved)."""
    replies = replies if replies is not None else [
        tool_use("toolu_1", "echo_write", {"text": "hi"}, "Echoing."), text("Done.")]
    s = make_session(workspace, replies, log, list(answers), tools_dir)
    s.start()
    s.send(prompt)
    s.close()


def log_records(session: Session) -> list[dict[str, Any]]:
    """Close `session` and return its log's records, in order."""
    session.close()
    lines = session.log_path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def split_runner() -> CliRunner:
    """A CliRunner whose result.stdout is stdout alone, on every supported click: click before
    8.2 mixes stderr into stdout unless told not to, and 8.2 dropped the flag (stderr is apart)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()
