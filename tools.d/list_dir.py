"""list_dir: list a folder inside the workspace (links are shown, never followed). Entries that
agent-cli's own state or a config deny rule keeps from the tools are left out, counted
(agent_cli/tools/walk.py)."""

import os
import stat

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import PathRefused
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import open_dir, resolve_in_workspace
from agent_cli.tools.walk import WalkCount, listed

MAX_ENTRIES = 2000


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", description="Folder path, relative to the workspace.")


def _describe(name: str, dir_fd: int) -> str:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return f"{name}  (vanished)"
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return f"{name}  (link -> {target}, not followed)"
    if stat.S_ISDIR(mode):
        return f"{name}/  (dir)"
    if stat.S_ISREG(mode):
        return f"{name}  (file {st.st_size} bytes)"
    if stat.S_ISFIFO(mode):
        return f"{name}  (fifo)"
    if stat.S_ISSOCK(mode):
        return f"{name}  (socket)"
    return f"{name}  (device or other)"


def run(args: Args, ctx: ToolContext) -> str:
    real = resolve_in_workspace(ctx.workspace, args.path)
    fd = open_dir(ctx.workspace, real, args.path)
    count = WalkCount()
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise PathRefused(f"{args.path!r} is not a folder.")
        names = listed(ctx, real, sorted(os.listdir(fd)), count)
        lines = [_describe(n, fd) for n in names[:MAX_ENTRIES]]
    finally:
        os.close(fd)
    if len(names) > MAX_ENTRIES:
        lines.append(f"[... {len(names) - MAX_ENTRIES} more entries not shown ...]")
    if count.note():
        lines.append(count.note())
    return "\n".join(lines) if lines else "(empty folder)"


TOOL = Tool(
    name="list_dir",
    description=(
        "List the entries of a folder inside the workspace, with their kind and size. Symbolic "
        "links are shown with their target and never followed."
    ),
    args=Args,
    effect="read",
    run=run,
)
