"""write_file: create or overwrite a text file, with a diff preview and a checked write.

The panel says CREATE or OVERWRITE and shows the diff; `snapshot` records what the diff was
computed from, and the write refuses if the file changed since (approval binds to what was shown).
"""

import difflib
import hashlib

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import PathRefused
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import (
    FileState,
    display_path,
    file_state,
    read_bytes_capped,
    read_text_capped,
    resolve_in_workspace,
    write_bytes_guarded,
)


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File path, relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


def snapshot(args: Args, ctx: ToolContext) -> FileState:
    return file_state(ctx.workspace, args.path)


def preview(args: Args, ctx: ToolContext) -> str:
    try:
        real = resolve_in_workspace(ctx.workspace, args.path)
        state = ctx.snapshot if isinstance(ctx.snapshot, FileState) else snapshot(args, ctx)
    except PathRefused as e:
        return f"WILL FAIL, nothing would change: {e}"
    shown = display_path(ctx.workspace, real)
    new_size = len(args.content.encode("utf-8"))
    if not state.exists:
        header = f"CREATE new file {shown} ({new_size} bytes)\n"
        old_lines: list[str] = []
    else:
        header = f"OVERWRITE existing file {shown} ({state.size} -> {new_size} bytes)\n"
        old, _size, cut = read_text_capped(ctx.workspace, args.path, ctx.max_read_bytes)
        if cut:
            return header + f"(the current file is larger than {ctx.max_read_bytes} bytes; no diff)"
        old_lines = old.splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, args.content.splitlines(keepends=True),
                                fromfile=f"a/{shown}" if state.exists else "/dev/null",
                                tofile=f"b/{shown}")
    return header + "".join(diff)


def run(args: Args, ctx: ToolContext) -> str:
    expected = ctx.snapshot if isinstance(ctx.snapshot, FileState) else None
    data = args.content.encode("utf-8")
    kind = "created" if expected is not None and not expected.exists else "wrote"
    real = write_bytes_guarded(ctx.workspace, args.path, data, expected)
    return f"{kind} {display_path(ctx.workspace, real)} ({len(data)} bytes)"


def verify(args: Args, ctx: ToolContext, _out: object) -> "str | None":
    want = args.content.encode("utf-8")
    got, size, _cut = read_bytes_capped(ctx.workspace, args.path, len(want))
    if size != len(want) or got != want:
        return (f"the file holds {size} bytes, expected {len(want)} with sha256 "
                f"{hashlib.sha256(want).hexdigest()[:12]}")
    return None


TOOL = Tool(
    name="write_file",
    description=(
        "Create a file or replace its whole content. The user sees a diff and must approve. "
        "Prefer edit_file for small changes to existing files."
    ),
    args=Args,
    effect="write",
    run=run,
    preview=preview,
    snapshot=snapshot,
    verify=verify,
)
