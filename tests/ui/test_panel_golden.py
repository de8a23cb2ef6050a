"""Whole approval panels, exactly: a pinned console (60 columns, no colour, not a terminal) and
the panel's every character for a few canonical calls. A change of layout shows up here as a diff
to review, not as a passing test; the cases cover a new file (its content shown once, as the
diff), an edit (a wrapped `+` line keeps its gutter), an argv (shown once, in the preview), an
MCP tool (its description line, extra rows, a JSON value) and a hostile value (escapes, a bidi
control, a look-alike letter: all tokens, each warned about).

Also: the panel's own word wrap for plain lines (agent_cli/ui/panel_frame.py, which lays a long
value out by slicing instead of through Rich) wraps exactly as Rich's `Text.wrap` does, and a
large value draws the same characters as Rich's table and panel would.
"""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_cli.calls import Call
from agent_cli.ui.panel import approval_panel, key_width
from agent_cli.ui.panel_frame import wrap_plain
from agent_cli.ui.safe_rich import safe, safe_line


def _request(**kw: object) -> Call:
    base = dict(id="toolu_01", name="write_file", effect="write", args={}, args_hash="0" * 64,
                description="Write a file.", source="tools.d/write_file.py")
    base.update(kw)
    return Call(**base)  # type: ignore[arg-type]


CASES = {
    "write_file create": (_request(
        args={"path": "notes.txt", "content": "hello\nworld\n"}, arg_order=("path", "content"),
        preview="CREATE notes.txt (2 lines)\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n"
                "+hello\n+world\n"), 60),
    "edit_file diff": (_request(
        name="edit_file", source="tools.d/edit_file.py", description="Replace text in a file.",
        args={"path": "app.py", "old_string": "x = 1\n", "new_string": "x = 2  # a long comment "
              "that wraps past the width of the panel\n"},
        arg_order=("path", "old_string", "new_string"),
        preview="EDIT app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # a long "
                "comment that wraps past the width of the panel\n"), 60),
    "run_command argv": (_request(
        name="run_command", source="tools.d/run_command.py", description="Run a command.",
        args={"argv": ["ls", "-la", "some dir"], "timeout_s": 30}, arg_order=("argv", "timeout_s"),
        preview="$ ls -la 'some dir'\nsandbox: workspace (writes inside it only), network: off"),
        60),
    "mcp tool with extra rows": (_request(
        id="toolu_02", name="mcp__notes__append", source="", description="Append a note.\n"
        "Second line of the description.",
        args={"note": "buy milk", "tags": ["home", "errand"]}, arg_order=("note", "tags"),
        panel_extra={"server": "notes (stdio: python notes_server.py)",
               "undo": "undo will not cover: effects outside the workspace"}), 60),
    "hostile value": (_request(
        id="toolu_\x1b[31mred", args={"path": "ev\u0456l.txt",
        "content": "ok\x1b]8;;http://x\x07link\x1b]8;;\x07\u202etxt.exe\n" + "w" * 70 + "\n"},
        arg_order=("path", "content")), 60),
}


GOLDEN = {
    'write_file create': (
        '╭─ Approve call toolu_01 ──────────────────────────────────╮',
        '│ tool    write_file                                       │',
        '│ effect  write                                            │',
        '│ from    tools.d/write_file.py                            │',
        '│ path    notes.txt                                        │',
        '│ content (shown once, as the diff below: 2 lines)         │',
        '│ preview                                                  │',
        '│ CREATE notes.txt (2 lines)                               │',
        '│ --- /dev/null                                            │',
        '│ +++ b/notes.txt                                          │',
        '│ @@ -0,0 +1,2 @@                                          │',
        '│ +hello                                                   │',
        '│ +world                                                   │',
        '╰──────────────────────────────────────────────────────────╯',
    ),
    'edit_file diff': (
        '╭─ Approve call toolu_01 ──────────────────────────────────╮',
        '│ tool       edit_file                                     │',
        '│ effect     write                                         │',
        '│ from       tools.d/edit_file.py                          │',
        '│ path       app.py                                        │',
        '│ old_string x = 1                                         │',
        '│                                                          │',
        '│ new_string (shown once, as the diff below: 1 line)       │',
        '│ preview                                                  │',
        '│ EDIT app.py                                              │',
        '│ --- a/app.py                                             │',
        '│ +++ b/app.py                                             │',
        '│ @@ -1 +1 @@                                              │',
        '│ -x = 1                                                   │',
        '│ +x = 2  # a long comment that wraps past the width of    │',
        '│ +the panel                                               │',
        '╰──────────────────────────────────────────────────────────╯',
    ),
    'run_command argv': (
        '╭─ Approve call toolu_01 ──────────────────────────────────╮',
        '│ tool      run_command                                    │',
        '│ effect    write                                          │',
        '│ from      tools.d/run_command.py                         │',
        '│ argv      (shown once, in the preview below, as one      │',
        '│           command line of 3 words)                       │',
        '│ timeout_s 30                                             │',
        '│ preview                                                  │',
        "│ $ ls -la 'some dir'                                      │",
        '│ sandbox: workspace (writes inside it only), network: off │',
        '╰──────────────────────────────────────────────────────────╯',
    ),
    'mcp tool with extra rows': (
        '╭─ Approve call toolu_02 ──────────────────────────────────╮',
        '│ tool   mcp__notes__append                                │',
        '│ effect write                                             │',
        '│ about  Append a note.                                    │',
        '│ server notes (stdio: python notes_server.py)             │',
        '│ undo   undo will not cover: effects outside the          │',
        '│        workspace                                         │',
        '│ note   buy milk                                          │',
        '│ tags   [                                                 │',
        '│          "home",                                         │',
        '│          "errand"                                        │',
        '│        ]                                                 │',
        '╰──────────────────────────────────────────────────────────╯',
    ),
    'hostile value': (
        '╭─ Approve call toolu_\\x1b[31mred ─────────────────────────╮',
        '│ tool    write_file                                       │',
        '│ effect  write                                            │',
        '│ from    tools.d/write_file.py                            │',
        '│ about   Write a file.                                    │',
        '│ path    evіl.txt                                         │',
        '│ content ok\\x1b]8;;http://x\\x07link\\x1b]8;;\\x07<U+202E>tx │',
        '│         t.exe                                            │',
        '│         wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww │',
        '│         wwwwwwwwwwwwwwwwwwwwww                           │',
        '│                                                          │',
        '│ ⚠ Hidden or control characters are shown as highlighted  │',
        '│ tokens: 5 control characters, 1 bidi control shown as    │',
        '│ tokens                                                   │',
        '│ ⚠ Look-alike letters: words mixing ASCII with other      │',
        "│ scripts: 'evіl' has U+0456 CYRILLIC SMALL LETTER         │",
        '│ BYELORUSSIAN-UKRAINIAN I                                 │',
        '╰──────────────────────────────────────────────────────────╯',
    ),
}


