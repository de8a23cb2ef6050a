"""Completion at the REPL's prompt, as it is typed: `/commands` from the REPL's command table
(ui/repl.COMMANDS, read at each completion: a command added there completes without a second
list), and `@path` mentions from the workspace.

Paths go through the one guard (tools/paths.py): the folder listed is resolved there, so
nothing outside the workspace, under a kernel view or in agent-cli's own state is listed; it is
opened without following links; a link among its entries is offered only when it leads to a
place inside the workspace that is not protected. Completion only names files: what a mention
does when the message is sent is another module's (the same guard reads the file there).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from agent_cli.errors import PathRefused
from agent_cli.tools.paths import open_dir, resolve_in_workspace

MAX_ENTRIES_READ = 5000
"""How many entries of one folder are looked at (a huge folder must not stall typing)."""
MAX_SHOWN = 200


class ReplCompleter(Completer):
    """`/na` -> the commands starting so; `@src/ma` -> the workspace's entries starting so."""

    def __init__(self, commands: Callable[[], Iterable[tuple[str, str]]],
                 workspace: Path) -> None:
        self.commands = commands
        """(name, summary) of each command, read at each completion."""
        self.workspace = workspace

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and not any(c.isspace() for c in before):
            typed = before.lower()
            for name, summary in self.commands():
                if name.startswith(typed):
                    yield Completion(name, start_position=-len(before), display_meta=summary)
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word)

    def _paths(self, word: str) -> Iterator[Completion]:
        folder, _, prefix = word[1:].rpartition("/")
        if folder:
            folder += "/"
        for name, is_dir in self._entries(folder, prefix)[:MAX_SHOWN]:
            shown = name + ("/" if is_dir else "")
            yield Completion("@" + folder + shown, start_position=-len(word), display=shown)

    def _entries(self, folder: str, prefix: str) -> list[tuple[str, bool]]:
        """(name, is a folder) of the entries of `folder` (relative to the workspace) whose
        names start with `prefix`, sorted; hidden ones only when `prefix` starts with a dot."""
        raw = folder or "."
        try:
            real = resolve_in_workspace(self.workspace, raw)
            fd = open_dir(self.workspace, real, raw)
        except (PathRefused, OSError, ValueError):
            return []
        found: list[tuple[str, bool]] = []
        try:
            with os.scandir(fd) as listing:
                for count, entry in enumerate(listing):
                    if count >= MAX_ENTRIES_READ:
                        break
                    name = entry.name
                    if not name.startswith(prefix) or not name.isprintable() or (
                            name.startswith(".") and not prefix.startswith(".")):
                        continue  # (a name with control characters is not offered)
                    kind = self._kind(entry, folder + name)
                    if kind is not None:
                        found.append((name, kind))
        except OSError:
            return []
        finally:
            os.close(fd)
        return sorted(found)

    def _kind(self, entry: os.DirEntry[str], raw: str) -> bool | None:
        """Whether the entry is a folder; None when it is not offered (a link out of the
        workspace or into protected state, anything the guard refuses)."""
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                real = resolve_in_workspace(self.workspace, raw)
                return real.is_dir()
            resolve_in_workspace(self.workspace, raw)  # (protected state is not listed)
        except (PathRefused, OSError, ValueError):
            return None
        return stat.S_ISDIR(mode)
