"""The event models: one tagged union is the session-log format, `--output jsonl` and the replay
parser. Fields may grow; names and types of existing fields are a contract (design.md section 5).

`seq`, `ts` and `hash` are filled by whoever records the event (the session log); the loop only
says what happened.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

LOG_FORMAT_VERSION = 1


class EventBase(BaseModel):
    model_config = ConfigDict(extra="allow")

    v: int = LOG_FORMAT_VERSION
    seq: int = 0
    ts: float = Field(default_factory=time.time)
    hash: str = ""


class ToolInfo(BaseModel):
    name: str
    effect: str
    source: str
    schema_hash: str


class SessionStart(EventBase):
    type: Literal["session_start"] = "session_start"
    version: str
    model: str
    provider: str
    workspace: str
    tools: list[ToolInfo] = []
    continues: str | None = None
    """Path of the log this session resumed, if any."""
    system: str | None = None
    key_id: str | None = None
    """Names the log key whose HMAC signs this session's records (filled by the log writer)."""


class UserMessage(EventBase):
    type: Literal["user_message"] = "user_message"
    text: str


class ModelReply(EventBase):
    type: Literal["model_reply"] = "model_reply"
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: dict[str, int] = {}
    model: str | None = None


class ToolProposed(EventBase):
    type: Literal["tool_proposed"] = "tool_proposed"
    id: str
    name: str
    input: Any


class ToolInvalid(EventBase):
    type: Literal["tool_invalid"] = "tool_invalid"
    id: str
    name: str
    reason: str


Decision = Literal["approved", "denied"]
DecidedBy = Literal["user", "rule", "policy", "recording"]
"""`recording`: a rerun reused the user's approval of the byte-identical call in the recording."""


class Approval(EventBase):
    type: Literal["approval"] = "approval"
    id: str
    name: str
    effect: str = "write"
    decision: Decision
    by: DecidedBy
    args_hash: str
    reason: str | None = None
    args: dict[str, Any] | None = None
    """The exact arguments that were shown (and that run when approved)."""
    preview: str | None = None
    """The preview shown in the panel (e.g. a diff), so replay can show the panel as it was."""
    panel_extra: dict[str, str] = {}
    """Extra rows the panel showed (e.g. an MCP server's claims about the tool)."""


class ToolStarted(EventBase):
    type: Literal["tool_started"] = "tool_started"
    id: str
    name: str
    sandbox: dict[str, Any] | None = None
    """The confinement in force for processes this call starts: {"mode": "workspace",
    "landlock_abi", "network", "writes", "gaps"}, {"mode": "off"} or {"mode": "none",
    "reason"}; None when the loop had no sandbox (older logs, bare loops)."""


class ToolResultEvent(EventBase):
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    is_error: bool
    content: str
    duration: float = 0.0
    truncated: bool = False


class ErrorEvent(EventBase):
    type: Literal["error"] = "error"
    message: str
    kind: str = "error"


class Interrupt(EventBase):
    type: Literal["interrupt"] = "interrupt"
    during: str
    """What was running: "model" or "tool"."""


class TurnEnd(EventBase):
    type: Literal["turn_end"] = "turn_end"
    reason: str
    message: str | None = None
    usage: dict[str, int] = {}


class SessionEnd(EventBase):
    type: Literal["session_end"] = "session_end"
    reason: str = "exit"


class Notice(EventBase):
    """Something the user should see that is not a step of the conversation (retrying, a plugin
    that failed to load, a context budget cut)."""

    type: Literal["notice"] = "notice"
    message: str
    kind: str = "info"


class EntryState(BaseModel):
    """One path as a snapshot saw it. Content (a file's bytes, a link's target) is in the undo
    store under its sha256, so a record never carries file content."""

    kind: Literal["file", "link", "dir"]
    sha256: str | None = None
    """Of the file's bytes or the link's target; None for a folder."""
    mode: int = 0
    """Permission bits (st_mode & 0o7777); 0 for a link."""
    size: int = 0


class PathChange(BaseModel):
    """What one call (or one undo) did to one path, relative to the workspace (POSIX form)."""

    path: str
    change: Literal["created", "modified", "deleted", "mode"]
    before: EntryState | None = None
    """None: the path did not exist before."""
    after: EntryState | None = None
    """None: the path did not exist after."""


class Effects(EventBase):
    """What an approved call changed in the workspace, recorded right after it ran; `agent-cli
    undo` restores the `before` states from it (design.md section 7)."""

    type: Literal["effects"] = "effects"
    id: str
    """The tool call id."""
    name: str
    workspace: str
    scope: Literal["file", "tree"] = "tree"
    """`file`: only the target of write_file/edit_file was recorded; `tree`: the workspace."""
    changes: list[PathChange] = []
    not_covered: list[str] = []
    """What the snapshot skipped (ignored paths, files over the size cap), as shown in the panel."""
    complete: bool = True
    """False when the call was still running (timeout, interrupt) when its effects were taken."""


class Undo(EventBase):
    """An undo that was applied: its own change set, so it can be undone the same way."""

    type: Literal["undo"] = "undo"
    id: str
    """This undo's own id (`undo_...`), what `undo --to` and the list name."""
    undid: list[str]
    """The change sets (call ids or undo ids) it reversed, newest first."""
    workspace: str
    changes: list[PathChange] = []
    left_alone: list[str] = []
    """Paths not restored, each with why (changed since, by someone else)."""


Event = Annotated[
    SessionStart
    | UserMessage
    | ModelReply
    | ToolProposed
    | ToolInvalid
    | Approval
    | ToolStarted
    | ToolResultEvent
    | ErrorEvent
    | Interrupt
    | TurnEnd
    | SessionEnd
    | Notice
    | Effects
    | Undo,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class TextDelta:
    """A piece of streamed model text. Transient: rendered live, never logged (the full text is in
    the `model_reply` that follows)."""

    __slots__ = ("text",)
    type = "text_delta"

    def __init__(self, text: str) -> None:
        self.text = text


class ToolOutputDelta:
    """A piece of a running tool's output (run_command's stdout and stderr as they arrive).
    Transient: shown live, never logged (the `tool_result` that follows holds the output)."""

    __slots__ = ("id", "text")
    type = "tool_output_delta"

    def __init__(self, call_id: str, text: str) -> None:
        self.id = call_id
        self.text = text


AnyEvent = Event | TextDelta | ToolOutputDelta


def parse_event(line: str | bytes) -> Event:
    """Parse one JSONL record. Raises pydantic.ValidationError on a bad record."""
    return EVENT_ADAPTER.validate_json(line)
