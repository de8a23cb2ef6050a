"""A small exception family. Each carries the sentence shown to the user (or the model); the CLI
catches `AgentError` in one place and prints `str(err)` instead of a traceback."""

from __future__ import annotations


class AgentError(Exception):
    """An error a user can meet; the message says what to do next."""

    exit_code = 1


class UsageError(AgentError):
    exit_code = 2


class ConfigError(AgentError):
    exit_code = 2


class ProviderError(AgentError):
    """The model could not be reached or refused the request."""

    exit_code = 4

    def __init__(self, message: str, *, kind: str = "provider", status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class ScriptExhausted(ProviderError):
    def __init__(self, message: str) -> None:
        super().__init__(message, kind="script_exhausted")


class ToolLoadError(AgentError):
    """A plugin file could not be loaded; the message names the file."""


class PathRefused(AgentError):
    """A path argument would leave the workspace or is not something we may touch."""


class ToolFailed(AgentError):
    """Raised by a tool to return a clean is_error result (no traceback shown to the model)."""


class LogError(AgentError):
    pass
