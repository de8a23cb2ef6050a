"""The REPL's line editor (prompt-toolkit), without Rich: the first prompt of a chat is drawn
before Rich, pydantic, the event models and the tools are imported (ui/startup.py), so the
editor it uses is built here, where nothing else is imported.

Keys: Enter sends; Alt-Enter, Esc Enter and Ctrl-J insert a newline; Ctrl-C clears a line with
text in it and, on an empty line, raises `EmptyLineInterrupt` (the REPL leaves at the second in
a row); Ctrl-X Ctrl-E and Ctrl-G open the message in $VISUAL / $EDITOR, and what is saved comes
back into the line, to send with Enter (ui/repl.py lists them all). Completion (/commands,
@paths) is added once the session exists (ui/completion.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import History

PROMPT = "› "


EXIT_HINT = "Press Ctrl-C again to exit"
"""Said after a Ctrl-C on an empty prompt (the REPL's, and the one while the session loads)."""


class EmptyLineInterrupt(KeyboardInterrupt):
    """Ctrl-C at a prompt with nothing typed (a Ctrl-C on text only clears it)."""


def prompt_session(history: History) -> PromptSession[str]:
    """The REPL's PromptSession over `history`: one per chat, so the history it shows and the
    keys typed ahead (prompt-toolkit keeps them per input) carry over from prompt to prompt."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    kb = KeyBindings()

    @kb.add("escape", "enter")
    @kb.add("escape", "c-j")
    @kb.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        empty = not event.current_buffer.text
        event.app.exit(exception=EmptyLineInterrupt() if empty else KeyboardInterrupt(),
                       style="class:aborting")

    @kb.add("c-g")
    def _editor(event: KeyPressEvent) -> None:
        event.current_buffer.open_in_editor()

    return PromptSession(history=history, key_bindings=kb, multiline=False,
                         enable_open_in_editor=True,
                         prompt_continuation=lambda width, n, soft: "… ")
