"""`@path` in a message: the file's content goes with it, as Claude Code, Codex and Gemini CLI do.

A mention is `@` at the start of a word followed by a path (`look at @src/calc.py, please`; an
e-mail address or `a@b` is not one). Each is read the way the model's own read_file is: through
the one path guard (agent_cli/tools/paths.py: inside the workspace, links resolved, nothing of
agent-cli's state or the user's credentials, a regular file, no-follow at open, bytes capped),
and refused where a deny rule would refuse a read_file of that path. What is read is attached
to the message (conversation.Attachment, marked with the path), after the same redaction a tool
result gets before it reaches the model (config redact_results). A mention that cannot be
attached is said in a sentence and stays in the message as the text it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_cli.conversation import Attachment

if TYPE_CHECKING:
    from agent_cli.session import Session

MENTION_MAX_BYTES = 256_000
"""A larger file is refused (the model may read parts of it with read_file, which asks no one
for a read but shows what it read)."""
MAX_MENTIONS = 20
"""At most this many files per message; the rest are said and left as text."""

_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
_TRAILING = ",.;:!?)]}'\""


def mentioned(text: str) -> list[str]:
    """The paths mentioned in `text`, in order, each once (trailing punctuation is not part of
    a path: `see @a.py.` mentions `a.py`)."""
    out: list[str] = []
    for m in _MENTION.finditer(text):
        raw = m.group(1).rstrip(_TRAILING)
        if raw and raw not in out:
            out.append(raw)
    return out


@dataclass
class Mentions:
    """What the mentions of one message gave: the attachments, and a sentence for each one
    that was not attached."""

    attachments: list[Attachment] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    """Bytes of each attached file, in order."""
    hidden: list[list[str]] = field(default_factory=list)
    """Kinds of the secrets hidden from the model in each attachment."""
    refused: list[str] = field(default_factory=list)


def for_the_model(session: Session, text: str, what: str) -> tuple[str, list[str]]:
    """`text` as a tool result would reach the model: with config redact_results (the default),
    secrets replaced by `[REDACTED:kind]` and a note saying so; the kinds hidden."""
    from agent_cli.redact import hidden_kinds
    from agent_cli.tool_calls import hidden_note

    if not session.settings.redact_results:
        return text, []
    redacted = session.log.redactor.text(text)
    if redacted == text:
        return text, []
    hidden = hidden_kinds(text, redacted)
    return redacted + hidden_note(hidden, what), hidden


def attach_mentions(session: Session, text: str) -> Mentions:
    """Read every file `text` mentions (see the module's docstring)."""
    got = Mentions()
    paths = mentioned(text)
    for raw in paths[MAX_MENTIONS:]:
        got.refused.append(f"@{raw} was not attached: at most {MAX_MENTIONS} files go with one "
                           "message.")
    for raw in paths[:MAX_MENTIONS]:
        outcome = _read(session, raw)
        if isinstance(outcome, str):
            got.refused.append(outcome)
            continue
        shown, content, size = outcome
        content, hidden = for_the_model(session, content, "this attached file")
        got.attachments.append(Attachment(shown, content))
        got.sizes.append(size)
        got.hidden.append(hidden)
    return got


def _read(session: Session, raw: str) -> tuple[str, str, int] | str:
    """(path as shown, text, size) of the mentioned file, or the sentence saying why not."""
    from agent_cli.errors import PathRefused
    from agent_cli.tools.paths import display_path, read_bytes_capped, resolve_in_workspace

    workspace = session.workspace
    try:
        real = resolve_in_workspace(workspace, raw)
    except PathRefused as e:
        return f"@{raw} was not attached: {e}"
    for rule in session.settings.deny:
        if rule.matches("read_file", {"path": raw}, path_args=("path",),
                        workspace=str(workspace)):
            why = f" ({rule.reason})" if rule.reason else ""
            return f"@{raw} was not attached: a deny rule refuses reading it{why}."
    if not real.exists():
        return f"@{raw} was not attached: there is no such file in the workspace."
    try:
        data, size, cut = read_bytes_capped(workspace, raw, MENTION_MAX_BYTES)
    except PathRefused as e:
        return f"@{raw} was not attached: {e}"
    except OSError as e:
        return f"@{raw} was not attached: it could not be read ({e.strerror or e})."
    if cut:
        return (f"@{raw} was not attached: it is {size:,} bytes, more than the "
                f"{MENTION_MAX_BYTES:,} a mention takes; ask the model to read the part you "
                "mean.")
    if b"\x00" in data:
        return f"@{raw} was not attached: it looks like a binary file (it holds NUL bytes)."
    return display_path(workspace, real), data.decode("utf-8", "replace"), size
