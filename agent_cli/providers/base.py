"""The Provider protocol and the neutral types that cross it.

The conversation is kept in the Messages API shape (role + content blocks as plain dicts); a
provider for another wire format translates at its edge. Replies come back as plain dicts too, so
the loop, the log and replay never depend on an SDK's classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_cli.conversation import History, ToolUseBlock, tool_uses


@dataclass
class ModelRequest:
    """One request as the loop means it; each provider sends it in its own wire format."""

    messages: History
    """The conversation in the Messages API shape (agent_cli/conversation.py), as prepared for
    sending (a context budget may have stubbed old results): never the history itself to edit."""
    tools: list[dict[str, Any]]
    """Tool definitions in the Messages API shape (Tool.spec)."""
    system: str | None = None
    """The system prompt."""
    max_tokens: int = 4096
    """Output tokens the reply may use."""
    model: str = ""
    """The model name to ask."""
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
    """One complete reply, already out of the SDK's classes: plain dicts the loop, the log and
    replay read alike. A reply that did not finish is never returned (the provider raises)."""

    content: list[dict[str, Any]]
    """Content blocks in the Messages API shape (text, tool_use, ...): untrusted data."""
    stop_reason: str | None
    """end_turn, tool_use, max_tokens, refusal, ... (a provider for another API maps to these)."""
    usage: dict[str, int] = field(default_factory=dict)
    """The API's integer token counters for this request."""
    model: str | None = None
    """The model that answered, as the API named it."""

    def tool_uses(self) -> list[ToolUseBlock]:
        """The reply's tool calls, in order."""
        return tool_uses(self.content)

    def text(self) -> str:
        """The reply's text blocks joined: what the user reads as the answer."""
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")


TextSink = Callable[[str], None]
StatusSink = Callable[[str], None]


class Provider(Protocol):
    """A model behind one wire format (providers/anthropic.py, openai_compat.py, scripted.py).
    The loop depends only on this: streaming text out, one ModelResponse back, a ProviderError
    with a sentence for every failure. Swapping the provider is how tests, replay's rerun and
    eval drive the same loop without a network."""

    name: str
    """`anthropic`, `openai` or `scripted`: recorded in session_start."""
    model: str
    """The model asked (the REPL's /model changes it)."""

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
