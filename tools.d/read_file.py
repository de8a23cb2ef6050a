"""read_file: read a text file inside the workspace (regular files only, capped, never blocks)."""

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.paths import read_text_capped


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File path, relative to the workspace.")


def run(args: Args, ctx: ToolContext) -> str:
    text, size, truncated = read_text_capped(ctx.workspace, args.path, ctx.max_read_bytes)
    if truncated:
        text += f"\n[... file is {size} bytes; only the first {ctx.max_read_bytes} were read ...]"
    return text


TOOL = Tool(
    name="read_file",
    description=(
        "Read a UTF-8 text file inside the workspace and return its content. Bytes that are not "
        "UTF-8 are replaced; very large files are cut and the cut is stated."
    ),
    args=Args,
    effect="read",
    run=run,
)