def _plain(renderable: object, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    console.print(renderable)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(CASES))
def test_canonical_panel_exactly(name: str) -> None:
    request, width = CASES[name]
    assert tuple(_plain(approval_panel(request), width)) == GOLDEN[name]


def test_hostile_value_reaches_the_terminal_only_as_tokens() -> None:
    request, width = CASES["hostile value"]
    console = Console(file=io.StringIO(), width=width, force_terminal=True,
                      color_system="truecolor")
    console.print(approval_panel(request))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x07" not in out and "\u202e" not in out and "\x1b]" not in out
    # the only escapes are Rich's own colour codes (CSI ... m)
    assert all(piece.startswith("[") for piece in out.split("\x1b")[1:])


def _words(rng: random.Random, n: int, letters: str = "abcdefghij.,()") -> str:
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.05:
            out.append("x" * rng.randint(30, 200))  # wider than the column: folded
        else:
            out.append("".join(rng.choice(letters) for _ in range(rng.randint(1, 12))))
        out.append(" " * rng.choice((1, 1, 1, 2, 3, 5)))
    lead = " " * rng.choice((0, 0, 2, 3))
    return lead + "".join(out)


def test_plain_wrap_is_richs_wrap() -> None:
    rng = random.Random(21)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    checked = 0
    for _ in range(300):
        line = _words(rng, rng.randint(0, 60), "abcdefghij.,()éжω")
        width = rng.randint(1, 90)
        rich = [piece.plain.rstrip(" ") for piece in
                Text(line).wrap(console, width, overflow="fold")]
        assert wrap_plain(line, width) == rich, (line, width)
        checked += 1
    assert checked == 300


def test_a_large_value_draws_what_richs_table_would() -> None:
    rng = random.Random(5)
    value = "\n".join(_words(rng, rng.randint(0, 40)) for _ in range(400))
    request = Call(id="toolu_big", name="write_file", effect="write",
                   args={"path": "big.txt", "content": value}, args_hash="0" * 64,
                   arg_order=("path", "content"))
    for width in (40, 80, 123):
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold cyan", max_width=key_width(width), overflow="fold")
        table.add_column(overflow="fold", ratio=1)
        table.add_row("tool", safe("write_file", "bold"))
        table.add_row("effect", safe_line("write", 40, "bold red"))
        table.add_row(safe_line("path"), safe("big.txt"))
        table.add_row(safe_line("content"), safe(value))
        reference = Panel(Group(table), title=Text("Approve call ") + safe_line("toolu_big"),
                          title_align="left", border_style="yellow", expand=True)
        assert _plain(approval_panel(request), width) == _plain(reference, width)


def test_the_hidden_character_warning_is_one_sentence_per_call() -> None:
    """Two values with a control character each: one warning line that counts both, not one
    sentence per value (the panel used to repeat "1 control character shown as tokens")."""
    request = _request(args={"path": "a\x07.txt", "content": "b\x1b"},
                       arg_order=("path", "content"))
    text = "\n".join(_plain(approval_panel(request), 200))
    assert text.count("shown as tokens") == 1
    assert "2 control characters shown as tokens" in text
