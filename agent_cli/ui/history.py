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
        self.pending: list[bytes] = []
        """Entries the file refused, oldest first, written before the next one."""
        self.fault: str | None = None
        self._unsaid: str | None = None
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
        from agent_cli.write_faults import write_atomic

        write_atomic(self.path, b"".join(_entry(text) for text in cleaned),
                     what="the prompt history")
        tighten_file(self.path)

    def store_string(self, string: str) -> None:
        """Append one entry. A refused write (a full disk, a read-only home, no file
        descriptors) never raises into prompt-toolkit (which would print "Exception ... Press
        ENTER to continue" and lose the line): the entry is kept in memory, written before the
        next one once the file takes writes again, and the fault is said once (`take_fault`)."""
        self.pending.append(_entry(self.redactor.text(string)))
        self.flush()

    def flush(self) -> bool:
        """Write the entries kept in memory, whole or not at all; True when none is left."""
        if not self.pending:
            return True
        from agent_cli.write_faults import WriteFault, append_whole, writing

        data = b"".join(self.pending)
        try:
            with writing(self.path, "the prompt history", retry=HISTORY_RETRY):
                fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
                try:
                    append_whole(fd, data)  # no half entry left behind
                finally:
                    os.close(fd)
        except WriteFault as e:
            if self.fault is None:
                self.fault = str(e)
                self._unsaid = self.fault
            return False
        self.pending.clear()
        self.fault = None
        return True

    def take_fault(self) -> str | None:
        """The sentence of a new write fault, once (the REPL prints it after the line)."""
        said, self._unsaid = self._unsaid, None
        return said


HISTORY_RETRY = "the lines typed meanwhile are kept in memory and written then"


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

    def flush(self) -> bool:
        """The file's entries kept in memory, written now if it can (RedactedFileHistory)."""
        flush = getattr(self._file, "flush", None)
        return bool(flush()) if callable(flush) else True

    def take_fault(self) -> str | None:
        """The file's new write fault, once (see RedactedFileHistory.take_fault)."""
        take = getattr(self._file, "take_fault", None)
        return take() if callable(take) else None
