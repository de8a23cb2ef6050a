"""The Provider protocol and the neutral types that cross it.

The conversation is kept in the Messages API shape (role + content blocks as plain dicts); a
provider for another wire format translates at its edge. Replies come back as plain dicts too, so
the loop, the log and replay never depend on an SDK's classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ModelRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    system: str | None = None
    max_tokens: int = 4096
    model: str = ""
    tool_choice: str = "auto"
    """auto | any | none | a tool name; each provider sends it in its own format (and only with
    tools: `none` still sends them, so tool blocks already in the history stay valid)."""


def anthropic_tool_choice(choice: str) -> dict[str, str]:
    """The Messages API shape of a tool choice."""
    if choice in ("auto", "any", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


def openai_tool_choice(choice: str) -> str | dict[str, Any]:
    """The Chat Completions shape of a tool choice (`any` is spelled `required` there)."""
    if choice in ("auto", "none"):
        return choice
    if choice == "any":
        return "required"
    return {"type": "function", "function": {"name": choice}}


@dataclass
class ModelResponse:
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None

    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")


TextSink = Callable[[str], None]
StatusSink = Callable[[str], None]


class Provider(Protocol):
    name: str
    model: str

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        """Send one request; stream text to `on_text`; say retries and waits on `on_status`.

        Raises ProviderError with a sentence for the user. KeyboardInterrupt passes through.
        """
        ...


def usage_of(raw: Any) -> dict[str, int]:
    """Keep the integer counters of a usage object or dict."""
    if raw is None:
        return {}
    items = raw.items() if isinstance(raw, dict) else vars(raw).items()
    return {k: int(v) for k, v in items if isinstance(v, int) and not isinstance(v, bool)}
