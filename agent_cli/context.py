"""The context budget: what is sent to the model stays under a size, whatever the session's length.

Two layers. The loop already caps each tool result (`Limits.output_cap`, head and tail kept, the
cut stated). Here, before every request, the conversation is measured and, past
`context_budget_chars`, the OLDEST tool results are replaced by a stub that says what was elided
(tool name, size). The history list and its messages are never changed: the request gets a
copy, and the session log keeps every result in full. tool_use/tool_result pairs stay whole
(only a result's content is replaced, never a block or a message), and the newest results (the
ones the model is about to read) are never elided.

Size is measured in characters of the JSON of the messages (`json.dumps(messages,
ensure_ascii=False)`): it needs no tokenizer and works the same for every provider. The budget
itself may be given in tokens too (`context_budget_tokens`, by default 80% of the model's context
window): it is turned into characters at the ratio the API's own counts showed at the last request
(`observe`, fed the model replies' usage), so the budget follows what the model is really sent.
Tools and the system prompt are not counted in the size (they are the same on every request).

`/compact` (see `compact`) goes further: it asks the model for a summary and starts a fresh
context from it.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_cli import events as ev
from agent_cli.conversation import (
    History,
    RawMessage,
    compacted,
    has_tool_use,
    open_exchange,
    text_block,
    tool_names,
)
from agent_cli.errors import ProviderError
from agent_cli.providers.base import ModelRequest, Provider

DEFAULT_CHARS_PER_TOKEN = 4.0
"""Before the API has counted a request: about four characters of English or code a token."""
MIN_CHARS_PER_TOKEN = 2.0
MAX_CHARS_PER_TOKEN = 8.0


def json_size(value: Any) -> int:
    """Characters of `value` as JSON, the unit of the budget."""
    return len(json.dumps(value, ensure_ascii=False))


def stub_text(name: str, size: int) -> str:
    return (
        f"[elided to fit the context budget: this {name} result ({size:,} characters) was "
        "shown earlier; the session log keeps it. Call the tool again if you need it.]"
    )


@dataclass
class _Entry:
    message: RawMessage  # held, and compared by identity: the same object at the same position
    size: int
    content: Any = None  # the message's content object and its length when sized: a message
    blocks: int = -1     # changed in place (a block appended) is sized again
    stubbed: RawMessage | None = None
    stubbed_size: int = 0
    elided: int = 0
    checked: bool = False


class ContextBudget:
    """A request hook (Loop hooks): history -> the messages actually sent (a copy, stubbed past
    the budget).

    Sizes are cached by position: the history grows at its end within a turn, so a request
    checks the cached entries against the history (identity, in C) and sizes only the messages
    that are new or changed, with the total kept as prefix sums; not a re-serialisation, nor a
    dictionary lookup per message, of the whole conversation on every request.
    """

    def __init__(self, budget_chars: int, emit: Callable[[ev.Notice], None] | None = None,
                 budget_tokens: Callable[[], int | None] | None = None) -> None:
        self.chars_limit = budget_chars
        """The budget in characters (config context_budget_chars)."""
        self.budget_tokens = budget_tokens
        """The budget in tokens (config context_budget_tokens, or a share of the model's
        window), asked before each request (a /model switch changes the window)."""
        self.chars_per_token = DEFAULT_CHARS_PER_TOKEN
        """Learned from the usage the API returns: characters sent per prompt token."""
        self.emit = emit
        self._entries: list[_Entry] = []
        self._messages: History = []
        """The history as last sized, message by message (what `_entries` describe)."""
        self._totals: list[int] = [0]
        self._contents: list[Any] = []
        self._lens: list[int] = []
        """_totals[k]: the sum of the first k entries' sizes."""
        self.last_full_chars = 0
        """Size of the conversation before elision, at the last request."""
        self.last_sent_chars = 0
        """Size of what was sent at the last request."""
        self.last_elided = 0
        """Tool results sent as stubs at the last request."""
        self.last_dropped = 0
        """Whole tool exchanges left out of the last request (after stubs were not enough)."""
        self._warned_cut = False
        self._warned_over = False

    @property
    def budget_chars(self) -> int:
        """The budget that binds, in characters: the character budget, or the token budget at
        the characters-per-token ratio the API's counts showed, whichever is smaller."""
        tokens = self.budget_tokens() if self.budget_tokens is not None else None
        if not tokens:
            return self.chars_limit
        return min(self.chars_limit, int(tokens * self.chars_per_token))

    @budget_chars.setter
    def budget_chars(self, value: int) -> None:
        self.chars_limit = value

    def observe(self, event: ev.AnyEvent) -> None:
        """An event sink: each model reply's usage tells how many tokens the characters sent at
        the last request were. The prompt also holds the system prompt and the tools, so the
        ratio errs low (the budget binds a little early, never late); it is clamped to a sane
        range so a short conversation under a large tool list cannot shrink the budget to
        nothing."""
        if not isinstance(event, ev.ModelReply) or not self.last_sent_chars:
            return
        usage = event.usage
        tokens = sum(int(usage.get(k, 0) or 0) for k in (
            "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        if tokens > 0:
            ratio = self.last_sent_chars / tokens
            self.chars_per_token = min(max(ratio, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)

    def _sizes(self, history: History) -> tuple[list[_Entry], int]:
        """The entries for `history` and the size of all its messages: cached entries kept for
        the longest prefix that is the same messages, unchanged; the rest sized afresh."""
        old, msgs = self._entries, self._messages
        n = min(len(old), len(history))
        if n and all(map(operator.is_, msgs[:n] if n < len(msgs) else msgs, history[:n])):
            keep = n
        else:  # /clear, /compact, an edited history: find where it differs
            keep = 0
            while keep < n and msgs[keep] is history[keep]:
                keep += 1
        # a message whose content was changed in place (a block appended, the content replaced:
        # the loop replaces messages, but a hook may not) is sized again: its content object and
        # length are compared with the cached ones (in C, as the identities above)
        if keep:
            now = history[:keep]
            current = list(map(_CONTENT, now))
            try:
                same = (all(map(operator.is_, current, self._contents[:keep]))
                        and list(map(len, current)) == self._lens[:keep])
            except TypeError:  # a content with no length: check one by one
                same = False
            if not same:
                keep = next((k for k in range(keep)
                             if current[k] is not old[k].content
                             or _blocks(current[k]) != old[k].blocks), keep)
        entries = old[:keep]
        totals = self._totals[:keep + 1]
        contents, lens = self._contents[:keep], self._lens[:keep]
        running = totals[-1]
        for msg in history[keep:]:
            content = msg.get("content")
            entry = _Entry(msg, json_size(msg), content, _blocks(content))
            entries.append(entry)
            contents.append(content)
            lens.append(entry.blocks)
            running += entry.size
            totals.append(running)
        self._entries, self._messages, self._totals = entries, list(history), totals
        self._contents, self._lens = contents, lens
        return entries, _list_total(running, len(entries))

    def __call__(self, history: History) -> History:
        entries, total = self._sizes(history)
        self.last_full_chars = total
        out = list(history)
        elided = 0
        budget = self.budget_chars
        if total > budget:
            # the last message holds the results the model has not read yet: keep it whole
            for i in range(len(entries) - 1):
                if total <= budget:
                    break
                entry = entries[i]
                if not entry.checked:
                    entry.checked = True
                    self._stub(entry, history[i - 1] if i > 0 else None)
                if entry.stubbed is None or entry.stubbed_size >= entry.size:
                    continue
                out[i] = entry.stubbed
                total -= entry.size - entry.stubbed_size
                elided += entry.elided
        dropped = 0
        if total > self.budget_chars:
            out, total, dropped = self._drop_oldest_exchanges(out, entries, total)
        self.last_sent_chars = total
        self.last_elided = elided
        self.last_dropped = dropped
        self._notify(elided, total)
        return out

    def _drop_oldest_exchanges(self, out: History, entries: list[_Entry],
                               total: int) -> tuple[History, int, int]:
        """Still over budget with every old result stubbed (a very long session: the stubs and
        calls themselves add up). Drop the oldest tool exchanges whole: an assistant message
        that only calls tools, with the user message that only answers them. The user's own
        words are never dropped, role alternation holds, and a note says what went."""
        drop: set[int] = set()
        # room for the note each run of dropped exchanges leaves (an upper bound)
        note_cost = json_size({"type": "text", "text": _note(10**9)}) + 2
        i = 1
        while i + 1 < len(out) - 1 and total > self.budget_chars:
            a, u = out[i], out[i + 1]
            if _only(a, "assistant", ("tool_use", "text")) and _only(u, "user", ("tool_result",)):
                if i - 1 not in drop:
                    total += note_cost
                drop.update((i, i + 1))
                total -= _size_of(out, entries, i) + _size_of(out, entries, i + 1) + 4
                i += 2
            else:
                i += 1
        total = _list_size(_size_of(out, entries, k) for k in range(len(out)) if k not in drop)
        if not drop:
            return out, total, 0
        kept: History = []
        run = 0
        for j, msg in enumerate(out):
            if j in drop:
                run += 1
                continue
            if run:
                kept[-1] = self._with_note(kept[-1], run // 2)
                total += json_size(kept[-1]) - _size_of(out, entries, _index_of(out, j, drop))
                run = 0
            kept.append(msg)
        return kept, total, len(drop) // 2

    def _with_note(self, msg: RawMessage, calls: int) -> RawMessage:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(
            content or [])
        return {**msg, "content": [*blocks, {"type": "text", "text": _note(calls)}]}

    def _stub(self, entry: _Entry, prev: RawMessage | None) -> None:
        """Build (once) the message with its tool results replaced by stubs."""
        msg = entry.message
        content = msg.get("content")
        if msg.get("role") != "user" or not isinstance(content, list):
            return
        names = tool_names(prev)
        blocks: list[Any] = []
        count = 0
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                size = json_size(block.get("content", ""))
                name = names.get(str(block.get("tool_use_id")), "tool")
                text = stub_text(name, size)
                if size > len(text) + 2:
                    block = {**block, "content": text}
                    count += 1
            blocks.append(block)
        if count:
            entry.stubbed = {**msg, "content": blocks}
            entry.stubbed_size = json_size(entry.stubbed)
            entry.elided = count

    def _notify(self, elided: int, total: int) -> None:
        if self.emit is None:
            return
        if elided and not self._warned_cut:
            self._warned_cut = True
            self.emit(ev.Notice(
                kind="context_budget",
                message=f"The conversation passed the context budget ({self.budget_chars:,} "
                        "characters): older tool results are now sent as short stubs (the log "
                        "keeps them). /compact starts afresh from a summary.",
            ))
        if total > self.budget_chars and not self._warned_over:
            self._warned_over = True
            self.emit(ev.Notice(
                kind="context_budget",
                message=f"The conversation is {total:,} characters, over the context budget "
                        f"({self.budget_chars:,}) even with old tool results elided. Use "
                        "/compact or /clear if the model refuses it.",
            ))
        elif total <= self.budget_chars:
            self._warned_over = False


_CONTENT = operator.methodcaller("get", "content")


def _blocks(content: Any) -> int:
    """The length a content is checked by (blocks of a list, characters of a string)."""
    try:
        return len(content)
    except TypeError:
        return -1


def _list_total(sizes_sum: int, n: int) -> int:
    """len(json.dumps(list)) of n items whose sizes add up to sizes_sum."""
    return 2 + sizes_sum + 2 * max(n - 1, 0)


def _list_size(sizes: Any) -> int:
    """len(json.dumps(list)) from the items' sizes: brackets plus ", " between items."""
    n = 0
    total = 2
    for s in sizes:
        total += s
        n += 1
    return total + 2 * max(n - 1, 0)


def _note(calls: int) -> str:
    return (f"[agent-cli dropped the {calls:,} tool call{'s' if calls != 1 else ''} that "
            "followed here, with their results, to keep the conversation under its context "
            "budget; the session log keeps them.]")


def _only(msg: RawMessage, role: str, kinds: tuple[str, ...]) -> bool:
    content = msg.get("content")
    return (msg.get("role") == role and isinstance(content, list) and bool(content)
            and all(isinstance(b, dict) and b.get("type") in kinds for b in content)
            and (role != "assistant" or has_tool_use(content)))


def _size_of(out: History, entries: list[_Entry], i: int) -> int:
    e = entries[i]
    return e.stubbed_size if out[i] is e.stubbed else e.size


def _index_of(out: History, j: int, drop: set[int]) -> int:
    """Index in `out` of the kept message just before position j."""
    k = j - 1
    while k in drop:
        k -= 1
    return k


# ------------------------------------------------------------------ /compact

SUMMARY_SYSTEM = (
    "You summarise a coding session between a user and an assistant that uses tools, so the "
    "assistant can continue the work from the summary alone."
)
SUMMARY_INSTRUCTION = (
    "Summarise the conversation below for the assistant who will continue it. Keep: the user's "
    "goals and instructions (quoted where exact wording matters), decisions made, files read or "
    "changed and what is in them that still matters, commands run and their outcomes, errors "
    "and denials with their reasons, and what remains to do. Be specific (paths, names, "
    "numbers); when you state what a tool call found or did, name its call id as written in "
    "the transcript ([call ID]), so each result can be traced to its call in the session log. "
    "Leave out chatter. Answer with the summary only."
)
TRANSCRIPT_RESULT_CAP = 2_000


def transcript(messages: History, cap_chars: int) -> str:
    """The conversation as plain text for the summary request. Plain text, not tool blocks: the
    request carries no tools, and both APIs reject tool blocks without them. Each tool result is
    cut to its head and tail; past `cap_chars`, the oldest part is dropped (and said so)."""
    lines: list[str] = []
    names: dict[str, str] = {}
    """call id -> tool name: each result names the call it answers."""
    for msg in messages:
        role = str(msg.get("role"))
        content = msg.get("content")
        if isinstance(content, str):
            lines.append(f"{role.upper()}: {content}")
            continue
        for b in content or []:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text":
                lines.append(f"{role.upper()}: {b.get('text', '')}")
            elif kind == "tool_use":
                args = json.dumps(b.get("input"), ensure_ascii=False)
                names[str(b.get("id"))] = str(b.get("name"))
                lines.append(f"ASSISTANT CALLS {b.get('name')} [call {b.get('id')}] "
                             f"{_clip(args, 1000)}")
            elif kind == "tool_result":
                body = b.get("content", "")
                if not isinstance(body, str):
                    body = json.dumps(body, ensure_ascii=False)
                tag = "TOOL ERROR" if b.get("is_error") else "TOOL RESULT"
                call_id = str(b.get("tool_use_id"))
                name = names.get(call_id, "tool")
                lines.append(f"{tag} [call {call_id}, {name}]: "
                             f"{_clip(body, TRANSCRIPT_RESULT_CAP)}")
    text = "\n\n".join(lines)
    if len(text) > cap_chars:
        text = "[... the earliest part of the conversation was dropped ...]\n\n" + text[-cap_chars:]
    return text


def _clip(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head = cap * 2 // 3
    return f"{text[:head]} [... {len(text) - cap} characters cut ...] {text[-(cap - head):]}"


@dataclass
class CompactResult:
    ok: bool
    message: str
    summary: str = ""


def compact(history: History, provider: Provider, emit: Callable[[ev.AnyEvent], None], *,
            budget: ContextBudget | None = None, max_tokens: int = 4096) -> CompactResult:
    """Ask the model for a summary (one request, no tools) and start a fresh context from it:
    history becomes [user: summary, assistant: ack] (or the pending tool_use/tool_result pair in
    place of the ack). The log keeps everything; a Notice records the summary and its usage.
    It gets the parts it uses (Session.compact hands them over), so it knows no session."""
    if not history:
        return CompactResult(False, "Nothing to compact yet.")
    cap = budget.budget_chars if budget is not None else 400_000
    sent = budget(history) if budget is not None else history
    body = transcript(sent, cap)
    text = f"{SUMMARY_INSTRUCTION}\n\n<conversation>\n{body}\n</conversation>"
    request = ModelRequest(
        messages=[{"role": "user", "content": [text_block(text)]}],
        tools=[],
        system=SUMMARY_SYSTEM,
        max_tokens=min(max_tokens, 4096),
        model=provider.model,
    )
    before = json_size(history)
    try:
        reply = provider.complete(
            request,
            lambda _t: None,
            lambda m: emit(ev.Notice(message=m, kind="retry")),
        )
    except ProviderError as e:
        emit(ev.ErrorEvent(message=f"/compact failed: {e}", kind=e.kind))
        return CompactResult(False, f"Could not compact; the conversation is unchanged. {e}")
    summary = reply.text().strip()
    if not summary:
        return CompactResult(False, "The model returned no summary; the conversation is "
                                    "unchanged.")
    dropped = len(history) - len(open_exchange(history))
    history[:] = compacted(history, summary)
    after = json_size(history)
    message = (f"Compacted {dropped} messages ({before:,} characters) into a summary "
               f"({after:,} characters); the log keeps the full conversation.")
    # extra fields (the log keeps them): the summary itself, and the usage of the request
    fields = ev.Compaction(summary=summary, usage=dict(reply.usage), model=provider.model)
    emit(ev.Notice.model_validate({"message": message, "kind": "compact",
                                   **fields.model_dump()}))
    return CompactResult(True, message, summary)
