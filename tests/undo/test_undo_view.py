"""The undo panel and /undo as a function (console and answers injected): hostile names and
content are shown as tokens, never raw; no answer source means nothing is touched; a call that
was still running when its effects were taken says so."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.ui.undo_view import repl_undo
from tests.scripts import done, tool_use
from tests.undo.test_undo import sh


def session_for(ws: Path, tmp: Path, calls: list[tuple[str, str, dict[str, Any]]],
                **settings: Any) -> Session:
    config = Settings(provider="scripted", **settings)
    registry, _ = load_registry(config)
    replies = [tool_use(i, n, a) for i, n, a in calls] + [done("done")]
    s = Session(config, workspace=ws, provider=ScriptedProvider(replies), registry=registry,
                approver=ScriptedApprover(["y"] * len(calls)), log_path=tmp / "s.jsonl")
    s.start()
    return s


def pinned() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=100, force_terminal=True, color_system=None), buf


def test_hostile_names_and_content_are_tokens_in_the_panel(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    name = "evil\x1b[2J\u202e.txt"
    (ws / name).write_text("line \x1b]52;c;SGVsbG8=\x07 one\n")
    s = session_for(ws, tmp_path, [("toolu_x\x1b[31m", "run_command",
                                    sh("for f in evil*; do printf 'new\\n' > \"$f\"; done"))])
    s.send("go")
    console, buf = pinned()
    answers: list[str] = []

    def ask(prompt: str) -> str:
        answers.append(prompt)
        return "y"

    out = repl_undo(s, "", console=console, ask=ask)
    shown = buf.getvalue()
    assert "\x1b[2J" not in shown and "\x1b]52" not in shown and "\u202e" not in shown
    assert "\\x1b" in shown and "<U+202E>" in shown
    assert answers == ["Undo this? [y/N] "]
    assert out is not None and "Undone: 1 path restored" in str(out)
    assert (ws / name).read_text() == "line \x1b]52;c;SGVsbG8=\x07 one\n"
    s.close()


def test_no_answer_source_touches_nothing(tmp_path: Path) -> None:
    """Under pytest stdin is not a terminal: the real answer source is None."""
    ws = tmp_path / "ws"
    ws.mkdir()
    s = session_for(ws, tmp_path, [("toolu_c", "run_command", sh("printf y > made.txt"))])
    s.send("go")
    console, _buf = pinned()
    out = repl_undo(s, "", console=console)
    assert "No terminal to confirm on" in str(out)
    assert (ws / "made.txt").exists()
    s.close()
    assert '"undo"' not in (tmp_path / "s.jsonl").read_text()


def test_nothing_to_undo_says_so(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = session_for(ws, tmp_path, [("toolu_r", "list_dir", {"path": "."})])
    s.send("go")
    out = repl_undo(s, "", console=pinned()[0], ask=lambda p: "y")
    assert "Nothing to undo" in str(out)
    s.close()


def test_a_timed_out_command_still_records_what_it_did(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = session_for(ws, tmp_path, [("toolu_t", "run_command",
                                    {"command": "printf a > early.txt; sleep 30",
                                     "timeout_s": 1})])
    s.send("go")
    s.close()
    recs = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    [eff] = [r for r in recs if r["type"] == "effects"]
    assert [c["path"] for c in eff["changes"]] == ["early.txt"]
    kinds = [r["type"] for r in recs if r.get("id") == "toolu_t"]
    assert kinds[-2:] == ["effects", "tool_result"]
