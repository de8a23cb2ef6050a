"""The one confirm: every y/N question agent-cli asks a person is asked here.

Approval panels (ui/panel.py), undo (ui/undo_view.py), `agent-cli trust`, changed project
instructions (ui/instructions_prompt.py) and `mcp accept` go through `Asker` (a new question, such
as an import view, calls `Asker.confirm` or `confirm_on_terminal`), so one set of rules holds for
each of them:

- the whole of what the yes is about is put on screen first, never cut: a body taller than the
  terminal is paged, and the question comes only after its last line was written;
- the pager takes single keys, as `less` does: space or Enter for the next page, G for the rest,
  q (or Esc, Ctrl-C) to stop, which denies;
- keys typed before a question appeared are discarded (ui/terminal.discard_typeahead), and the
  answer is read by a fresh line editor (no history, no default, no completion): a `y` typed
  ahead while a server started or a pager scrolled never answers;
- only `y`/`yes` accepts (approval.read_answer); Enter, EOF, Ctrl-C and anything else deny;
- Esc at the optional reason prompt cancels the reason (no ESC byte is ever sent as one).

`tests/adversarial/test_trusted_confirm.py` scans the code for any other reader of a y/N.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleRenderable

from agent_cli.approval import Answer, read_answer
from agent_cli.ui.safe_rich import safe
from agent_cli.ui.terminal import default_input, discard_typeahead, stdin_is_terminal

ReadLine = Callable[[str], str]
"""Shows a prompt, returns the line typed; EOFError / KeyboardInterrupt mean no answer."""
ReadKey = Callable[[str], str]
"""Shows a prompt, returns one key: a character, "\\r" for Enter, "\\x1b" for Esc."""

PAGE_PROMPT = "-- more ({shown:,} of {total:,} lines): space or Enter for the next page, G for " \
              "the rest, q to deny -- "
STOP_KEYS = ("q", "Q", "\x1b", "\x03", "\x04")
"""Keys at a page that stop (deny): q, Esc, Ctrl-C, Ctrl-D."""
RESIZED_NOTE = ("The terminal was resized: the text is shown again, laid out for {width:,} "
                "columns; answer after its last line.")


def tall_note(lines: int, height: int) -> str:
    return (f"This is {lines:,} lines long, taller than the terminal ({height:,} rows): it is "
            "shown a page at a time, and the question comes after its last line.")


def fresh_key(message: str) -> str:
    """One key read on the terminal, by a prompt made for it alone (nothing echoed)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.keys import Keys

    kb = KeyBindings()

    def answer(result: str | None) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            event.app.exit(result=event.data if result is None else result)
        return handler

    kb.add(Keys.Any)(answer(None))
    for key, result in (("enter", "\r"), ("c-j", "\r"), ("escape", "\x1b"), ("c-c", "\x03"),
                        ("c-d", "\x04"), ("space", " ")):
        kb.add(key, eager=True)(answer(result))
    session: PromptSession[str] = PromptSession(
        key_bindings=kb, completer=None, auto_suggest=None, enable_history_search=False,
        mouse_support=False, enable_system_prompt=False, enable_suspend=False)
    return session.prompt(message)


def key_of_line(read: ReadLine) -> ReadKey:
    """A key reader over a line reader (no terminal, or a test's scripted person): the line's
    first character, Enter for an empty line."""
    def key(message: str) -> str:
        return read(message).strip()[:1] or "\r"
    return key


