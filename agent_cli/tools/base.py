"""The tool contract. A plugin file defines `TOOL = Tool(...)` (or `TOOLS = [...]`).

The arguments model is the one source of truth: it yields the JSON schema sent to the model and
validates every call (strict, unknown fields rejected). A tool without a pydantic model (an MCP
tool) brings its schema and a validator instead; either way `Tool.validate` is the one entry
point, so the loop and the registry never ask which kind of tool they hold.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agent_cli.calls import canonical_json
from agent_cli.config import default_of

Effect = Literal["read", "write"]
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class ToolContext:
    """What a running tool may use: handed to `run`, `preview`, `verify` and `snapshot`. Made
    fresh for each call by the loop, so nothing one call sets can leak into the next."""

    workspace: Path
    """The workspace root: every path argument resolves inside it (tools/paths.py)."""
    timeout_s: float
    """Seconds the call may take; past it (plus a short grace) the loop stops waiting and says
    the outcome is unknown. Tools that start processes enforce it themselves."""
    output_cap: int
    """Characters of the result the model will see (head and tail kept): a tool may stop
    collecting output past it."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set on Ctrl-C or timeout: long tools poll it and return early."""
    max_read_bytes: int = default_of("max_read_bytes")
    """The most a reading tool should read of one file."""
    snapshot: Any = None
    """What `Tool.snapshot` captured when the panel was built; the write compares against it."""
    sandbox: Any = None
    """The session's agent_cli.sandbox.Sandbox (None outside a session): tools that start
    processes pass it to run_process, and their preview says what it confines."""
    on_output: Callable[[str], None] | None = None
    """Where a tool that produces output over time (run_command) sends it as it arrives, for the
    live view; what it returns is still the result. None outside a session."""
    protected: tuple[Path, ...] = ()
    """agent-cli's own state (AGENT_CLI_HOME, config files, log folders): real paths no tool may
    read or write. The path guard (tools/paths.py) already refuses them to every tool that
    resolves paths through it; a tool that reaches files another way (its own os.walk) must
    skip these itself."""
    denied: Callable[[str], str | None] | None = None
    """The config deny rules as they apply to one file this call reaches on its own (a walk):
    given the file's path, the rule that refuses it, else None (None: no rule names paths).
    tools/walk.py applies it, with the protected state, to every file a walking tool opens or
    lists, so `path = "secrets/*"` hides secrets/ from search_text(".") as from read_file."""


@dataclass
class ToolOutput:
    """What a tool returns when it needs more than a string (a `run` may return a plain str)."""

    content: str
    """The text the model receives as the call's result."""
    is_error: bool = False
    """Mark the result as a failure (the model sees `is_error`; repeated failures stop a turn)."""
    images: list[dict[str, str]] = field(default_factory=list)
    """Images for the model, each {"media_type": "image/png", "data": BASE64}; sent as image
    blocks beside the text (never pasted into it). `content` should describe them."""


RunFn = Callable[[Any, ToolContext], "str | ToolOutput"]
PreviewFn = Callable[[Any, ToolContext], "str | None"]
# verify returns None when the effect is confirmed, or a sentence saying what is wrong.
VerifyFn = Callable[[Any, ToolContext, Any], "str | None"]
# snapshot captures what the preview was computed from (e.g. a file's hash) so the write can refuse
# when it changed between the panel and the write.
SnapshotFn = Callable[[Any, ToolContext], Any]


