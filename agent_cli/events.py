"""The event models: one tagged union is the session-log format, `--output jsonl` and the replay
parser. Fields may grow; names and types of existing fields are a contract (docs/session-log.md).

`seq`, `ts` and `hash` are filled by whoever records the event (the session log); the loop only
says what happened.
"""

from __future__ import annotations

import builtins
import time
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from agent_cli.calls import Approved, Call, DecidedBy, Decision

LOG_FORMAT_VERSION = 1
_Fields = TypeVar("_Fields", bound=BaseModel)


class EventBase(BaseModel):
    """What every record carries. Extra fields are kept (`extra="allow"`): a newer writer may add
    fields, and an older reader must still parse, show and verify the line."""

    model_config = ConfigDict(extra="allow")

    v: int = LOG_FORMAT_VERSION
    """The log format version the record was written in."""
    seq: int = 0
    """Position in the log, from 1 (filled by the writer): a dropped or moved line shows."""
    ts: float = Field(default_factory=time.time)
    """When it happened (Unix time, seconds)."""
    hash: str = ""
    """Over this record and the previous record's hash (filled by the writer): the chain `log
    verify` checks."""


class ToolInfo(BaseModel):
    """One tool offered to the model, as session_start records it."""

    name: str
    effect: str
    """`read` or `write`, as declared by the tool's author (or the MCP trust rules)."""
    source: str
    """The plugin file or MCP server it came from."""
    schema_hash: str
    """Hash of name, description and schema: replay compares it to see a tool that drifted."""


class SessionStart(EventBase):
    """The first record of a session (and of each resumed stretch of one)."""

    type: Literal["session_start"] = "session_start"
    version: str
    """agent-cli's version."""
    model: str
    provider: str
    """`anthropic`, `openai` or `scripted`."""
    workspace: str
    """The workspace root every path of the session resolves in."""
    tools: list[ToolInfo] = []
    """The tools offered to the model at the start."""
    continues: str | None = None
    """Path of the log this session resumed, if any."""
    system: str | None = None
    """The system prompt sent with every request."""
    key_id: str | None = None
    """Names the log key whose HMAC signs this session's records (filled by the log writer)."""


class UserMessage(EventBase):
    """What the user typed (or a script sent) to start a turn."""

    type: Literal["user_message"] = "user_message"
    text: str


class ModelReply(EventBase):
    """One complete reply of the model: resume rebuilds the conversation from these."""

    type: Literal["model_reply"] = "model_reply"
    content: list[dict[str, Any]]
    """The content blocks in the Messages API shape (agent_cli/conversation.py)."""
    stop_reason: str | None
    """Why the model stopped: end_turn, tool_use, max_tokens, refusal, ..."""
    usage: dict[str, int] = {}
    """The API's token counters for this request."""
    model: str | None = None
    """The model that answered, as the API named it."""


class ToolProposed(EventBase):
    """A call the model asked for, logged once before anything else happens to it (run or not)."""

    type: Literal["tool_proposed"] = "tool_proposed"
    id: str
    """The tool_use id."""
    name: str
    """The tool name as the model wrote it (untrusted: it may name no tool)."""
    input: Any
    """The input as the model wrote it, before validation."""


class ToolInvalid(EventBase):
    """A proposal that named no tool or whose input failed validation: it never reached a gate."""

    type: Literal["tool_invalid"] = "tool_invalid"
    id: str
    """The tool_use id."""
    name: str
    reason: str
    """What was wrong, as the model is told in the call's error result."""


class Approval(EventBase):
    """The decision on one validated call, flushed before the call runs (agent_cli/calls.py
    builds it from the call record and the decision)."""

    type: Literal["approval"] = "approval"
    id: str
    """The tool_use id."""
    name: str
    effect: str = "write"
    """`read` or `write`."""
    decision: Literal["approved", "denied"]
    by: DecidedBy
    via: str | None = None
    """For a person's decision given through another front end than this terminal: which (an
    editor over the Agent Client Protocol: "acp:<client name>"). None at the terminal."""
    args_hash: str
    """Keyed hash of the exact arguments shown (and run, when approved)."""
    reason: str | None = None
    """The user's, rule's or policy's reason for a denial; None for an approval."""
    args: dict[str, Any] | None = None
    """The exact arguments that were shown (and that run when approved)."""
    preview: str | None = None
    """The preview shown in the panel (e.g. a diff), so replay can show the panel as it was."""
    panel_extra: dict[str, str] = {}
    """Extra rows the panel showed (e.g. an MCP server's claims about the tool)."""