class Asker:
    """Asks a person on `console`: pages what the question is about, then reads one fresh
    answer. `read_line` / `read_key` default to the terminal (a fresh line editor, a single
    key); a line reader given alone also answers the pages (its first character)."""

    def __init__(self, console: Console, read_line: ReadLine | None = None,
                 read_key: ReadKey | None = None, *, flush: bool = True) -> None:
        self.console = console
        self._line = read_line
        self._key = read_key if read_key is not None else (
            key_of_line(read_line) if read_line is not None else None)
        self.flush = flush

    def line(self, message: str, *, fresh: bool = True) -> str:
        """One line; with `fresh`, keys typed before the prompt appeared are dropped."""
        if self._line is None:
            self._line = default_input()
        if fresh and self.flush:
            discard_typeahead()
        return self._line(message)

    def key(self, message: str) -> str:
        if self._key is None:
            from agent_cli.ui.terminal import fresh_prompt

            # a single key where the line editor runs (a terminal, TERM not dumb); else lines
            self._key = fresh_key if default_input() is fresh_prompt else key_of_line(self.line)
        if self.flush:
            discard_typeahead()
        return self._key(message)

    def size(self) -> tuple[int, int]:
        size = self.console.size  # read from the terminal each time (it may have been resized)
        return size.width, size.height

    def page(self, body: ConsoleRenderable, *, note: Callable[[int, int], str] = tall_note
             ) -> tuple[int, int] | None:
        """Put the whole of `body` on screen; the terminal size it was laid out for, or None
        when the person stopped before its end. A resize at a page's prompt lays it out again
        and shows it again from the top."""
        c = self.console
        with c.capture() as cap:
            c.print(body, crop=False)
        lines = cap.get().splitlines(keepends=True)
        size = self.size()
        room = max(size[1] - 3, 5)
        if len(lines) <= room:
            c.print(body, crop=False)  # through the console: a recording console records it
            return size
        c.print(safe(note(len(lines), size[1]), "bold yellow"))
        room = max(room - 1, 4)
        shown = 0
        while shown < len(lines):
            page = lines[shown:shown + room]
            c.file.write("".join(page))
            c.file.flush()
            shown += len(page)
            if shown >= len(lines):
                break
            try:
                key = self.key(PAGE_PROMPT.format(shown=shown, total=len(lines)))
            except (EOFError, KeyboardInterrupt):
                return None
            if key in STOP_KEYS:
                return None
            if self.size() != size:
                c.print(safe(RESIZED_NOTE.format(width=self.size()[0]), "bold yellow"))
                return self.page(body, note=note)
            if key in ("g", "G"):
                room = len(lines)
        return size

    def answer(self, question: str) -> Answer | None:
        """The answer to `question` (typeahead dropped first); None for EOF, stop for Ctrl-C."""
        try:
            return read_answer(self.line(question))
        except EOFError:
            return None
        except KeyboardInterrupt:
            return Answer("stop")

    def reason(self, prompt: str = "Reason (optional): ") -> str | None:
        """An optional reason after a bare no; Esc, Ctrl-C or EOF cancel it (None)."""
        try:
            text = self.line(prompt, fresh=False)
        except (EOFError, KeyboardInterrupt):
            return None
        if "\x1b" in text:
            return None
        return text.strip() or None

    def confirm(self, body: ConsoleRenderable | None, question: str) -> bool:
        """Show all of `body`, then ask; True only for a `y`/`yes` typed after its end."""
        if body is not None and self.page(body) is None:
            return False
        got = self.answer(question)
        return got is not None and got.kind == "approve"


    def keep(self, body: ConsoleRenderable | None, question: str) -> bool:
        """A question whose default is yes (`Keep these changes? [Y/n]`, after an approved
        command): `body` shown whole first; False only for `n`/`no` typed after its end (or `q`
        at its pager); Enter, EOF and Ctrl-C keep."""
        if body is not None and self.page(body) is None:
            return False
        try:
            text = self.line(question)
        except (EOFError, KeyboardInterrupt):
            return True
        return text.strip().lower() not in ("n", "no")


def terminal_asker(console: Console) -> Asker | None:
    """An Asker on the terminal, or None when no person can be asked (stdin not a terminal)."""
    return Asker(console) if stdin_is_terminal() else None


def confirm_if_terminal(console: Console, body: ConsoleRenderable | None, question: str
                        ) -> bool | None:
    """`confirm_on_terminal` for a caller that says something else when no one can be asked:
    None when there is no terminal."""
    asker = terminal_asker(console)
    return None if asker is None else asker.confirm(body, question)


def confirm_on_terminal(console: Console, body: ConsoleRenderable | None, question: str) -> bool:
    """The one call for a command that asks once (trust, mcp accept, mcp import): False when
    there is no terminal (the caller says what flag to use instead)."""
    asker = terminal_asker(console)
    return asker is not None and asker.confirm(body, question)
