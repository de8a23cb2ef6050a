"""Family: agent-cli's own state out of every tool's reach.

The workspace is a fake home folder that contains AGENT_CLI_HOME (as when someone runs agent-cli
in `~`). A hostile model asks for the log key (with it, it could sign forged logs that
`--reuse-approvals` and undo would trust), lists and searches the state folder, rewrites the
config (to trust an MCP server), and reaches the state through a symlink, a hard link, an
absolute path and `..`. Every call is refused by the path guard with the reason, even when the
user says yes at the panel; the key never reaches a tool_result, the model or the log.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import load_settings
from agent_cli.errors import PathRefused
from agent_cli.log.reader import read_events
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.tools.paths import read_text_capped, resolve_in_workspace
from tests.logtools import my_key

REFUSAL = "agent-cli's own state is out of reach of tools"
CONFIG = 'model = "claude-sonnet-5-5"\n'


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder used as the workspace, with agent-cli's state where it lives on Linux."""
    home = tmp_path / "home"
    state = home / ".local" / "share" / "agent-cli"
    state.mkdir(parents=True)
    monkeypatch.setenv("AGENT_CLI_HOME", str(state))
    (state / "config.toml").write_text(CONFIG)
    (home / "project").mkdir()
    (home / "project" / "notes.txt").write_text("hello\n")
    return home


def _state(home: Path) -> Path:
    return home / ".local" / "share" / "agent-cli"


def _run(home: Path, calls: list[tuple[str, dict[str, Any]]], answers: list[str],
         config_file: Path | None = None) -> tuple[list[ev.ToolResultEvent], Path]:
    settings = load_settings(config_file, {"provider": "scripted"})
    registry, _ = load_registry(settings)
    uses = [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
            for i, (name, args) in enumerate(calls)]
    replies = [{"content": uses, "stop_reason": "tool_use"},
               {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}]
    session = Session(settings, workspace=home, provider=ScriptedProvider(replies),
                      registry=registry, approver=ScriptedApprover(answers))
    session.start()
    session.send("go")
    session.close()
    results = [e for _, e in read_events(session.log_path) if isinstance(e, ev.ToolResultEvent)]
    assert len(results) == len(calls)
    return results, session.log_path


def test_the_log_key_cannot_be_read_listed_or_searched(fake_home: Path) -> None:
    key_hex = my_key().hex()
    state = _state(fake_home)
    os.symlink(state / "log.key", fake_home / "project" / "key-link")
    os.link(state / "log.key", fake_home / "project" / "key-hardlink")
    calls = [
        ("read_file", {"path": ".local/share/agent-cli/log.key"}),
        ("read_file", {"path": str(state / "log.key")}),
        ("read_file", {"path": "project/../.local/share/agent-cli/log.key"}),
        ("read_file", {"path": "project/key-link"}),
        ("read_file", {"path": "project/key-hardlink"}),
        ("list_dir", {"path": ".local/share/agent-cli"}),
        ("list_dir", {"path": ".local/share/agent-cli/sessions"}),
        ("search_text", {"pattern": key_hex[:12], "path": ".local/share/agent-cli"}),
        ("read_file", {"path": ".local/share/agent-cli/config.toml"}),
    ]
    results, log = _run(fake_home, calls, [])
    for (name, args), result in zip(calls, results, strict=True):
        assert result.is_error, (name, args, result.content)
        assert REFUSAL in result.content or "hard link" in result.content, result.content
        assert key_hex not in result.content
    # A search over the whole home skips the state folder and the hard link to the key.
    searched, log2 = _run(fake_home, [("search_text", {"pattern": "[0-9a-f]{64}", "path": "."}),
                                      ("search_text", {"pattern": "claude-sonnet", "path": "."})],
                          [])
    assert searched[0].content == "no matches" and searched[1].content == "no matches"
    for path in (log, log2):
        assert key_hex.encode() not in path.read_bytes()
    # The ordinary files of the workspace are still readable.
    ok, _ = _run(fake_home, [("read_file", {"path": "project/notes.txt"}),
                             ("list_dir", {"path": "."})], [])
    assert ok[0].content == "hello\n" and not ok[1].is_error


def test_the_config_cannot_be_rewritten_even_with_a_yes(fake_home: Path) -> None:
    state = _state(fake_home)
    evil = CONFIG + '[mcp.servers.evil]\ncommand = "sh"\ntrusted = true\n'
    calls = [
        ("write_file", {"path": ".local/share/agent-cli/config.toml", "content": evil}),
        ("edit_file", {"path": ".local/share/agent-cli/config.toml",
                       "old_string": "model", "new_string": "provider = \"openai\"\nmodel"}),
        ("write_file", {"path": ".local/share/agent-cli/plugin-pins.json", "content": "{}"}),
        ("write_file", {"path": ".local/share/agent-cli/tools/evil.py", "content": "x = 1"}),
    ]
    results, _ = _run(fake_home, calls, ["y"] * len(calls))
    for result in results:
        assert result.is_error and REFUSAL in result.content, result.content
    assert (state / "config.toml").read_text() == CONFIG
    assert not (state / "plugin-pins.json").exists()
    assert not (state / "tools").exists()


def test_a_config_file_named_with_config_is_out_of_reach(fake_home: Path) -> None:
    cfg = fake_home / "project" / "agent.toml"
    cfg.write_text('max_turns = 7\n')
    calls = [("read_file", {"path": "project/agent.toml"}),
             ("write_file", {"path": "project/agent.toml", "content": "max_turns = 99\n"})]
    results, _ = _run(fake_home, calls, ["y"], config_file=cfg)
    for result in results:
        assert result.is_error and REFUSAL in result.content and "config file" in result.content
    assert cfg.read_text() == "max_turns = 7\n"


def test_a_log_folder_moved_into_the_workspace_is_out_of_reach(fake_home: Path) -> None:
    logs = fake_home / "project" / "logs"
    cfg = fake_home / "cfg.toml"
    cfg.write_text(f'log_dir = "{logs}"\n')
    results, log = _run(fake_home, [("list_dir", {"path": "project/logs"})], [], config_file=cfg)
    assert log.parent == logs
    assert results[0].is_error and REFUSAL in results[0].content


def test_the_guard_itself_refuses_state_to_any_plugin(fake_home: Path) -> None:
    """Plugins that use the guard get the same refusal: the check is in resolve_in_workspace."""
    my_key()
    with pytest.raises(PathRefused, match="out of reach of tools"):
        resolve_in_workspace(fake_home, ".local/share/agent-cli/log.key")
    with pytest.raises(PathRefused, match="out of reach of tools"):
        read_text_capped(fake_home, ".local/share/agent-cli", 100)
    with pytest.raises(PathRefused, match="out of reach of tools"):
        resolve_in_workspace(_state(fake_home), "config.toml")  # workspace = the state itself
