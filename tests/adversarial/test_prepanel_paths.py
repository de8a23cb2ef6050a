"""Family: a path the guard will refuse is refused before any panel, for every tool.

A model aims a write at agent-cli's own state (the workspace is a home folder that holds
AGENT_CLI_HOME), outside the workspace (`..`, an absolute path), through a link that leaves it, or
at a hard link to the log key; through the built-ins and through plugin tools whose path fields
are named like paths or marked `"format": "path"`. A panel that is answered "yes" and then
refused teaches the person that yes means nothing: the approver here records every call it is
asked about, and must never be asked. Each refusal names the guard's reason, and nothing runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.log.reader import read_events
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.logtools import my_key

PLUGIN = '''
from pydantic import BaseModel, ConfigDict, Field
from agent_cli.tools import Tool

class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dest: str = Field(json_schema_extra={"format": "path"})
    output_path: str = "out.txt"
    text: str = ""

def run(args, ctx):
    return "saved"

TOOL = Tool(name="save_note", description="Save a note.", args=Args, effect="write", run=run)
'''


class RecordingApprover(ScriptedApprover):
    """Says yes to everything, and remembers every call it was asked about."""

    def __init__(self) -> None:
        super().__init__(["y"] * 50)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    state = home / ".local" / "share" / "agent-cli"
    state.mkdir(parents=True)
    monkeypatch.setenv("AGENT_CLI_HOME", str(state))
    (state / "config.toml").write_text('model = "claude-sonnet-5-5"\n')
    (home / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", home / "project" / "out-link")
    my_key()
    os.link(state / "log.key", home / "project" / "key-hardlink")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "save_note.py").write_text(PLUGIN, encoding="utf-8")
    return home


STATE = ".local/share/agent-cli"
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "write-config": ("write_file", {"path": f"{STATE}/config.toml", "content": "trusted = 1"}),
    "write-pins": ("write_file", {"path": f"{STATE}/plugin-pins.json", "content": "{}"}),
    "write-new-plugin": ("write_file", {"path": f"{STATE}/tools/evil.py", "content": "x=1"}),
    "edit-config": ("edit_file", {"path": f"{STATE}/config.toml", "old_string": "model",
                                  "new_string": "provider"}),
    "write-absolute-state": ("write_file", {"path": "STATE_ABS/config.toml", "content": "x"}),
    "write-dotdot-out": ("write_file", {"path": "../outside.txt", "content": "x"}),
    "write-absolute-out": ("write_file", {"path": "/tmp/agent-cli-prepanel.txt",
                                          "content": "x"}),
    "write-through-link": ("write_file", {"path": "project/out-link/x.txt", "content": "x"}),
    "write-hardlink-to-key": ("write_file", {"path": "project/key-hardlink", "content": "x"}),
    "plugin-format-path": ("save_note", {"dest": f"{STATE}/config.toml"}),
    "plugin-named-path": ("save_note", {"dest": "project/ok.txt",
                                        "output_path": "../../outside.txt"}),
}


def _run(home: Path, name: str, args: dict[str, Any], approver: RecordingApprover
         ) -> list[ev.AnyEvent]:
    settings = Settings(provider="scripted")
    registry, report = load_registry(settings, [home.parent / "plugins"])
    assert not report.errors, report.errors
    replies = [{"content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": args}],
                "stop_reason": "tool_use"},
               {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}]
    s = Session(settings, workspace=home, provider=ScriptedProvider(replies), registry=registry,
                approver=approver, log_path=home.parent / "session.jsonl")
    s.start()
    s.send("go")
    s.close()
    return [e for _, e in read_events(s.log_path)]


@pytest.mark.parametrize("case", list(CASES))
def test_the_approver_is_never_asked_about_a_path_the_guard_refuses(home: Path,
                                                                    case: str) -> None:
    name, args = CASES[case]
    args = {k: v.replace("STATE_ABS", str(home / STATE)) if isinstance(v, str) else v
            for k, v in args.items()}
    before = (home / STATE / "config.toml").read_bytes()
    approver = RecordingApprover()
    events = _run(home, name, args, approver)
    assert approver.seen == [], f"the approver was asked about {approver.seen[0].args}"
    [approval] = [e for e in events if isinstance(e, ev.Approval)]
    assert approval.decision == "denied" and approval.by == "policy"
    assert approval.reason is not None and "path guard" in approval.reason
    [result] = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert result.is_error and "refused" in result.content
    assert not any(isinstance(e, ev.ToolStarted) for e in events)
    assert (home / STATE / "config.toml").read_bytes() == before
    assert not (home.parent / "outside.txt").exists()
    assert not (home.parent / "elsewhere" / "x.txt").exists()


def test_control_a_path_inside_the_workspace_still_asks(home: Path) -> None:
    approver = RecordingApprover()
    events = _run(home, "save_note", {"dest": "project/ok.txt"}, approver)
    assert [c.name for c in approver.seen] == ["save_note"]
    assert any(isinstance(e, ev.ToolStarted) for e in events)
