"""Renders loop events to a Rich console. A sink: `Renderer(console)(event)`.

Every model- or tool-supplied string passes through the sanitiser. Streamed text is appended as it
arrives (constant work per delta, no re-rendering of the whole answer). Each sink names every
event type it is given and ends in `assert_never`, as the replay views do: a new event type is a
mypy error here until someone decides how the terminal shows it.
"""

from __future__ import annotations

import json
from typing import assert_never

from rich.console import Console
from rich.text import Text

from agent_cli import events as ev
from agent_cli.ui.safe_rich import safe, safe_line

RESULT_PREVIEW_LINES = 6
NOTE_CHARS = 2000


def clip(text: str, limit: int = NOTE_CHARS) -> str:
    """Short notes (an invalid call's reason) stay short on screen; the cut is counted and the
    full text is in the session log."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … (+{len(text) - limit} characters; the full text is in the log)"


def brief_args(value: object, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + f"… (+{len(text) - limit + 1} chars)"


class Renderer:
    def __init__(self, console: Console, *, repl: bool = False) -> None:
        self.console = console
        self.repl = repl
        """In the chat, where `/show N` prints a result whole (N counts results as shown)."""
        self._results = 0
        self._streaming = False
        self._proposed: dict[str, object] = {}
        self._reported: set[str] = set()
        """Calls whose failure was already printed (invalid, refused): no need to repeat it."""
        self._effects: dict[str, ev.Effects] = {}
        """A call's recorded change set (logged before its result), printed under the result."""

    def _end_stream(self) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False

    def __call__(self, event: ev.AnyEvent) -> None:
        c = self.console
        match event:
            case ev.TextDelta():
                self._streaming = True
                c.print(safe(event.text, collapse_padding=False), end="", soft_wrap=True)
            case ev.ModelReply():
                self._end_stream()
            case ev.ToolProposed():
                self._proposed[event.id] = event.input
            case ev.ToolInvalid():
                self._reported.add(event.id)
                c.print(Text("✗ ", style="red")
                        + safe(clip(f"{event.name}: {event.reason}"), "red"))
            case ev.Approval():
                if event.decision == "denied" and event.by != "user":  # a person saw theirs
                    self._reported.add(event.id)
                    c.print(Text("✗ ", style="red")
                            + safe(f"{event.name}: {event.reason}", "red"))
            case ev.ToolStarted():
                args = self._proposed.get(event.id, {})
                c.print(Text("→ ", style="cyan") + safe(event.name, "bold")
                        + safe(" " + brief_args(args), "dim"))
            case ev.ToolResultEvent():
                self._results += 1
                self._proposed.pop(event.id, None)
                if event.id in self._reported:
                    self._reported.discard(event.id)
                else:
                    self._result(event)
                effects = self._effects.pop(event.id, None)
                if effects is not None:
                    from agent_cli.ui.effects_view import effects_line

                    line = effects_line(effects)
                    if line is not None:
                        c.print(line)
            case ev.Effects():
                self._effects[event.id] = event
            case ev.Notice():
                if (shell := event.user_shell()) is not None:
                    self._user_shell(event.message, shell)
                else:
                    c.print(safe(event.message, "yellow"))
            case ev.ErrorEvent():
                self._end_stream()
                c.print(safe(event.message, "bold red"))
            case ev.Interrupt():
                self._end_stream()
                c.print(Text("Interrupted (", style="yellow")
                        + safe_line(event.during, 40, "yellow") + Text(").", style="yellow"))
            case ev.TurnEnd():
                self._end_stream()
                if event.message and event.reason != "error":
                    c.print(safe(event.message, "yellow"))
            case (ev.SessionStart() | ev.SessionEnd() | ev.UserMessage() | ev.Undo()
                  | ev.ApprovalNeeded()):
                pass  # the banner, the prompt line, the panels are drawn by their owners
            case ev.ToolOutputDelta():
                pass  # live output shows under the spinner (ui/status.py), never in the scroll
            case _:
                assert_never(event)

    def _result(self, event: ev.ToolResultEvent) -> None:
        # split on "\n" only: str.splitlines would also break at \r, \f, \v, \x1c-\x1e, \x85 and
        # U+2028/9, turning hidden characters into line breaks instead of visible tokens
        from agent_cli.ui.status import head_tail  # head and tail: errors are at the end

        shown, cut = head_tail(event.content)
        mark = Text("  ✗ ", style="red") if event.is_error else Text("  ✓ ", style="green")
        # a program's columns (pytest's `....   [100%]`) are not padding: kept as printed
        body = safe(shown, "red" if event.is_error else "dim", keep_alignment=True)
        self.console.print(mark + body)
        if cut:
            self.console.print(Text(f"    (+{cut:,} more lines, "
                                    f"{event.duration:.2f} s)", style="dim"))
        if event.hidden:
            self.console.print(hidden_line(event.hidden, self._results if self.repl else None))


    def _user_shell(self, message: str, shell: ev.UserShell) -> None:
        """The user's own `!` command: its output as printed (columns kept), then one line."""
        if shell.output:
            self.console.print(safe(shell.output.rstrip("\n"), keep_alignment=True))
        self.console.print(safe(message, "dim"))
        if shell.hidden:
            self.console.print(hidden_line(shell.hidden, None))


def hidden_line(kinds: list[str], number: int | None) -> Text:
    """Said under a result whose secrets were hidden from the model; `number`: the result's
    `/show N` in the chat."""
    n = len(kinds)
    after = (f"; `/show {number:d}` shows it to you" if number is not None
             else " (config redact_results = false sends results whole)")
    plural = "s" if n != 1 else ""
    return (Text(f"    agent-cli hid {n:d} secret{plural} from the model: ", style="yellow")
            + safe(", ".join(sorted(set(kinds))), "yellow") + Text(after, style="yellow"))


class StatusOnly:
    """For `run --output jsonl`: stdout carries the events; the person watching stderr still
    sees errors, retries and why the turn stopped."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: ev.AnyEvent) -> None:
        match event:
            case ev.ErrorEvent():
                self.console.print(safe(clip(event.message), "bold red"))
            case ev.Notice():
                if event.kind in ("retry", "plugin_error", "mcp", "max_tokens", "refusal",
                                  "budget"):
                    self.console.print(safe(clip(event.message), "yellow"))
            case ev.TurnEnd():
                if event.message and event.reason not in ("end_turn", "error"):
                    self.console.print(safe(clip(event.message), "yellow"))
            case (ev.SessionStart() | ev.UserMessage() | ev.ModelReply() | ev.ToolProposed()
                  | ev.ToolInvalid() | ev.Approval() | ev.ToolStarted() | ev.ToolResultEvent()
                  | ev.Interrupt() | ev.SessionEnd() | ev.Effects() | ev.Undo()
                  | ev.TextDelta() | ev.ToolOutputDelta() | ev.ApprovalNeeded()):
                pass  # stdout carries these, as JSONL (a question: its approval record)
            case _:
                assert_never(event)
