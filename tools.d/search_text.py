"""search_text: a regular-expression search over the text files of the workspace.

The walk is the one walk helper's (agent_cli/tools/walk.py): folder descriptors, no link
followed, and agent-cli's own state and every file a config deny rule keeps from read_file left
out. Every file is opened non-blocking with O_NOFOLLOW, so a link out of the workspace or a FIFO is
skipped, never read.

The pattern comes from the model and runs without a panel, so it must not be able to freeze the
program: a catastrophic pattern such as `(a|aa)+$` backtracks for longer than the universe is old.
The stdlib `re` holds the interpreter lock for the whole match, so neither the tool timeout nor
Ctrl-C could stop it. The `regex` module matches with the lock released (`concurrent=True`) and
gives up after `timeout=` seconds: the search is done in slices that double in length (each at
most a quarter of the time left), up to the tool's deadline, and Ctrl-C (the cancel flag) is seen
between slices.
"""

import os
import stat
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import ToolFailed
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import (
    display_path,
    is_protected_file,
    open_file_read,
    read_fd,
    resolve_in_workspace,
)
from agent_cli.tools.walk import WalkCount, hidden, walk_files

if TYPE_CHECKING:
    import regex

MAX_MATCHES = 500
MAX_FILE_BYTES = 2_000_000
MAX_LINE_CHARS = 300
FIRST_SLICE_S = 0.25
"""The first time budget for one line; a line that needs more is tried again with twice as much,
until the tool's deadline. Ordinary lines take microseconds, so they never see a second slice."""
MIN_SLICE_S = 0.02
"""Less time than this left before the deadline: stop rather than start another slice."""
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache"}
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0))


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="Python regular expression to search for.")
    path: str = Field(".", description="File or folder to search, relative to the workspace.")


def _read_at(dir_fd: int, name: str) -> "bytes | None":
    """The bytes of a regular file (no link, no FIFO, not too big), or None to skip it."""
    try:
        fd = os.open(name, _FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES or is_protected_file(st):
            return None
        return read_fd(fd, MAX_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


class _Stopped(Exception):
    """The deadline passed or the user pressed Ctrl-C while a pattern was being matched."""

    def __init__(self, where: str, timed_out: bool) -> None:
        super().__init__(where)
        self.where = where
        self.timed_out = timed_out


class _Search:
    def __init__(self, rx: "regex.Pattern[str]", ctx: ToolContext) -> None:
        self.rx = rx
        self.ctx = ctx
        self.deadline = time.monotonic() + ctx.timeout_s

    def line_matches(self, line: str, where: str) -> bool:
        budget = FIRST_SLICE_S
        while True:
            remaining = self.deadline - time.monotonic()
            if self.ctx.cancel.is_set() or remaining <= MIN_SLICE_S:
                raise _Stopped(where, timed_out=not self.ctx.cancel.is_set())
            try:
                # The module's timeout runs on the matching thread's own clock, which on a busy
                # machine runs slower than the wall clock (3x at a load of 7 on 2 cores): a slice
                # of a quarter of the time left still ends before the deadline.
                return self.rx.search(line, timeout=min(budget, remaining / 4),
                                      concurrent=True) is not None
            except TimeoutError:
                budget *= 2

    def matches(self, shown: str, data: bytes, out: "list[str]") -> bool:
        """Append matching lines; True when the match limit is reached."""
        if b"\x00" in data[:4096]:
            return False
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if self.line_matches(line, f"{shown}:{n}"):
                out.append(f"{shown}:{n}: {line[:MAX_LINE_CHARS]}")
                if len(out) >= MAX_MATCHES:
                    return True
        return False


def _compile(pattern: str) -> Any:
    import regex  # imported on first use: start-up does not pay for it

    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise ToolFailed(f"the pattern is not a valid regular expression: {e}") from None


def run(args: Args, ctx: ToolContext) -> str:
    search = _Search(_compile(args.pattern), ctx)
    out: list[str] = []
    count = WalkCount()
    try:
        full = _search(args, ctx, search, out, count)
    except _Stopped as stop:
        if not stop.timed_out:
            raise KeyboardInterrupt from None  # the loop reports the interrupt
        found = "\n".join(out[:50])
        raise ToolFailed(
            f"the pattern took longer than the {ctx.timeout_s:g} s tool timeout on {stop.where} "
            "and the search was stopped. Patterns with nested repetition such as (a|aa)+$ can "
            "backtrack without end; simplify the pattern or search a smaller path."
            + (f" Matches found before it stopped:\n{found}" if found else "")) from None
    if full:
        out.append(f"[... stopped at {MAX_MATCHES} matches ...]")
    if count.note():
        out.append(count.note())
    return "\n".join(out) if out else "no matches"


def _search(args: Args, ctx: ToolContext, search: _Search, out: "list[str]",
            count: WalkCount) -> bool:
    real = resolve_in_workspace(ctx.workspace, args.path)
    full = False
    if not real.is_dir():
        if hidden(ctx, real, count):  # (say, a rule for read_file: the call itself passed)
            return False
        with open_file_read(ctx.workspace, args.path) as (fd, _st, _real):
            whole = read_fd(fd, MAX_FILE_BYTES)
        return search.matches(display_path(ctx.workspace, real), whole, out)
    files = walk_files(ctx, real, count, SKIP_DIRS)
    try:
        for dir_fd, name, path in files:
            if ctx.cancel.is_set():
                break
            data = _read_at(dir_fd, name)
            if data is None:
                continue
            full = search.matches(display_path(ctx.workspace, path), data, out)
            if full:
                break
    finally:
        files.close()
    return full


TOOL = Tool(
    name="search_text",
    description=(
        "Search text files in the workspace for a Python regular expression. Returns "
        "path:line: text for each matching line (binary files, symlinks and files over 2 MB "
        "are skipped)."
    ),
    args=Args,
    effect="read",
    run=run,
)
