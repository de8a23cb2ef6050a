"""edit_file: exact replacement, clear failures, a diff preview, a bound approval, a checked
effect; and write_file's CREATE/OVERWRITE panel and its own check."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import Gate, ScriptedApprover
from agent_cli.errors import PathRefused, ToolFailed
from agent_cli.loop import Loop
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.tools.base import ToolContext, ToolOutput
from agent_cli.tools.loader import load_tools
from agent_cli.tools.registry import Registry
from tests.scripts import use


@pytest.fixture(scope="module")
def tools() -> Registry:
    registry, report = load_tools([])
    assert report.errors == []
    return registry


def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, timeout_s=10, output_cap=30_000)


def call(tools: Registry, ws: Path, name: str, **kw: Any) -> tuple[str, ToolOutput | str]:
    """Preview, snapshot and run a tool as the loop does; returns (preview, result)."""
    tool = tools.get(name)
    assert tool is not None
    args = tool.args.model_validate(kw)
    c = ctx(ws)
    assert tool.snapshot is not None and tool.preview is not None
    c.snapshot = tool.snapshot(args, c)
    shown = tool.preview(args, c) or ""
    out = tool.run(args, c)
    if tool.verify is not None:
        assert tool.verify(args, c, out) is None
    return shown, out


def run_loop(ws: Path, registry: Registry, calls: list[dict[str, Any]],
             answers: list[str]) -> tuple[list[ev.AnyEvent], list[dict[str, Any]],
                                          ScriptedApprover]:
    provider = ScriptedProvider([{"content": calls, "stop_reason": "tool_use"},
                                 {"content": [{"type": "text", "text": "ok"}],
                                  "stop_reason": "end_turn"}])
    events: list[ev.AnyEvent] = []
    approver = ScriptedApprover(answers)
    loop = Loop(provider, registry, Gate(approver), events.append, workspace=ws)
    history: list[dict[str, Any]] = []
    loop.run_turn(history, "go")
    return events, history[2]["content"], approver


# --------------------------------------------------------------------------- edit_file


def test_unique_match_is_replaced_with_a_diff_preview(tools: Registry, workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    shown, out = call(tools, workspace, "edit_file", path="app.py",
                      old_string="return 1", new_string="return 2")
    assert (workspace / "app.py").read_text() == "def f():\n    return 2\n\nprint(f())\n"
    assert shown.startswith("EDIT app.py: 1 replacement\n")
    assert "--- a/app.py" in shown and "+++ b/app.py" in shown
    assert "-    return 1\n" in shown and "+    return 2\n" in shown
    assert isinstance(out, ToolOutput) and "1 replacement" in out.content


def test_zero_matches_fail_clearly_and_change_nothing(tools: Registry, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    with pytest.raises(ToolFailed, match="not found"):
        call(tools, workspace, "edit_file", path="a.txt", old_string="gamma", new_string="x")
    assert (workspace / "a.txt").read_text() == "alpha\nbeta\n"


def test_several_matches_need_replace_all(tools: Registry, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolFailed, match="occurs 3 times"):
        call(tools, workspace, "edit_file", path="a.txt", old_string="x = 1",
             new_string="x = 2")
    assert (workspace / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"
    shown, _out = call(tools, workspace, "edit_file", path="a.txt", old_string="x = 1",
                      new_string="x = 2", replace_all=True)
    assert (workspace / "a.txt").read_text() == "x = 2\nx = 2\nx = 2\n"
    assert "3 replacements" in shown


def test_preview_says_the_edit_will_fail(tools: Registry, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    tool = tools.get("edit_file")
    assert tool is not None and tool.preview is not None
    args = tool.args.model_validate({"path": "a.txt", "old_string": "two", "new_string": "2"})
    assert (tool.preview(args, ctx(workspace)) or "").startswith("WILL FAIL")


def test_hints_for_near_misses(tools: Registry, workspace: Path) -> None:
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    with pytest.raises(ToolFailed, match="CRLF"):
        call(tools, workspace, "edit_file", path="crlf.txt", old_string="one\ntwo",
             new_string="x")
    (workspace / "ind.py").write_text("if x:\n        y()\n")
    with pytest.raises(ToolFailed, match="whitespace"):
        call(tools, workspace, "edit_file", path="ind.py", old_string="if x:\n    y()",
             new_string="z")


def test_same_old_and_new_is_refused(tools: Registry, workspace: Path) -> None:
    (workspace / "a.txt").write_text("same\n")
    with pytest.raises(ToolFailed, match="nothing would change"):
        call(tools, workspace, "edit_file", path="a.txt", old_string="same", new_string="same")


def test_empty_old_string_is_invalid(tools: Registry) -> None:
    from agent_cli.tools.registry import CallRejected

    with pytest.raises(CallRejected, match="old_string"):
        tools.validate("c", "edit_file", {"path": "a", "old_string": "", "new_string": "x"})


def test_bytes_that_are_not_utf8_survive_an_edit(tools: Registry, workspace: Path) -> None:
    (workspace / "mixed.txt").write_bytes(b"\xff\xfe header\nname = old\n\x80tail")
    call(tools, workspace, "edit_file", path="mixed.txt", old_string="name = old",
         new_string="name = new")
    assert (workspace / "mixed.txt").read_bytes() == b"\xff\xfe header\nname = new\n\x80tail"


def test_edit_refuses_links_out_and_hard_links(tools: Registry, tmp_path: Path,
                                               workspace: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret value\n")
    os.symlink(outside, workspace / "soft.txt")
    os.link(outside, workspace / "hard.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        call(tools, workspace, "edit_file", path="soft.txt", old_string="secret",
             new_string="x")
    with pytest.raises(PathRefused, match="hard links"):
        call(tools, workspace, "edit_file", path="hard.txt", old_string="secret",
             new_string="x")
    assert outside.read_text() == "secret value\n"


def test_edit_of_missing_file_fails(tools: Registry, workspace: Path) -> None:
    with pytest.raises(PathRefused, match="does not exist"):
        call(tools, workspace, "edit_file", path="ghost.txt", old_string="a", new_string="b")


def test_edit_through_the_loop_shows_diff_and_runs_on_yes(tools: Registry,
                                                          workspace: Path) -> None:
    (workspace / "cfg.ini").write_text("debug = false\n")
    _events, results, approver = run_loop(
        workspace, tools,
        [use("e1", "edit_file", {"path": "cfg.ini", "old_string": "false",
                                 "new_string": "true"})], ["y"])
    assert not results[0].get("is_error"), results
    assert (workspace / "cfg.ini").read_text() == "debug = true\n"
    assert "-debug = false" in (approver.seen[0].preview or "")
    assert "+debug = true" in (approver.seen[0].preview or "")


def test_denied_edit_changes_nothing(tools: Registry, workspace: Path) -> None:
    (workspace / "cfg.ini").write_text("debug = false\n")
    _e, results, _a = run_loop(workspace, tools, [use("e1", "edit_file", {
        "path": "cfg.ini", "old_string": "false", "new_string": "true"})], ["n"])
    assert results[0]["is_error"] and "denied" in results[0]["content"]
    assert (workspace / "cfg.ini").read_text() == "debug = false\n"


def test_a_failed_effect_check_is_an_error_result(tools: Registry, workspace: Path) -> None:
    """If the file does not hold what was written (here: clobbered right after the write), the
    verify step turns the result into an error."""
    (workspace / "f.txt").write_text("a\n")
    registry = Registry()
    for name in ("edit_file", "write_file"):
        original = tools.get(name)
        assert original is not None

        def clobbering(args: Any, c: ToolContext, _run: Any = original.run) -> Any:
            out = _run(args, c)
            (workspace / "f.txt").write_text("clobbered\n")
            return out

        registry.add(dataclasses.replace(original, run=clobbering))
    _e, results, _a = run_loop(workspace, registry, [
        use("e1", "edit_file", {"path": "f.txt", "old_string": "a", "new_string": "b"}),
        use("w1", "write_file", {"path": "f.txt", "content": "fresh\n"}),
    ], ["y", "y"])
    for r in results:
        assert r["is_error"] and "could not be confirmed" in r["content"], r


# --------------------------------------------------------------------------- write_file


def test_write_file_panel_says_create_or_overwrite(tools: Registry, workspace: Path) -> None:
    shown, _ = call(tools, workspace, "write_file", path="new/file.txt", content="hello\n")
    assert shown.startswith("CREATE new file new/file.txt (6 bytes)")
    assert "+hello" in shown
    shown, _out = call(tools, workspace, "write_file", path="new/file.txt", content="bye\n")
    assert shown.startswith("OVERWRITE existing file new/file.txt (6 -> 4 bytes)")
    assert "-hello" in shown and "+bye" in shown
    assert (workspace / "new" / "file.txt").read_text() == "bye\n"


def test_write_file_verify_notices_a_different_content(tools: Registry,
                                                      workspace: Path) -> None:
    tool = tools.get("write_file")
    assert tool is not None and tool.verify is not None
    args = tool.args.model_validate({"path": "v.txt", "content": "expected"})
    (workspace / "v.txt").write_text("something else")
    assert "expected 8" in (tool.verify(args, ctx(workspace), None) or "")
    (workspace / "v.txt").write_text("expected")
    assert tool.verify(args, ctx(workspace), None) is None


def test_preview_of_a_refused_path_says_it_will_fail(tools: Registry, tmp_path: Path,
                                                     workspace: Path) -> None:
    os.symlink(tmp_path, workspace / "out")
    for name, kw in (("write_file", {"path": "out/x.txt", "content": "x"}),
                     ("edit_file", {"path": "out/x.txt", "old_string": "a", "new_string": "b"}),
                     ("edit_file", {"path": "ghost.txt", "old_string": "a", "new_string": "b"})):
        tool = tools.get(name)
        assert tool is not None and tool.preview is not None
        shown = tool.preview(tool.args.model_validate(kw), ctx(workspace)) or ""
        assert shown.startswith("WILL FAIL, nothing would change:"), shown
