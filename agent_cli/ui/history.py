"""The prompt history (AGENT_CLI_HOME/history), kept like the session log: redacted and private.

People paste API keys and passwords into the prompt ("use this token: ghp_..."). prompt-toolkit's
FileHistory keeps every line verbatim in a file created with the umask (0644: readable by every
user of the machine). This subclass writes each entry through the same redactor as the log, to a
file created 0600 (an older one is tightened), and on opening rewrites an existing history whose
entries the redactor would change, so secrets saved by an older version do not stay on disk.

Up-arrow in the running session still recalls what was typed (prompt-toolkit keeps its own list in
memory); only what reaches the disk is redacted.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit.history import FileHistory, History

from agent_cli.private_files import open_private, private_dir, tighten_file


def _entry(text: str) -> bytes:
    """One entry in FileHistory's own format, so prompt-toolkit reads it back."""
    lines = "".join(f"+{line}\n" for line in text.split("\n"))
    return f"\n# {datetime.datetime.now()}\n{lines}".encode("utf-8", errors="replace")


class RedactedFileHistory(FileHistory):
    """FileHistory that never writes a secret with a recognisable shape, into a 0600 file."""

    def __init__(self, path: Path, redactor: Any = None) -> None:
        if redactor is None:
            from agent_cli.redact import default_redactor

            redactor = default_redactor()
        self.redactor = redactor
        self.path = path
        private_dir(path.parent)
        os.close(open_private(path, os.O_WRONLY | os.O_APPEND))  # create 0600 / tighten
        super().__init__(str(path))
        self._scrub_existing()

    def _scrub_existing(self) -> None:
        """Rewrite the file if an entry holds something the redactor would hide."""
        entries = list(reversed(list(super().load_history_strings())))  # oldest first
        cleaned = [self.redactor.text(e) for e in entries]
        if cleaned == entries:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            with os.fdopen(fd, "wb") as f:
                for text in cleaned:
                    f.write(_entry(text))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        tighten_file(self.path)

    def store_string(self, string: str) -> None:
        fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
        with os.fdopen(fd, "ab") as f:
            f.write(_entry(self.redactor.text(string)))


class DeferredHistory(History):
    """The REPL's history while the session is still being built (ui/startup.py): lines sent
    then are kept in memory, and written (redacted) once `attach` gives the file, whose path and
    redactor come from the settings. Up and Down show the file's entries from then on."""

    def __init__(self) -> None:
        super().__init__()
        self._file: History | None = None
        self._pending: list[str] = []

    def attach(self, file: History) -> None:
        """From now on entries go to `file`; those sent before are written to it now (oldest
        first), and its own entries follow them in Up-arrow order."""
        self._file = file
        older = list(file.load_history_strings())
        self._loaded_strings = [*self._loaded_strings, *older]
        self._loaded = True
        pending, self._pending = self._pending, []
        for text in pending:
            file.store_string(text)

    def load_history_strings(self) -> Iterable[str]:
        return list(self._file.load_history_strings()) if self._file is not None else []

    def store_string(self, string: str) -> None:
        if self._file is None:
            self._pending.append(string)
        else:
            self._file.store_string(string)
