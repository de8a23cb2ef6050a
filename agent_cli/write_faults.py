"""Faults the machine throws at a write, as one sentence each; and the one atomic write.

Every file agent-cli writes (the session log, the log key, the prompt history, pins, the undo
store, MCP server logs, eval reports, HTML exports, MCP config edits) can meet a full disk, a
used-up quota, a read-only mount, a permission it lacks or a process out of file descriptors.
None of these is a bug to show as a traceback: it is a fact about the machine the user can fix.
`fault(err, path, what=...)` turns the OSError into a `WriteFault` whose message names the file
(or the folder holding it), the cause and what to do; `writing(path, what)` wraps one write in
that conversion; `write_atomic` is the one way to replace (or create) a small file whole: a
temporary file in the same folder, fsynced, renamed (or linked) into place, and removed on any
failure, so a refused write leaves no debris behind.

Stdlib only (layer 0): every layer that writes uses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from agent_cli.errors import AgentError, TurnStop

RETRY = "try again"
"""What to do once the cause is fixed, when the caller has nothing more specific to say."""

REPL_RETRY = "press Enter to retry, or Ctrl-D to leave"
"""What to do in the chat: the message stays in the input line, Enter sends it again."""

EXIT_CODE = 10
"""Exit status of a command stopped because agent-cli could not write one of its files
(README, "Exit codes")."""


class WriteFault(AgentError):
    """A file could not be written because of the machine (full disk, read-only mount, no
    permission, no file descriptors); the message says which file, why, and what to do."""

    exit_code = EXIT_CODE

    def __init__(self, message: str, *, path: Path, errno_: int | None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno_


def shown(path: Path) -> str:
    """A path as the user knows it: their home folder as `~`."""
    text = str(path)
    home = os.environ.get("HOME", "")
    if home and home != "/" and (text == home or text.startswith(home.rstrip("/") + "/")):
        return "~" + text[len(home.rstrip("/")):]
    return text


def _cause(code: int | None, path: Path, strerror: str) -> str:
    """The cause and the remedy, as the second half of the sentence."""
    folder = shown(path.parent)
    if code == errno.ENOSPC:
        return f"the disk holding {folder} is full: free space and "
    if code == getattr(errno, "EDQUOT", -1):
        return f"your disk quota on the disk holding {folder} is used up: free space and "
    if code == errno.EROFS:
        return (f"{folder} is on a read-only file system: make it writable (or point "
                "AGENT_CLI_HOME, --log or the setting that names it somewhere writable) and ")
    if code in (errno.EACCES, errno.EPERM):
        return (f"permission denied (check who owns {shown(path)} and {folder}, and their "
                "modes) and ")
    if code in (errno.EMFILE, errno.ENFILE):
        scope = "this process" if code == errno.EMFILE else "the system"
        return (f"{scope} has no file descriptors left: close other programs or raise the "
                "limit (`ulimit -n`) and ")
    return f"{strerror or 'the system refused it'}: fix that and "


def fault(err: OSError, path: Path | str, *, what: str, retry: str = RETRY,
          doing: str = "write") -> WriteFault:
    """The sentence for `err` met while writing `path` (`what` names it for the user: "the
    session log", "the prompt history"; `doing` says what was tried, "write" or "open")."""
    p = Path(path)
    where = shown(p)
    message = (f"Could not {doing} {what} {where}: {_cause(err.errno, p, err.strerror or '')}"
               f"{retry}.")
    return WriteFault(message, path=p, errno_=err.errno)


@contextlib.contextmanager
def writing(path: Path | str, what: str, *, retry: str = RETRY) -> Iterator[None]:
    """Any OSError inside becomes the WriteFault that names `path` (wrap one write call)."""
    try:
        yield
    except WriteFault:
        raise
    except OSError as e:
        raise fault(e, path, what=what, retry=retry) from None


def write_all(fd: int, data: bytes) -> None:
    """os.write until all of `data` is written (one write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def append_whole(fd: int, data: bytes, *, fsync: bool = False) -> None:
    """Append `data` to the file open (O_APPEND) on `fd`, whole or not at all: on any failure the
    file is cut back to its size before, so a refused write leaves no partial record (a log
    line, a history entry). The OSError is raised on, for the caller's sentence."""
    size = os.fstat(fd).st_size
    try:
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise


def write_atomic(path: Path, data: bytes, *, what: str, mode: int = 0o600,
                 exclusive: bool = False, retry: str = RETRY) -> bool:
    """Put `data` at `path` whole or not at all: written to a temporary file beside it
    (`.NAME.<random>.tmp`, created with `mode`), fsynced, then renamed over `path`, or with
    `exclusive` linked to it only if `path` does not exist yet (then False when it did: someone
    else made it first). The temporary file is removed on every outcome, failures included.
    Any OSError becomes a WriteFault naming `path`."""
    import secrets

    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    made = False
    try:
        with writing(path, what, retry=retry):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                         mode)
            made = True
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if not exclusive:
                os.replace(tmp, path)
                made = False
                return True
            try:
                os.link(tmp, path)  # atomic: whoever links first wins
            except FileExistsError:
                return False
            return True
    finally:
        if made:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class LogUnwritable(WriteFault, TurnStop):
    """The session log refused a record. It is both a turn stop (the loop catches it where it
    catches every stop: the call that needed the record does not run, the calls still waiting
    are answered) and an error a user can meet (a command prints its sentence and exits 10).
    `dropped`: the record was not kept (it would have started something: a turn, a call, the
    session), as opposed to kept in memory, chained, to be written first when the log can be
    written again (docs/session-log.md, "When the log cannot be written")."""

    reason = "log_unwritable"

    def __init__(self, message: str, *, path: Path, errno_: int | None,
                 dropped: bool) -> None:
        super().__init__(message, path=path, errno_=errno_)
        self.dropped = dropped


def stdout_name() -> Path:
    """What standard output is, for a sentence: the file it was sent to (`> report.json`), or
    "standard output" when that cannot be told."""
    with contextlib.suppress(OSError):
        target = os.readlink("/proc/self/fd/1")
        if target.startswith("/"):
            return Path(target)
    return Path("standard output")


@contextlib.contextmanager
def writing_stdout(what: str) -> Iterator[None]:
    """`writing` for a report printed to standard output (an eval report, an HTML export sent
    to a file on a full disk). After a refusal, standard output is pointed at /dev/null, so the
    interpreter's last flush of what stayed buffered does not print a second error."""
    try:
        yield
    except OSError as e:
        refused = fault(e, stdout_name(), what=what)
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        raise refused from None
