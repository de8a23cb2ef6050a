"""One call, one shape: from the registry's validation to the panel, the decision and the log.

The registry returns a `Call`; the gate, every approver and the approval panel receive it; the
`approval` log event is built from it (`approval_event`) and replay builds it back from that event
(`call_of`). Its field names are the log's (`id`, `args`, `args_hash`, `preview`, `panel_extra`),
so a name means the same thing in memory, on disk and on screen.

Decisions are data too (`Approved`, `Denied`): a yes is bound to one call id and the hash of the
exact arguments shown, and `DecidedBy` (the log's vocabulary) says who decided. The `approval`
record of a decision, and the call rebuilt from one, are in events.py (`approval_event`,
`call_of`), which builds on this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:  # the tool contract is layer 1; a call names its tool without importing it
    from pydantic import BaseModel

    from agent_cli.tools.base import Tool

    ToolArgs = BaseModel | dict[str, Any]
    """What a tool's hooks receive (`Tool.validate`): an instance of the tool's pydantic model,
    or for a tool without one (MCP) the dict its JSON schema validated."""

__all__ = ["Approved", "Call", "DecidedBy", "Decision", "Denied",
           "canonical_json"]


DecidedBy = Literal["user", "rule", "policy", "recording"]
"""Who decided a call (the one definition; the `approval` record uses it): `user` a person at the
panel (or an editor's permission question), `rule` a deny rule, `policy` the read-only policy or
no one to ask, `recording` a rerun reused the user's approval of the byte-identical call in the
recording."""


def canonical_json(value: Any) -> str:
    """The one JSON spelling of a value (sorted keys, no spaces, text kept as is): what is
    hashed and compared, so equal arguments always give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _copy_json(value: Any) -> Any:
    """A copy of JSON data (dicts, lists, scalars) that shares no container with the original."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


@dataclass(frozen=True)
class Call:
    """A validated, frozen tool call: what is shown, hashed, decided on and run."""

    id: str
    """The tool_use id the model gave the call; its one tool_result answers it."""
    name: str
    """The tool's name (also for a call shown again from a log, where no tool is at hand)."""
    effect: str
    """`read` runs without asking; `write` opens a panel (docs/contracts.md, "The approval
    contract")."""
    args: dict[str, Any]
    """The arguments exactly as shown, in the tool's declared order: a fresh copy per reader,
    never what runs (that is `value`)."""
    args_hash: str
    """Keyed hash of the canonical arguments (tools/base.args_digest); a yes must carry it."""
    preview: str | None = None
    """What the call would change (e.g. a diff), from the tool's preview hook; None without."""
    description: str = ""
    """The tool's description, as the model read it."""
    source: str = ""
    """The file or server the tool came from."""
    panel_extra: dict[str, str] = field(default_factory=dict)
    """Extra rows the panel shows (an MCP server's claims, what undo will not cover)."""
    arg_order: tuple[str, ...] = ()
    """The argument names in the order the tool's schema declares them (path before content), so
    the panel lists them as the author wrote them; names not in it follow, sorted."""
    path_args: tuple[str, ...] = ()
    """Names of the arguments that are paths (approval.path_arg_names): deny rules match them on
    their workspace-relative canonical form."""
    workspace: str = ""
    """The workspace root the paths resolve in ("" when unknown: rules see the raw values)."""
    tool: Tool = field(default=cast("Tool", None), compare=False, repr=False)
    """The registry's Tool that runs the call. Every call the registry makes has one, and only
    those run; a call rebuilt from a log (`call_of`) is only shown, and holds None here, so an
    attempt to run it fails at once instead of running something."""
    value: ToolArgs | None = field(default=None, compare=False, repr=False)
    """What the tool's hooks receive: the validated arguments (`Tool.validate`: the tool's
    pydantic model, or a dict for a tool without one); None for a call rebuilt from a log.
    Never shown: `args` is its dump."""

    @property
    def args_json(self) -> str:
        """The canonical JSON of the shown arguments (what `args_hash` is computed over)."""
        return canonical_json(self.args)

    def shown_args(self) -> dict[str, Any]:
        """A private copy of the shown arguments: whatever a reader (an approver, a renderer)
        does to it changes neither the record nor what runs."""
        out: dict[str, Any] = _copy_json(self.args)
        return out


@dataclass(frozen=True)
class Approved:
    """A yes for call `id`, valid only for the arguments whose hash is `args_hash`."""

    id: str
    args_hash: str
    by: DecidedBy = "user"
    via: str | None = None
    """Who answered for the user when it was not this terminal (an editor: "acp:zed")."""

    @property
    def reason(self) -> None:
        return None


@dataclass(frozen=True)
class Denied:
    """A no for call `id`; `reason` reaches the model in the call's error result."""

    id: str
    reason: str | None = None
    by: DecidedBy = "user"
    via: str | None = None
    """Who answered for the user when it was not this terminal (an editor: "acp:zed")."""
    stop_turn: bool = False
    """The person answered `q`, Esc or Ctrl-C: deny this call and every remaining call of the
    reply and end the turn (each call still gets its tool_result)."""


Decision = Approved | Denied
