"""edit_file: replace an exact string in a text file, with a unified-diff preview.

The match is exact (bytes of the UTF-8 text, so the rest of the file, even invalid UTF-8, is kept
as it was). Zero matches, or several without replace_all, fail with a reason the model can act
on. The write refuses if the file changed after the panel was shown, and the result is checked.
"""

import difflib
import hashlib
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import AgentError, ToolFailed
from agent_cli.tools import Tool, ToolContext, ToolOutput
from agent_cli.tools.paths import (
    FileState,
    display_path,
    file_state,
    read_bytes_capped,
    resolve_in_workspace,
    write_bytes_guarded,
)


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File path, relative to the workspace.")
    old_string: str = Field(min_length=1, description="The exact text to replace, whitespace "
                            "and line breaks included. It must occur exactly once unless "
                            "replace_all is true; include surrounding lines to make it unique.")
    new_string: str = Field(description="The text to put in its place (may be empty to delete).")
    replace_all: bool = Field(False, description="Replace every occurrence instead of requiring "
                              "exactly one.")


@dataclass
class EditOutput(ToolOutput):
    """The result, carrying the hash of what was written so verify can check it."""

    written_sha256: str = ""


def _load(args: Args, ctx: ToolContext) -> bytes:
    data, size, cut = read_bytes_capped(ctx.workspace, args.path, ctx.max_read_bytes)
    if cut:
        raise ToolFailed(f"{args.path} is {size} bytes, larger than the {ctx.max_read_bytes}-byte "
                         "limit for editing; use run_command with a stream editor instead.")
    return data


def _plan(args: Args, data: bytes) -> "tuple[bytes, int]":
    """(new content, replacements) or ToolFailed saying why the edit cannot apply."""
    old = args.old_string.encode("utf-8")
    new = args.new_string.encode("utf-8")
    if args.old_string == args.new_string:
        raise ToolFailed("old_string and new_string are the same; nothing would change.")
    count = data.count(old)
    if count == 0:
        hint = ""
        if b"\r\n" in data and b"\n" in old and b"\r\n" not in old:
            hint = " The file uses CRLF line endings; include the \\r in old_string."
        elif data.lower().count(old.lower()):
            hint = " It occurs with different letter case; copy the text exactly."
        elif b" ".join(data.split()).count(b" ".join(old.split())):
            hint = " It occurs with different whitespace or indentation; copy it exactly."
        raise ToolFailed(f"old_string was not found in {args.path}; nothing changed.{hint} "
                         "Read the file again and copy the exact text.")
    if count > 1 and not args.replace_all:
        raise ToolFailed(f"old_string occurs {count} times in {args.path}; nothing changed. "
                         "Add surrounding lines to make it unique, or set replace_all to true.")
    return data.replace(old, new), count


def snapshot(args: Args, ctx: ToolContext) -> FileState:
    return file_state(ctx.workspace, args.path)


def preview(args: Args, ctx: ToolContext) -> str:
    try:
        real = resolve_in_workspace(ctx.workspace, args.path)
        data = _load(args, ctx)
        new, count = _plan(args, data)
    except AgentError as e:  # refused path, missing file, no unique match
        return f"WILL FAIL, nothing would change: {e}"
    shown = display_path(ctx.workspace, real)
    header = f"EDIT {shown}: {count} replacement{'s' if count != 1 else ''}\n"
    diff = difflib.unified_diff(
        data.decode("utf-8", "replace").splitlines(keepends=True),
        new.decode("utf-8", "replace").splitlines(keepends=True),
        fromfile=f"a/{shown}", tofile=f"b/{shown}",
    )
    return header + "".join(diff)


def run(args: Args, ctx: ToolContext) -> ToolOutput:
    expected = ctx.snapshot if isinstance(ctx.snapshot, FileState) else None
    data = _load(args, ctx)
    if expected is not None:
        if not expected.exists:
            raise ToolFailed(f"{args.path} did not exist when the preview was shown; nothing "
                             "changed.")
        if hashlib.sha256(data).hexdigest() != expected.sha256:
            raise ToolFailed(f"{args.path} changed after the preview was shown; nothing changed. "
                             "Read it again and propose the edit anew.")
    new, count = _plan(args, data)
    # The guarded write hashes the file again on the descriptor it writes: a change between this
    # read and the write is refused too.
    real = write_bytes_guarded(ctx.workspace, args.path, new,
                               FileState(True, hashlib.sha256(data).hexdigest(), len(data),
                                         expected.anchor if expected is not None else None))
    shown = display_path(ctx.workspace, real)
    return EditOutput(f"edited {shown}: {count} replacement{'s' if count != 1 else ''}",
                      written_sha256=hashlib.sha256(new).hexdigest())


def verify(args: Args, ctx: ToolContext, out: object) -> "str | None":
    want = getattr(out, "written_sha256", None)
    data, _size, cut = read_bytes_capped(ctx.workspace, args.path, ctx.max_read_bytes)
    if cut:
        return "the file grew past the read limit after the edit"
    if want is not None and hashlib.sha256(data).hexdigest() != want:
        return "the file's content is not what was written (changed again, or the write failed)"
    if args.new_string and args.new_string.encode("utf-8") not in data:
        return "the new text is not in the file"
    return None


TOOL = Tool(
    name="edit_file",
    description=(
        "Replace an exact piece of text in an existing file. old_string must match the file "
        "exactly (whitespace, indentation and line breaks included) and occur once, unless "
        "replace_all is true. The user sees a unified diff and must approve. Read the file "
        "first; for a new file or a full rewrite use write_file."
    ),
    args=Args,
    effect="write",
    run=run,
    preview=preview,
    snapshot=snapshot,
    verify=verify,
)
