"""What a typed line becomes before it is sent: the habits people bring from Claude Code, Codex
and Gemini CLI. `!cmd` runs the user's own shell command (ui/user_shell.py) and sends nothing;
`@path` attaches the file (ui/mentions.py); the output of `!` commands run since the last
message goes with the next one. The REPL calls `prepare` at one place, for typed lines only
(a /retry resends what was sent, attachments included, and is not read for mentions again);
a line that starts with `/` (a command) is left as it is. `/init` sends INIT_PROMPT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from agent_cli.conversation import with_attachments
from agent_cli.ui.safe_rich import safe

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.session import Session

INIT_PROMPT = (
    "Please draft an AGENTS.md for this workspace: the file coding agents read for how the "
    "project works. First look around (list the folders, read the README, the build and test "
    "configuration and a few central source files). Then write AGENTS.md at the workspace root "
    "with write_file (or, if one exists already, read it and improve it with edit_file), "
    "covering: what the project is, how to set it up, build, run the tests and lint, the layout "
    "of the code, and the conventions a contributor must follow. Keep it short and concrete: "
    "commands that work here, not general advice.")
"""What /init sends: a canned message through the normal turn, so the file is proposed in the
write panel like any other write, and nothing is written without a yes."""


def prepare(session: Session, console: Console, line: str) -> str:
    """The message to send for the typed `line`; "" when nothing is to be sent (a `!` command
    ran). A `/` line (a command, or a message that starts with a path) is left as typed."""
    from agent_cli.ui.mentions import attach_mentions, mentioned
    from agent_cli.ui.user_shell import run_user_shell, take_pending

    if line.startswith("/"):
        return line
    if line.startswith("!"):
        command = line[1:].strip()
        if not command:
            console.print(Text("Type a shell command after !, e.g. !git status.",
                               style="yellow"))
        else:
            console.print(Text("Running your command (Ctrl-C stops it)…", style="dim"))
            run_user_shell(session, command)
        return ""
    attachments = take_pending(session)
    if mentioned(line):
        got = attach_mentions(session, line)
        from agent_cli.ui.render import hidden_line

        for item, size, hidden in zip(got.attachments, got.sizes, got.hidden, strict=True):
            console.print(Text("Attached ", style="green") + safe(item.uri, "bold")
                          + safe(f" ({human_size(size)})", "green"))
            if hidden:
                console.print(hidden_line(hidden, None))
        for sentence in got.refused:
            console.print(safe(sentence, "yellow"))
        attachments += got.attachments
    return with_attachments(line, attachments)


def human_size(n: int) -> str:
    """2.1 kB, as people read sizes (and as the AGENTS.md question says them)."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"
