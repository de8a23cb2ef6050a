"""The REPL's line editor (prompt-toolkit), without Rich: the first prompt of a chat is drawn
before Rich, pydantic, the event models and the tools are imported (ui/startup.py), so the
editor it uses is built here, where nothing else is imported.

Keys: Enter sends; Alt-Enter, Esc Enter and Ctrl-J insert a newline (ui/repl.py lists them all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import History

PROMPT = "› "


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

    return PromptSession(history=history, key_bindings=kb, multiline=False,
                         prompt_continuation=lambda width, n, soft: "… ")
