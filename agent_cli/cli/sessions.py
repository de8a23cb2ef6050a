"""Picking and resuming a saved session: `chat --resume [LOG]`, `--continue`.

LOG resolution itself is log_store's (one function for every command); this module adds what the
REPL needs around it: the picker of recent sessions, the recap of the last turns, and the choice
of workspace when resuming from another folder.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from agent_cli.config import Settings
    from agent_cli.conversation import History

PICK = ""
"""The value `--resume` gets when given no LOG: open the picker."""
PICKER_SIZE = 9
RECAP_TURNS = 3


def pick(settings: Settings, workspace: Path, console: Console,
         ask: Any = None) -> Path:
    """A numbered list of this workspace's recent sessions; the answer picks one (Enter: the
    newest). `ask` reads the answer (prompt-toolkit's prompt by default)."""
    from rich.table import Table

    from agent_cli.log import store as log_store
    from agent_cli.log.show import summarize
    from agent_cli.safe_text import one_line
    from agent_cli.ui.safe_rich import safe

    found: list[Path] = []
    for path, _start in log_store.for_workspace(settings, workspace):
        found.append(path)
        if len(found) >= PICKER_SIZE:
            break
    if not found:
        raise log_store.LogNotFound(
            f"No saved session for workspace {workspace} in {log_store.sessions_dir(settings)}; "
            "start one with `agent-cli chat`, or name a log with --resume LOG.")
    table = Table(box=None, show_header=True, header_style="bold", padding=(0, 1))
    for name in ("#", "started (UTC)", "first prompt", "calls", "id"):
        table.add_column(name, overflow="fold")
    for i, path in enumerate(found, 1):
        s = summarize(path)
        started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.started)) if s.started else "?"
        table.add_row(f"{i:d}", safe(started), safe(one_line(s.first_prompt, 60)), f"{s.calls:d}",
                      safe(log_store.log_id(path)))
    console.print("Recent sessions in this workspace:")
    console.print(table)
    if ask is None:
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession()
        def ask() -> str:
            return session.prompt(f"Resume which? [1-{len(found)}, Enter = 1, q = quit] ")
    while True:
        try:
            answer = str(ask()).strip().lower()
        except (EOFError, KeyboardInterrupt):
            answer = "q"
        if answer in ("q", "quit"):
            raise UsageError("No session picked; nothing resumed.")
        if answer == "":
            return found[0]
        if answer.isdigit() and 1 <= int(answer) <= len(found):
            return found[int(answer) - 1]
        console.print(safe(f"Type a number from 1 to {len(found):d}, Enter for the newest, or q.",
                           "yellow"))


def recap(history: History, turns: int = RECAP_TURNS) -> RenderableType:
    """The last few exchanges of a resumed conversation: what you asked, what the model said
    (one line each, sanitised), so you know where you are."""
    from rich.console import Group
    from rich.text import Text

    from agent_cli.conversation import tool_uses
    from agent_cli.safe_text import one_line
    from agent_cli.ui.safe_rich import safe

    exchanges: list[tuple[str, str]] = []
    for message in history:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else \
            content if isinstance(content, list) else []
        texts = [str(b.get("text", "")) for b in blocks
                 if isinstance(b, dict) and b.get("type") == "text" and b.get("text")]
        calls = [str(b.get("name")) for b in tool_uses(blocks)]
        if message.get("role") == "user" and texts:
            exchanges.append(("you", " ".join(texts)))
        elif message.get("role") == "assistant":
            said = " ".join(texts)
            if calls:
                said = (said + " " if said else "") + "[called " + ", ".join(calls) + "]"
            if said:
                exchanges.append(("model", said))
    user_starts = [i for i, (who, _) in enumerate(exchanges) if who == "you"]
    keep = exchanges[user_starts[-turns]:] if len(user_starts) >= turns else exchanges
    lines: list[Any] = [Text(f"Recap of the last {min(turns, len(user_starts)):d} turn(s):",
                             style="bold")]
    for who, text in keep:
        lines.append(Text.assemble(safe(f"  {who}: ", "cyan" if who == "you" else "green"),
                                   safe(one_line(text, 160))))
    if len(lines) == 1:
        lines.append(Text("  (no messages yet)", style="dim"))
    return Group(*lines)


def workspace_note(recorded: str | None, named: Path | None, here: Path) -> tuple[Path | None,
                                                                                 str | None]:
    """Which workspace a resumed session uses, and the sentence that says so when it is not the
    obvious one. `named` is --workspace (always wins)."""
    if not recorded:
        return None, None
    rec = Path(recorded)
    if named is not None:
        if rec.resolve() != named.resolve():
            return None, (f"This session was recorded in {rec}; it continues in {named} "
                          "(--workspace).")
        return None, None
    if rec.resolve() == here.resolve():
        return None, None
    if rec.is_dir():
        return rec, f"Workspace: {rec} (recorded in the log; --workspace DIR to use another)."
    return None, (f"The recorded workspace {rec} no longer exists: this session continues in "
                  f"the current folder {here}.")
