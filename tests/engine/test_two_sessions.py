"""Two sessions in one process (eval runs trials so; an editor may open several): each keeps its
own state out of every tool's reach, each confines its own processes, and one's cancel does not
touch the other. The guard's cache must not hide a folder registered after it was filled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_cli.config import Settings
from agent_cli.sandbox.policy import current
from tests.scripts import done, make_session, seen_of, tool_use


def _results(session: Any) -> dict[str, Any]:
    return {e.id: e for e in seen_of(session) if getattr(e, "type", "") == "tool_result"}


def test_a_session_made_later_is_out_of_reach_of_the_first_ones_tools(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("fine\n")
    # Both logs inside the workspace: only the guard of agent-cli's own state keeps them out.
    first_log = ws / "logs-a" / "a.jsonl"
    second_log = ws / "logs-b" / "b.jsonl"
    first = make_session(ws, [tool_use("r1", "read_file", {"path": "ok.txt"}), done(),
                              tool_use("r2", "read_file", {"path": "logs-b/b.jsonl"}), done()],
                         log=first_log)
    first.start()
    assert first.send("read ok.txt").reason == "end_turn"  # the guard's cache is filled now
    assert _results(first)["r1"].is_error is False
    # A second session in the same process, with its own log folder, made after that.
    second = make_session(ws, [tool_use("s1", "read_file", {"path": "logs-a/a.jsonl"}), done()],
                          log=second_log)
    second.start()
    assert second_log.exists()
    assert first.send("read the other log").reason == "end_turn"
    refused = _results(first)["r2"]
    assert refused.is_error and "own state" in refused.content, refused.content
    assert "session_start" not in refused.content
    assert second.send("read the first log").reason == "end_turn"
    other = _results(second)["s1"]
    assert other.is_error and "own state" in other.content, other.content
    first.close()
    second.close()


def test_each_session_confines_its_processes_with_its_own_sandbox(tmp_path: Path) -> None:
    """The sandbox is the session's, current while its turns run (not a process global that the
    session made last would own)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seen: dict[str, Any] = {}
    first = make_session(ws, [done()], log=tmp_path / "a.jsonl",
                         settings=Settings(provider="scripted"))
    second = make_session(ws, [done()], log=tmp_path / "b.jsonl",
                          settings=Settings(provider="scripted"))
    first_hook = first.loop.hooks

    def spy(name: str) -> Any:
        def hook(messages: Any, system: Any) -> Any:
            seen[name] = current()
            return messages, system
        return hook

    first.loop.hooks = (*first_hook, spy("first"))
    second.loop.hooks = (*second.loop.hooks, spy("second"))
    first.start()
    second.start()
    first.send("hi")
    second.send("hi")
    assert seen["first"] is first.sandbox and seen["second"] is second.sandbox
    assert first.sandbox is not second.sandbox
    first.close()
    second.close()
