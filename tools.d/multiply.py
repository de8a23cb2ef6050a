"""multiply: the textbook example of a tool plugin (read-only, strict integers)."""

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.tools import Tool, ToolContext


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    a: int = Field(ge=-1_000_000, le=1_000_000, description="First factor.")
    b: int = Field(ge=-1_000_000, le=1_000_000, description="Second factor.")


def run(args: Args, ctx: ToolContext) -> str:
    return str(args.a * args.b)


TOOL = Tool(
    name="multiply",
    description="Multiply two integers (each between -1,000,000 and 1,000,000) exactly.",
    args=Args,
    effect="read",
    run=run,
)
