"""The terminal as an answer source, decided once: whether a person can be asked here, and how.

Whether stdin is a terminal decides which approver a command gets (the panel, or the
non-interactive policy that denies every write call), how answers are read (a fresh line editor,
or plain `input`), and whether undo and changed project instructions can be confirmed at all.
Every command asks `Terminal.detect()` once and passes the answers down, so the rule "no terminal
and no answer source: writes are denied" lives here alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.approval import Approver
    from agent_cli.instructions import Instruction
    from agent_cli.ui.keys import EscWatcher

InputFn = Callable[[str], str]


def stdin_is_terminal() -> bool:
    """True when stdin is a terminal (False for a pipe, a file, a closed or missing stdin)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def discard_typeahead() -> None:
    """Keys typed while the model was streaming or a tool ran must not answer the panel.

    Two places hold such keys: the terminal's input queue (flushed with termios) and
    prompt-toolkit's own typeahead store, which keeps whatever the REPL prompt read past the Enter
    that sent the message (`hello<Enter>y<Enter>` typed fast arrives in one read).
    """
    if not stdin_is_terminal():
        return
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass
    if "prompt_toolkit" in sys.modules:
        from prompt_toolkit.input.defaults import create_input
        from prompt_toolkit.input.typeahead import clear_typeahead

        clear_typeahead(create_input())


def fresh_prompt(message: str) -> str:
    """One answer read by a line editor made for it alone: an empty history (Up and Down do
    nothing, so a `y` typed at an earlier panel is never one key away), no completion, no
    suggestion, no default. Esc answers at once with ESC (it denies the rest of the reply)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    kb = KeyBindings()

    @kb.add("up")
    @kb.add("down")
    @kb.add("c-p")
    @kb.add("c-n")
    @kb.add("pageup")
    @kb.add("pagedown")
    @kb.add("tab")
    def _nothing(event: KeyPressEvent) -> None:
        pass

    @kb.add("escape", eager=True)
    def _stop(event: KeyPressEvent) -> None:
        event.app.exit(result="\x1b")

    session: PromptSession[str] = PromptSession(
        history=InMemoryHistory(), key_bindings=kb, completer=None, auto_suggest=None,
        enable_history_search=False, complete_while_typing=False, mouse_support=False,
        enable_system_prompt=False, enable_suspend=False, multiline=False)
    return session.prompt(message, default="")


def default_input() -> InputFn:
    """`fresh_prompt` on a terminal, plain `input` otherwise."""
    if stdin_is_terminal() and os.environ.get("TERM") != "dumb":
        return fresh_prompt
    return input


@dataclass(frozen=True)
class Terminal:
    """What this process can ask a person through, decided once at start-up."""

    interactive: bool
    """stdin is a terminal: write calls get a panel and a question; otherwise they are denied
    (or answered from an explicit source such as `undo --answers FILE`)."""

    @classmethod
    def detect(cls) -> Terminal:
        return cls(interactive=stdin_is_terminal())

    def keys(self) -> EscWatcher | None:
        """The Esc watcher of a REPL turn, on a terminal only."""
        if not self.interactive:
            return None
        from agent_cli.ui.keys import EscWatcher

        return EscWatcher()

    def approver(self, console: Console) -> Approver:
        """The panel on a terminal; with no terminal, the policy that denies every write call.
        (ui/turns.py hands the keyboard back from the Esc watcher while the panel asks.)"""
        if not self.interactive:
            from agent_cli.approval import NonInteractiveApprover

            return NonInteractiveApprover()
        from agent_cli.ui.panel import TerminalApprover

        return TerminalApprover(console)

    def confirm(self, console: Console) -> Callable[[Instruction, str], bool] | None:
        """The yes/no for a changed project instruction file (the one confirm, ui/confirm.py);
        None with no terminal (the file is then left out and the notice says how to trust
        it)."""
        if not self.interactive:
            return None
        from agent_cli.ui.instructions_prompt import terminal_confirm

        return terminal_confirm(console)
