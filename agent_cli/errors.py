"""Two small exception families. Each carries the sentence shown to the user (or the model).

`AgentError`: errors a user can meet; the CLI catches them in one place and prints `str(err)`
instead of a traceback. `TurnStop`: what ends a user turn short of an answer (a limit, an
interrupt, a failed model request); the loop catches them in one place (Loop.run_turn)."""

from __future__ import annotations


class AgentError(Exception):
    """An error a user can meet; the message says what to do next."""

    exit_code = 1


class UsageError(AgentError):
    """The command line asked for something that cannot be done as asked (exit 2)."""

    exit_code = 2


class ConfigError(AgentError):
    """A config file or setting is wrong; the message names it (exit 2)."""

    exit_code = 2


class ProviderError(AgentError):
    """The model could not be reached or refused the request."""

    exit_code = 4

    def __init__(self, message: str, *, kind: str = "provider", status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class ScriptExhausted(ProviderError):
    """The scripted provider has no reply left for a request."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="script_exhausted")


class PathRefused(AgentError):
    """A path argument would leave the workspace or is not something we may touch."""


class ToolFailed(AgentError):
    """Raised by a tool to return a clean is_error result (no traceback shown to the model)."""


class LogError(AgentError):
    """A session log could not be read, verified or continued; the message says which and why."""


class TurnStop(Exception):
    """Ends a user turn early. Raised anywhere inside the loop's turn and caught in one place
    (Loop.run_turn), which answers every call still waiting, records the stop and returns it.
    `message` is the sentence for the user; `reason` is the turn_end reason."""

    reason = "stopped"

    def __init__(self, message: str, *, reason: str | None = None,
                 notice: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        self.notice = notice
        """Kind of a Notice that announces the message (then turn_end does not repeat it)."""


class TurnLimitReached(TurnStop):
    """A limit ended the turn: max_turns, max_tokens, repeated failures, the session budget, or
    a stop reason that cut the answer short (refusal)."""


class UserInterrupted(TurnStop):
    """Ctrl-C, Esc or `q` at a panel. `during` says what was running (the interrupt event)."""

    reason = "interrupted"

    def __init__(self, message: str, *, during: str) -> None:
        super().__init__(message)
        self.during = during


class ModelFailed(TurnStop):
    """The model request failed or its reply cannot be used; nothing from it was run. `kind`
    names the failure for the error event (provider, malformed_reply, internal, ...)."""

    reason = "error"

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
