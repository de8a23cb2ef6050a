"""Undo as people use it: a turn at a time, `--turn N` and `--to ID` to the state just before,
never re-creating what an earlier undo removed; `--redo`; resuming after an undo keeps the
conversation. Real sessions in-process, `agent-cli undo` as a real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.log.resume import resume_notes
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.scripts import done, tool_use
from tests.undo.test_undo import events_of, sh, undo_cli


def run_turns(ws: Path, log: Path, turns: list[list[tuple[str, str]]]) -> None:
    """One user message per turn; each turn runs its (id, command) calls, all approved."""
    replies: list[dict[str, Any]] = []
    for calls in turns:
        replies += [tool_use(i, "run_command", sh(c)) for i, c in calls] + [done("done")]
    config = Settings(provider="scripted")
    registry, _ = load_registry(config)
    n = sum(len(t) for t in turns)
    session = Session(config, workspace=ws, provider=ScriptedProvider(replies),
                      registry=registry, approver=ScriptedApprover(["y"] * n), sinks=[],
                      log_path=log)
    session.start()
    for i in range(len(turns)):
        session.send(f"turn {i + 1}")
    session.close()


def files(ws: Path) -> set[str]:
    return {p.name for p in ws.iterdir()}


def test_undo_steps_back_one_turn_then_one_more(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_turns(ws, log, [[("toolu_a", "printf a > a.txt")],
                        [("toolu_b", "printf b > b.txt"), ("toolu_c", "printf c > c.txt")]])
    assert files(ws) == {"a.txt", "b.txt", "c.txt"}
    listed = undo_cli("--list", str(log), answers=None)
    assert "toolu_c run_command  turn 2" in listed.stdout
    assert "toolu_a run_command  turn 1" in listed.stdout
    first = undo_cli(str(log), tmp=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert files(ws) == {"a.txt"}
    [undo] = events_of(log, "undo")
    assert undo["undid"] == ["toolu_c", "toolu_b"]  # newest first
    second = undo_cli(str(log), tmp=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert files(ws) == set()
    redo = undo_cli(str(log), "--redo", tmp=tmp_path)
    assert redo.returncode == 0, redo.stdout + redo.stderr
    assert files(ws) == {"a.txt"}  # the last undo taken back, not the one before


def test_to_id_never_recreates_what_an_earlier_undo_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_turns(ws, log, [[("toolu_a", "printf a > a.txt")], [("toolu_b", "printf b > b.txt")],
                        [("toolu_c", "printf c > c.txt")]])
    assert undo_cli(str(log), tmp=tmp_path).returncode == 0  # turn 3: c.txt goes
    assert files(ws) == {"a.txt", "b.txt"}
    to_a = undo_cli(str(log), "--to", "toolu_a", tmp=tmp_path)
    assert to_a.returncode == 0, to_a.stdout + to_a.stderr
    assert files(ws) == set()  # the state before toolu_a: c.txt is not re-created
    assert "c.txt" not in to_a.stdout
    # --to an id whose every change is undone already: nothing to do
    again = undo_cli(str(log), "--to", "toolu_b", tmp=tmp_path)
    assert again.returncode == 1 and "undone already" in again.stdout + again.stderr


def test_turn_n_restores_the_state_before_that_turn(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_turns(ws, log, [[("toolu_a", "printf a > a.txt")], [("toolu_b", "printf b > b.txt")],
                        [("toolu_c", "printf c > c.txt")]])
    result = undo_cli(str(log), "--turn", "2", tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert files(ws) == {"a.txt"}
    [undo] = events_of(log, "undo")
    assert undo["undid"] == ["toolu_c", "toolu_b"]


def test_resume_after_undo_keeps_the_conversation_and_says_what_was_undone(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_turns(ws, log, [[("toolu_a", "printf a > a.txt")], [("toolu_b", "printf b > b.txt")]])
    history_before, _ = resume_notes(log)
    assert undo_cli(str(log), tmp=tmp_path).returncode == 0
    history, notes = resume_notes(log)
    assert len(history) == len(history_before) > 0
    assert notes[0] == f"Resumed from {log}: {len(history)} messages."
    assert any("Undone since" in n and "toolu_b" in n and "toolu_a" not in n for n in notes)
    kinds = [e["type"] for e in events_of(log, "session_start")]
    assert len(kinds) == 1  # no session of its own


def test_slash_undo_in_a_resumed_session_reaches_the_calls_before(tmp_path: Path) -> None:
    from rich.console import Console

    from agent_cli.ui.undo_view import repl_undo

    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_turns(ws, log, [[("toolu_a", "printf a > a.txt")]])
    config = Settings(provider="scripted")
    registry, _ = load_registry(config)
    session = Session(config, workspace=ws, provider=ScriptedProvider([]), registry=registry,
                      approver=ScriptedApprover([]), sinks=[], log_path=tmp_path / "t.jsonl",
                      continues=str(log))
    session.start()
    try:
        out = repl_undo(session, "", console=Console(file=open("/dev/null", "w")),  # noqa: SIM115
                        ask=lambda _prompt: "y")
    finally:
        session.close()
    assert "Undone: 1 path" in str(out)
    assert not (ws / "a.txt").exists()
    assert events_of(tmp_path / "t.jsonl", "undo")[0]["undid"] == ["toolu_a"]
