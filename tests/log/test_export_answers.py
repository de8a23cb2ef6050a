"""The HTML export shows what the log holds and nothing it does not: a denial typed as `sure` is
"denied by user: sure", never an invented `n sure`; a tool's column alignment (pytest's progress
line) is kept as printed, while padding that hides is still a counted marker."""

from __future__ import annotations

import re
from pathlib import Path

from agent_cli.log.html_export import export
from tests.scripts import make_session, text, tool_use

PYTEST_LINE = "tests/test_calc.py ...." + " " * 68 + "[100%]"


def _page(tmp_path: Path, answers: list[str], replies: list) -> str:  # type: ignore[type-arg]
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    session = make_session(ws, replies, log, answers=answers)
    session.start()
    session.send("go")
    session.close()
    return export(log)


def test_a_denial_shows_the_recorded_reason_not_an_invented_answer(tmp_path: Path) -> None:
    page = _page(tmp_path, ["sure", "y"], [
        tool_use("toolu_1", "write_file", {"path": "a.txt", "content": "x"}),
        tool_use("toolu_2", "write_file", {"path": "b.txt", "content": "y"}),
        text("Done.")])
    assert "n sure" not in page, "the person typed `sure`, not `n sure`"
    assert "[y/N] <b>" not in page, "no answer is shown that the log does not hold"
    assert "denied by user: sure" in page
    assert "approved by user" in page
    assert page.count("Run this? [y/N]") == 2


def test_a_programs_columns_are_kept_in_an_exported_result(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "out.txt").write_text(PYTEST_LINE + "\nok" + " " * 3000 + "TAIL\n")
    ws = tmp_path / "ws"
    log = tmp_path / "s.jsonl"
    session = make_session(ws, [tool_use("toolu_1", "read_file", {"path": "out.txt"}),
                                text("Read.")], log)
    session.start()
    session.send("go")
    session.close()
    page = export(log)
    assert "tests/test_calc.py ...." + " " * 68 + "[100%]" in page
    assert "⟨… 68 spaces …⟩" not in page
    assert re.search(r"ok<span class=\"tok\">⟨… 3000 spaces …⟩</span>TAIL", page)


def test_the_users_own_shell_command_is_in_the_export_with_its_output(tmp_path: Path) -> None:
    from agent_cli import events as ev

    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    session = make_session(ws, [text("ok")], log)
    session.start()
    session.emit(ev.UserShell(command="pytest -q", exit_code=1,
                              output=PYTEST_LINE + "\n1 failed").notice())
    session.close()
    page = export(log)
    assert "notice (user_shell): You ran a shell command: pytest -q (exit 1," in page
    assert PYTEST_LINE in page and "1 failed" in page
