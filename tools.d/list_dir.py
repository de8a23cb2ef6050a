"""list_dir: list a folder inside the workspace (links are shown, never followed out)."""

import os
import stat

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import PathRefused
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import resolve_in_workspace

MAX_ENTRIES = 2000


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", description="Folder path, relative to the workspace.")


def _kind(entry: os.DirEntry[str]) -> str:
    st = entry.stat(follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        return "link -> " + os.readlink(entry.path)
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return f"file {st.st_size} bytes"
    return "other"


def run(args: Args, ctx: ToolContext) -> str:
    real = resolve_in_workspace(ctx.workspace, args.path)
    if not real.is_dir():
        raise PathRefused(f"{args.path!r} is not a folder.")
    with os.scandir(real) as it:
        entries = sorted(it, key=lambda e: e.name)
    lines = [f"{e.name}{'/' if e.is_dir(follow_symlinks=False) else ''}  ({_kind(e)})"
             for e in entries[:MAX_ENTRIES]]
    if len(entries) > MAX_ENTRIES:
        lines.append(f"[... {len(entries) - MAX_ENTRIES} more entries not shown ...]")
    return "\n".join(lines) if lines else "(empty folder)"


TOOL = Tool(
    name="list_dir",
    description="List the entries of a folder inside the workspace, with their kind and size.",
    args=Args,
    effect="read",
    run=run,
)