class ToolStarted(EventBase):
    """An approved call begins to run (its `effects` and `tool_result` follow)."""

    type: Literal["tool_started"] = "tool_started"
    id: str
    """The tool_use id."""
    name: str
    sandbox: dict[str, Any] | None = None
    """The confinement in force for processes this call starts, its capability record
    (agent_cli.sandbox.capabilities): {"mode": "workspace", "landlock_abi", "network", "reads",
    "reads_denied", "writes", "gaps"} (plus "server" for an MCP tool's call: its server's
    record), {"mode": "off"} (plus "server"), {"mode": "none", "reason"}, or {"mode": "remote",
    "server"} for a server with no local process (http, sse); None when the loop had no sandbox
    (older logs, bare loops)."""


class ToolResultEvent(EventBase):
    """The one result of one call, as the model received it (run, failed, denied or not run)."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    """The tool_use id it answers."""
    name: str
    is_error: bool
    """True for failures, denials, invalid input and calls that were not run."""
    content: str
    """The text sent to the model (after the output cap)."""
    duration: float = 0.0
    """Seconds the tool ran (0 for a call that did not run)."""
    truncated: bool = False
    """The output cap cut the middle of the result."""
    hidden: list[str] = []
    """Kinds of the secrets replaced by [REDACTED:kind] in `content` before the model saw it
    (one entry per secret): the person is told, and `/show N` shows the result whole."""
    _whole: str | None = PrivateAttr(default=None)
    """The result before secrets were hidden from the model: for the person's own screen only,
    never logged or printed as an event (a private attribute is not part of the record)."""

    def with_whole(self, text: str) -> ToolResultEvent:
        """Keep the unredacted text beside the event, for `/show N` in this process."""
        self._whole = text
        return self

    def whole(self) -> str:
        """What the tool returned, secrets included when they were hidden from the model."""
        return self._whole if self._whole is not None else self.content


class ErrorEvent(EventBase):
    """A failure that ended a turn (the model could not be reached, a malformed reply, ...)."""

    type: Literal["error"] = "error"
    message: str
    """The sentence shown to the user."""
    kind: str = "error"
    """What failed, for scripts: provider, bad_request, malformed_reply, internal, ..."""


class Interrupt(EventBase):
    """The user interrupted (Ctrl-C, Esc, `q` at a panel)."""

    type: Literal["interrupt"] = "interrupt"
    during: str
    """What was running: "model", "tool", "approval" (a panel) or "turn" (between steps)."""
    reply_so_far: str | None = None
    """When the model's reply was cut: its text streamed so far (maybe ""), kept in the
    conversation as the assistant's message marked interrupted (conversation.keep_interrupted;
    resume keeps it so too). None when no reply was cut."""


class TurnEnd(EventBase):
    """The end of one user turn, with why it ended (the loop's TurnResult.reason)."""

    type: Literal["turn_end"] = "turn_end"
    reason: str
    """end_turn, max_turns, max_tokens, refusal, budget, interrupted, repeated_failure, error."""
    message: str | None = None
    """The sentence for the user, unless a notice already said it."""
    usage: dict[str, int] = {}
    """Token counters summed over the turn's model requests."""


class SessionEnd(EventBase):
    """The last record of a session that ended cleanly (a crash leaves none)."""

    type: Literal["session_end"] = "session_end"
    reason: str = "exit"


class Notice(EventBase):
    """Something the user should see that is not a step of the conversation (retrying, a plugin
    that failed to load, a context budget cut)."""

    type: Literal["notice"] = "notice"
    message: str
    """The sentence shown to the user."""
    kind: str = "info"
    """What it is about, for renderers and scripts: retry, budget, context_budget, clear, ..."""

    def compaction(self) -> Compaction | None:
        """What a `compact` notice records (its extra fields), or None for any other notice or
        one whose fields do not parse. Resume rebuilds the compacted history from it."""
        return self._fields("compact", Compaction)

    def user_shell(self) -> UserShell | None:
        """What a `user_shell` notice records (the user's own `!` command and its output), or
        None for any other notice or one whose fields do not parse."""
        return self._fields("user_shell", UserShell)

    def _fields(self, kind: str, model: builtins.type[_Fields]) -> _Fields | None:
        """The extra fields of a `kind` notice as `model` (None for another kind, or fields
        that do not parse: a log from elsewhere is read defensively)."""
        if self.kind != kind:
            return None
        try:
            return model.model_validate(self.model_extra or {})
        except ValidationError:
            return None


class Compaction(BaseModel):
    """The fields a `notice` of kind `compact` carries beside its sentence (`/compact`): the one
    definition of them, for the writer (context.compact), resume and the usage count. From this
    notice on, the conversation is the summary (conversation.compacted), not what came before."""

    model_config = ConfigDict(extra="allow")

    summary: str
    """The model-written summary the conversation continues from."""
    usage: dict[str, Any] = Field(default_factory=dict)
    """Of the summary request (counted for the session, not for a turn)."""
    model: str | None = None
    """The model that wrote the summary."""


class UserShell(BaseModel):
    """The fields a `notice` of kind `user_shell` carries beside its sentence: a shell command
    the user typed at the REPL (`!cmd`, ui/user_shell.py). It is the user's own action, run with
    no panel and outside the sandbox; its output goes to the model with the user's next message
    (that `user_message` holds it, so resume needs nothing from here)."""

    model_config = ConfigDict(extra="allow")

    command: str
    """Exactly what the user typed after `!`."""
    exit_code: int | None = None
    """The command's exit status (negative: ended by that signal); None when it did not start."""
    output: str = ""
    """Its output (stdout and stderr together, head and tail kept), as the model gets it."""
    duration: float = 0.0
    """Seconds it ran."""
    hidden: list[str] = []
    """Kinds of the secrets hidden from the model in `output` (config redact_results)."""
    sandbox: dict[str, Any] = {}
    """The process's capability record, as `tool_started.sandbox` holds a tool's: {"mode":
    "off"}, since the user's own command runs with all the user's rights."""

    def notice(self) -> Notice:
        """The record: a `user_shell` notice with these fields."""
        code = "did not run" if self.exit_code is None else f"exit {self.exit_code}"
        return Notice.model_validate({
            "message": f"You ran a shell command: {self.command} ({code}, "
                       f"{self.duration:.2f} s; not sandboxed: your own command, with all your "
                       "rights); its output goes with your next message.",
            "kind": "user_shell", **self.model_dump()})


class EntryState(BaseModel):
    """One path as a snapshot saw it. Content (a file's bytes, a link's target) is in the undo
    store under its sha256, so a record never carries file content."""

    kind: Literal["file", "link", "dir", "special"]
    """What the path was (`special`: a FIFO, socket or device, never restored as such)."""
    sha256: str | None = None
    """Of the file's bytes or the link's target (of its file type for a special file); None for
    a folder."""
    mode: int = 0
    """Permission bits (st_mode & 0o7777); 0 for a link."""
    size: int = 0
    """Bytes of a file (0 for a link or a folder)."""


class PathChange(BaseModel):
    """What one call (or one undo) did to one path, relative to the workspace (POSIX form)."""

    path: str
    """Workspace-relative, POSIX form."""
    change: Literal["created", "modified", "deleted", "mode"]
    """What happened to it (`mode`: only the permission bits changed)."""
    before: EntryState | None = None
    """None: the path did not exist before."""
    after: EntryState | None = None
    """None: the path did not exist after."""


class Effects(EventBase):
    """What an approved call changed in the workspace, recorded right after it ran; `agent-cli
    undo` restores the `before` states from it (docs/contracts.md, "Undo")."""

    type: Literal["effects"] = "effects"
    id: str
    """The tool call id."""
    name: str
    """The tool that ran."""
    workspace: str
    """The workspace root the paths are relative to."""
    scope: Literal["file", "tree"] = "tree"
    """`file`: only the target of write_file/edit_file was recorded; `tree`: the workspace."""
    changes: list[PathChange] = []
    """Every path the call created, modified or deleted."""
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
    """The workspace root the paths are relative to."""
    changes: list[PathChange] = []
    """What the undo itself changed."""
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


class ApprovalNeeded:
    """A call waits for a person's yes or no: the exact `calls.Call` the panel shows (arguments,
    preview, panel rows). Transient: a front end draws it and answers with `Session.answer`; the
    `approval` record that follows is what the log keeps."""

    __slots__ = ("call",)
    type = "approval_needed"

    def __init__(self, call: Call) -> None:
        self.call = call


AnyEvent = Event | TextDelta | ToolOutputDelta | ApprovalNeeded


def parse_event(line: str | bytes) -> Event:
    """Parse one JSONL record. Raises pydantic.ValidationError on a bad record."""
    return EVENT_ADAPTER.validate_json(line)


def approval_event(call: Call, decision: Decision) -> Approval:
    """The `approval` record of a decision on `call` (own copies of the dicts: nothing a later
    reader does to the event can change the call)."""
    return Approval(id=call.id, name=call.name, effect=call.effect,
                       decision="approved" if isinstance(decision, Approved) else "denied",
                       by=decision.by, via=decision.via, args_hash=call.args_hash,
                       reason=decision.reason,
                       args=call.shown_args(), preview=call.preview,
                       panel_extra=dict(call.panel_extra))


def call_of(event: Approval, proposed: Any = None, source: str = "", *,
            ordered: bool = True) -> Call:
    """The call as its panel showed it, rebuilt from an `approval` record (replay). Older logs
    did not keep the arguments in the record: then the proposal's input (`proposed`) stands in.
    `ordered`: list the arguments in the record's order (the declared order the panel used)."""
    args = event.args if event.args is not None else (
        proposed if isinstance(proposed, dict) else {})
    return Call(id=event.id, name=event.name, effect=event.effect, args=args,
                args_hash=event.args_hash, preview=event.preview, source=source,
                panel_extra=dict(event.panel_extra),
                arg_order=tuple(str(k) for k in args) if ordered else ())