@dataclass
class Tool:
    """One tool the model may call (docs/plugins.md, "The contract"). The hooks receive the
    validated arguments (an instance of `args`) and a ToolContext; what they return is data the
    loop shows, logs and sends, never an instruction to it."""

    name: str
    """What the model calls it: `^[a-zA-Z0-9_-]{1,64}$`, unique among the loaded tools."""
    description: str
    """Written for the model: what the tool does and when to use it."""
    args: type[BaseModel]
    """The arguments model: its JSON schema is sent to the model and it validates every call
    (strict; unknown fields are rejected even without `extra="forbid"`)."""
    run: RunFn
    """Does the work: (args, ctx) -> str | ToolOutput. Raise ToolFailed for a clean error."""
    effect: Effect = "write"
    """`read` runs without asking; `write` (the default) shows a panel and waits for a yes."""
    preview: PreviewFn | None = None
    """What the call would change (e.g. a unified diff), shown in the approval panel. It gets
    its own copy of the arguments: nothing it does changes the call that runs."""
    verify: VerifyFn | None = None
    """(args, ctx, result) -> None when the effect is confirmed, or a sentence saying what is
    wrong; also asked after a timeout, with result None."""
    snapshot: SnapshotFn | None = None
    """Captures what the preview was computed from (ctx.snapshot), so the write can refuse when
    it changed between the panel and the write."""
    timeout_s: float | None = None
    """This tool's own timeout; None takes the session's (Limits.tool_timeout_s)."""
    source: str = ""
    """File (or server) the tool came from; filled by the loader."""
    input_schema: dict[str, Any] | None = None
    """Set only for tools whose schema is not a pydantic model (MCP); otherwise derived."""
    validate_raw: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Validator for tools without a pydantic model (MCP); raises ValueError with reasons."""
    panel_extra: dict[str, str] = field(default_factory=dict)
    """Extra lines for the approval panel (e.g. an MCP server's claims)."""
    input_examples: list[dict[str, Any]] = field(default_factory=list)
    """Example inputs that show the model how the tool is called (each must validate). Sent as
    the Messages API's `input_examples`; the OpenAI provider folds them into the description."""

    def validate(self, raw: dict[str, Any]) -> Any:
        """The one validation entry point: the model's input (a JSON object) -> the value the
        hooks receive. Raises ValueError with the reasons (pydantic's ValidationError is one)."""
        if self.validate_raw is not None:
            return self.validate_raw(raw)
        return self.args.model_validate_json(json.dumps(raw), strict=True)

    @staticmethod
    def dump(value: Any) -> dict[str, Any]:
        """The JSON form of validated arguments: what is shown, hashed and logged."""
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return dict(value)

    @staticmethod
    def private_copy(value: Any) -> Any:
        """A deep copy of validated arguments for a hook (preview, snapshot): whatever it does
        to its copy, the call that runs is the one that was shown."""
        if isinstance(value, BaseModel):
            return value.model_copy(deep=True)
        return copy.deepcopy(value)

    def schema(self) -> dict[str, Any]:
        """The JSON schema sent to the model. Cached per model class (pydantic takes about 0.3 ms
        per tool to build it, and every model request sends every tool): treat it as read-only."""
        if self.input_schema is not None:
            return self.input_schema
        return _model_schema(self.args)

    def spec(self) -> dict[str, Any]:
        """The tool definition in the Messages API shape."""
        spec: dict[str, Any] = {"name": self.name, "description": self.description,
                                "input_schema": self.schema()}
        if self.input_examples:
            spec["input_examples"] = self.input_examples
        return spec

    def schema_hash(self) -> str:
        """Hash of name, description and schema: replay compares it to see drift."""
        return sha256_json(self.spec())[:16]


@lru_cache(maxsize=1024)
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


_ARGS_DOMAIN = b"agent-cli args_hash v2\x00"


def args_digest(key: bytes, args: Any) -> str:
    """The `args_hash` of a call: HMAC-SHA256, keyed with the log key, over the canonical JSON of
    the unredacted arguments. The one function every producer and checker uses (the registry
    when it freezes a call, the loop before it runs it; rerun matches the values).

    Keyed, because the log redacts a password in the arguments but keeps this hash: an unkeyed
    sha256 of a few guesses would find it again. Without the key the hash reveals nothing; with
    it, the same arguments give the same hash in every session of this user, which is what
    `--reuse-approvals` matches on. Logs written before v2 hold plain sha256 hashes: they never
    match, so their approvals are asked again, never reused."""
    data = canonical_json(args).encode("utf-8", "surrogatepass")
    return hmac.new(key, _ARGS_DOMAIN + data, hashlib.sha256).hexdigest()


class EmptyArgs(BaseModel):
    """For tools that take no arguments."""
