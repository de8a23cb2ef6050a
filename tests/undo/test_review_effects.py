"""Config `review_effects`: a command's change set, with its diff, and `Keep these changes?
[Y/n]` before the changes reach the workspace (overlay path), or undone at once on a no (snapshot
path). Real commands through the real Session."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.ui.confirm import Asker
from agent_cli.ui.effects_view import KEEP, reviewer
from tests.scripts import done, tool_use
from tests.undo.test_undo import sh


def run(ws: Path, log: Path, command: str, answer: str, during: str
        ) -> tuple[list[ev.AnyEvent], str, list[str]]:
    """`during`: what a.txt must hold while the question is asked."""
    config = Settings(provider="scripted", review_effects=True)
    registry, _ = load_registry(config)
    seen: list[ev.AnyEvent] = []
    session = Session(config, workspace=ws, provider=ScriptedProvider(
        [tool_use("toolu_r", "run_command", sh(command)), done("done")]), registry=registry,
        approver=ScriptedApprover(["y"]), sinks=[seen.append], log_path=log)
    console = Console(record=True, width=160)
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        assert (ws / "a.txt").read_text() == during
        return answer

    assert session.effects is not None
    session.effects.review = reviewer(Asker(console, ask, flush=False))
    session.start()
    session.send("go")
    session.close()
    return seen, console.export_text(), asked


@pytest.mark.parametrize("mode", ["on", "off"])
def test_no_keeps_the_workspace_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          mode: str) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", mode)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    seen, shown, asked = run(ws, tmp_path / "s.jsonl", "printf 'TWO\\n' > a.txt", "n",
                             "one\n" if mode == "on" else "TWO\n")
    assert asked == [KEEP]
    assert "-one" in shown and "+TWO" in shown
    assert (ws / "a.txt").read_text() == "one\n"
    notes = [e.message for e in seen if isinstance(e, ev.Notice) and e.kind == "undo"]
    assert any("toolu_r" in n and ("discarded" in n or "undone" in n) for n in notes)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_enter_keeps_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", mode)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    seen, _shown, asked = run(ws, tmp_path / "s.jsonl", "printf 'TWO\\n' > a.txt", "",
                              "one\n" if mode == "on" else "TWO\n")
    assert asked == [KEEP]
    assert (ws / "a.txt").read_text() == "TWO\n"
    [effects] = [e for e in seen if isinstance(e, ev.Effects)]
    assert [c.path for c in effects.changes] == ["a.txt"]
