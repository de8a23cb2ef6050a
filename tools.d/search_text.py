"""search_text: a regular-expression search over the text files of the workspace."""

import os
import re

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import ToolFailed
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import display_path, resolve_in_workspace

MAX_MATCHES = 500
MAX_FILE_BYTES = 2_000_000
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache"}


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="Python regular expression to search for.")
    path: str = Field(".", description="File or folder to search, relative to the workspace.")


def _files(root: str) -> "list[str]":
    if os.path.isfile(root):
        return [root]
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                found.append(full)
    return found


def run(args: Args, ctx: ToolContext) -> str:
    try:
        rx = re.compile(args.pattern)
    except re.error as e:
        raise ToolFailed(f"the pattern is not a valid regular expression: {e}") from None
    from pathlib import Path

    real = resolve_in_workspace(ctx.workspace, args.path)
    out: list[str] = []
    for f in _files(str(real)):
        if ctx.cancel.is_set():
            break
        try:
            if os.path.getsize(f) > MAX_FILE_BYTES:
                continue
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"\x00" in data[:4096]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                out.append(f"{display_path(ctx.workspace, Path(f))}:{n}: {line[:300]}")
                if len(out) >= MAX_MATCHES:
                    out.append(f"[... stopped at {MAX_MATCHES} matches ...]")
                    return "\n".join(out)
    return "\n".join(out) if out else "no matches"


TOOL = Tool(
    name="search_text",
    description=(
        "Search text files in the workspace for a Python regular expression. Returns "
        "path:line: text for each matching line (binary files and symlinks are skipped)."
    ),
    args=Args,
    effect="read",
    run=run,
)
