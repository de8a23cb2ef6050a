"""The line after a command and its diff on /show: real commands through the real Session, the
real renderer on a recording console; flags for everything that runs code later."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.events import EntryState, PathChange
from agent_cli.ui.effects_view import effects_diff, effects_line
from agent_cli.ui.render import Renderer
from agent_cli.undo.flags import runs_later
from tests.undo.test_undo import run_session, sh


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("two\n")
    (root / "run.sh").write_text("echo\n")
    return root


def _console() -> Console:
    return Console(record=True, width=200, force_terminal=True, color_system="standard")


def test_the_line_after_a_command_names_what_runs_later_in_bold(ws: Path,
                                                               tmp_path: Path) -> None:
    seen = run_session(ws, tmp_path / "s.jsonl", [("toolu_c", "run_command", sh(
        "printf 'ONE\\n' > a.txt && printf x > c.txt && rm b.txt && "
        "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit run.sh && printf 'export A=1\\n' > .envrc"))])
    console = _console()
    renderer = Renderer(console)
    for event in seen:
        renderer(event)
    styled = console.export_text(styles=True, clear=False)
    text = console.export_text(styles=False)
    line = next(x for x in text.splitlines() if "changed 3 files" in x)
    assert "created .git/hooks/pre-commit" in line
    assert "created .envrc" in line and "made executable run.sh" in line
    assert "\x1b[1;33mcreated .git/hooks/pre-commit" in styled  # bold
    lines = text.splitlines()  # the result first, the line after it
    assert lines.index(line) > next(i for i, x in enumerate(lines) if "✓" in x)

    [effects] = [e for e in seen if isinstance(e, ev.Effects)]
    diff = _console()
    diff.print(effects_diff(effects))
    shown = diff.export_text(styles=False)
    assert "+ONE" in shown and "-one" in shown
    assert "created .git/hooks/pre-commit  (a git hook" in shown
    assert "+exit 0" in shown
    assert shown.index(".git/hooks/pre-commit") < shown.index("a.txt")  # flagged first


def _ch(path: str, change: str = "created", mode: int = 0o644,
        before: EntryState | None = None) -> PathChange:
    return PathChange(path=path, change=change,  # type: ignore[arg-type]
                      before=before, after=EntryState(kind="file", sha256="0" * 64, mode=mode))


def test_what_is_flagged_and_what_is_not() -> None:
    flagged = [f.path for f in runs_later([
        _ch(".git/hooks/post-checkout"), _ch(".git/config", "modified"), _ch("sub/.envrc"),
        _ch("tools.d/evil.py"), _ch("bin/tool", "mode", 0o755,
                                    EntryState(kind="file", sha256="0" * 64, mode=0o644)),
        _ch("new.sh", mode=0o700),
        _ch(".git/hooks/pre-push.sample", mode=0o755), _ch("src/x.py"),
        _ch("old.sh", "modified", 0o755, EntryState(kind="file", sha256="1" * 64, mode=0o755)),
        PathChange(path=".git/hooks/pre-commit", change="deleted",
                   before=EntryState(kind="file", sha256="0" * 64, mode=0o755)),
    ])]
    assert flagged == [".git/hooks/post-checkout", ".git/config", "sub/.envrc",
                       "tools.d/evil.py", "bin/tool", "new.sh"]


def test_nothing_changed_prints_no_line() -> None:
    assert effects_line(ev.Effects(id="t", name="run_command", workspace=os.sep)) is None


def test_show_prints_the_diff_after_the_result(ws: Path, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from agent_cli.ui.commands import TurnState, cmd_show

    seen = run_session(ws, tmp_path / "s.jsonl", [("toolu_c", "run_command",
                                                   sh("printf 'ONE\\n' > a.txt"))])
    state = TurnState()
    for event in seen:
        state(event)
    console = _console()
    console.print(cmd_show(SimpleNamespace(sinks=[state]), "toolu_c"))  # type: ignore[arg-type]
    shown = console.export_text(styles=False)
    assert "modified a.txt" in shown and "-one" in shown and "+ONE" in shown
