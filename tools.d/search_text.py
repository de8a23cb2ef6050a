"""search_text: a regular-expression search over the text files of the workspace.

The walk goes through folder descriptors without following links, and every file is opened
non-blocking with O_NOFOLLOW, so a link out of the workspace or a FIFO is skipped, never read.
"""

import os
import re
import stat
from collections.abc import Generator
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import ToolFailed
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import (
    display_path,
    is_protected_file,
    open_file_read,
    protected_reason,
    read_fd,
    resolve_in_workspace,
)

MAX_MATCHES = 500
MAX_FILE_BYTES = 2_000_000
MAX_LINE_CHARS = 300
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


def _matches(rx: "re.Pattern[str]", shown: str, data: bytes, out: "list[str]") -> bool:
    """Append matching lines; True when the match limit is reached."""
    if b"\x00" in data[:4096]:
        return False
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if rx.search(line):
            out.append(f"{shown}:{n}: {line[:MAX_LINE_CHARS]}")
            if len(out) >= MAX_MATCHES:
                return True
    return False


def run(args: Args, ctx: ToolContext) -> str:
    try:
        rx = re.compile(args.pattern)
    except re.error as e:
        raise ToolFailed(f"the pattern is not a valid regular expression: {e}") from None
    real = resolve_in_workspace(ctx.workspace, args.path)
    out: list[str] = []
    full = False
    if not real.is_dir():
        with open_file_read(ctx.workspace, args.path) as (fd, _st, _real):
            whole = read_fd(fd, MAX_FILE_BYTES)
        full = _matches(rx, display_path(ctx.workspace, real), whole, out)
    else:
        walker = cast("Generator[tuple[str, list[str], list[str], int], None, None]",
                      os.fwalk(real, follow_symlinks=False))
        for dirpath, dirnames, filenames, dir_fd in walker:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                                 and protected_reason(Path(dirpath) / d) is None)
            for name in sorted(filenames):
                if ctx.cancel.is_set():
                    break
                data = _read_at(dir_fd, name)
                if data is None:
                    continue
                shown = display_path(ctx.workspace, Path(dirpath) / name)
                full = _matches(rx, shown, data, out)
                if full:
                    break
            if full or ctx.cancel.is_set():
                break
        walker.close()  # closes the folder descriptors still open
    if full:
        out.append(f"[... stopped at {MAX_MATCHES} matches ...]")
    return "\n".join(out) if out else "no matches"


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
