"""write_file: create or overwrite a text file, with a diff preview and a checked write."""

import difflib
import hashlib
import os

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import PathRefused, ToolFailed
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import display_path, read_text_capped, resolve_in_workspace


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File path, relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


def _current(ctx: ToolContext, raw: str) -> "tuple[str | None, str | None]":
    """(text, sha256 of bytes) of the file as it is now, or (None, None) if it does not exist."""
    real = resolve_in_workspace(ctx.workspace, raw)
    if not os.path.lexists(real):
        return None, None
    with open(real, "rb") as f:
        data = f.read()
    text, _, _ = read_text_capped(real, raw, ctx.max_read_bytes)
    return text, hashlib.sha256(data).hexdigest()


def snapshot(args: Args, ctx: ToolContext) -> "str | None":
    return _current(ctx, args.path)[1]


def preview(args: Args, ctx: ToolContext) -> str:
    real = resolve_in_workspace(ctx.workspace, args.path)
    shown = display_path(ctx.workspace, real)
    old, _ = _current(ctx, args.path)
    if old is None:
        header = f"CREATE new file {shown} ({len(args.content.encode())} bytes)\n"
        old_lines: list[str] = []
    else:
        header = f"OVERWRITE existing file {shown}\n"
        old_lines = old.splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, args.content.splitlines(keepends=True),
                                fromfile=f"a/{shown}" if old is not None else "/dev/null",
                                tofile=f"b/{shown}")
    return header + "".join(diff)


def run(args: Args, ctx: ToolContext) -> str:
    real = resolve_in_workspace(ctx.workspace, args.path)
    if snapshot(args, ctx) != ctx.snapshot:
        raise ToolFailed(
            f"{args.path} changed after the preview was shown; not overwritten. "
            "Read it again and propose the change anew."
        )
    if real.is_dir():
        raise PathRefused(f"{args.path!r} is a folder.")
    real.parent.mkdir(parents=True, exist_ok=True)
    data = args.content.encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(real, flags, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return f"wrote {len(data)} bytes to {display_path(ctx.workspace, real)}"


def verify(args: Args, ctx: ToolContext, _out: object) -> "str | None":
    real = resolve_in_workspace(ctx.workspace, args.path)
    with open(real, "rb") as f:
        got = f.read()
    want = args.content.encode("utf-8")
    if got != want:
        return f"the file holds {len(got)} bytes, expected {len(want)} with another content"
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
