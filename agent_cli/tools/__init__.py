"""Public surface for plugin authors: `from agent_cli.tools import Tool, ToolContext`."""

from agent_cli.errors import PathRefused, ToolFailed
from agent_cli.tools.base import EmptyArgs, Tool, ToolContext, ToolOutput

__all__ = ["EmptyArgs", "PathRefused", "Tool", "ToolContext", "ToolFailed", "ToolOutput"]
