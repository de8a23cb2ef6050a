"""Secret redaction for everything written to the session log.

Logs are kept, shared and pasted into bug reports, so secrets with a
recognisable shape are replaced by ``[REDACTED:kind]`` before an event reaches
disk. Redaction is best effort by shape and by name: it catches API keys,
tokens, private keys and ``NAME=value`` lines whose NAME says "secret"; it
cannot recognise a bare password in prose. When unsure it errs towards
redacting: a log that says too little is better than one that leaks.

Kinds: those of the shared table in agent_cli/secrets_table.py (``anthropic``,
``openai``, ``stripe``, ``github``, ``gitlab``, ``slack``, ``google``, ``npm``,
``huggingface``, ``sendgrid``, ``aws``, ``private_key``, ``jwt``, ``bearer``,
``url_password``, ``basic_auth``, ``netrc``), ``env`` and ``custom`` (patterns
from config). The child-environment scrub reads the same table. A redacted text passes through again
unchanged, so redacting twice is harmless.

Stdlib only and linear time: every built-in pattern either starts at a
literal prefix or at the start of a word, and uses possessive quantifiers or
bounded runs, so hostile input cannot make it backtrack catastrophically.
Custom patterns from config are the user's own responsibility.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from agent_cli.secrets_table import (
    CASED_SHAPE_HINTS,
    SHAPE_HINTS,
    SHAPE_RULE_HINTS,
    SHAPES,
    is_secret_env_name,
    is_secret_name,
    secret_kind_of_name,
)

__all__ = ["Redactor", "default_redactor", "hidden_kinds", "is_secret_name"]


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# A value that starts as already redacted, optionally after the word Bearer
# ("Bearer [REDACTED:jwt]' -X POST ..."): left alone, which makes
# redaction idempotent and keeps the more precise kind of the shape rules.
_ALREADY = re.compile(r"(?:(?i:bearer|basic)[ \t]+)?\[REDACTED:[A-Za-z0-9_-]+\]")

# --- token shapes: the shared table (agent_cli/secrets_table.py) -------------------------

_SHAPES = SHAPES

# --- NAME=value lines -------------------------------------------------------
# A candidate is a name containing a marker (cheap, case-insensitive filter in
# the regex), an optional quote around it, a separator and a value on the same
# line. Whether the name really is secret is decided by is_secret_name().

_NAME_CHARS = r"A-Za-z0-9_.\-"
_MARKERS = "key|secret|token|pass|pw|credential|auth"
_ENV = re.compile(
    rf"""
    (?<![{_NAME_CHARS}])
    (?P<nq>(?:\\?["'])?)                  # quoted name, also \"name\" inside JSON text
    (?=[{_NAME_CHARS}]*?(?i:{_MARKERS}))   # cheap filter: a marker somewhere in the name
    (?P<name>-*+[A-Za-z_][{_NAME_CHARS}]*+)   # leading dashes: --api-key=...
    (?P=nq)
    (?P<sep>[ \t]*+(?:=>|=(?!=)|:(?!:))[ \t]*+)   # "=" not "==", ":" not "::", "=>"
    (?P<value>
        "(?:[^"\\\n]|\\.)*+"              # "double quoted", with backslash escapes
      | '[^'\n]*+'                        # 'single quoted'
      | \\"(?:[^"\\\n]|\\[^"\n])*+\\"     # \"escaped\" inside JSON text
      | [^\r\n]++                         # unquoted: the rest of the line
    )
    """,
    re.VERBOSE,
)

# Values that are clearly not secrets: placeholders, booleans, structure.
_NOT_A_SECRET = re.compile(
    r"""
      \$\{[^}]*\}  | \$[A-Za-z_][A-Za-z0-9_]*   # ${VAR}, $VAR
    | \{\{.*\}\}                               # {{ template }}
    | (?i:true|false|null|none|nil|yes|no|~)
    | [\[{(]\s*[\]})]?,?                       # an opening bracket: a nested block
    | \*+ | <[A-Za-z0-9 _\-]*>                 # *** and <placeholder>
    """,
    re.VERBOSE,
)

_secret_kind = secret_kind_of_name


def _errno_texts() -> frozenset[str]:
    import errno
    import os

    return frozenset(os.strerror(n).lower() for n in errno.errorcode)


_ERRNO_TEXTS = _errno_texts()
"""The system's error messages ("Permission denied", "No such file or directory"): programs print
`PATH: MESSAGE`, so `cat: .aws/credentials: Permission denied` looks like a secret assignment
whose value is only the reason a file could not be read (which the model and the sandbox line
need)."""


def _leave_value(value: str) -> bool:
    """True for values that need no redaction: empty, placeholders, already redacted, an error
    message of the system."""
    stripped = value.strip()
    return (
        not stripped
        or _ALREADY.match(stripped) is not None
        or _NOT_A_SECRET.fullmatch(stripped) is not None
        or stripped.lower() in _ERRNO_TEXTS
    )


_QUOTES = ('\\"', '"', "'")  # the escaped quote first


def _env_replace(m: re.Match[str]) -> str:
    name = m.group("name")
    whole = m.group(0)
    if not is_secret_name(name):
        return whole
    value = m.group("value")
    head = whole[: m.start("value") - m.start(0)]
    marker = _marker(_secret_kind(name))
    for quote in _QUOTES:
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            if _leave_value(value[len(quote) : -len(quote)]):
                return whole
            return f"{head}{quote}{marker}{quote}"
    # Keep a trailing comma (JSON-ish text) and trailing blanks out of it.
    body = value.rstrip()
    if body.endswith(","):
        body = body[:-1]
    if _leave_value(body):
        return whole
    return f"{head}{marker}{value[len(body) :]}"


def _shape_replacer(kind: str, group: int) -> Callable[[re.Match[str]], str]:
    marker = _marker(kind)
    if group == 0:
        return lambda m: marker

    def replace(m: re.Match[str]) -> str:
        whole = m.group(0)
        offset = m.start(0)
        return whole[: m.start(group) - offset] + marker + whole[m.end(group) - offset :]

    return replace


_SHAPE_SUBS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = tuple(
    (pattern, _shape_replacer(kind, group)) for kind, pattern, group in _SHAPES
)
_GUARDED_SUBS: tuple[tuple[tuple[str, ...], tuple[str, ...], re.Pattern[str],
                           Callable[[re.Match[str]], str]], ...] = tuple(
    (tuple(h for h in hints if h in SHAPE_HINTS), tuple(h for h in hints if h not in SHAPE_HINTS),
     pattern, replace)
    for hints, (pattern, replace) in zip(SHAPE_RULE_HINTS, _SHAPE_SUBS, strict=True))
"""Each shape with its hints (lower-case ones, then those compared as written)."""


def _shapes(s: str) -> str:
    """Every shape whose hint the text holds, in the table's order (the others cannot match).
    A replacement changes the text, so the hints are looked for again after one."""
    low = s.lower()
    for lower_hints, cased_hints, pattern, replace in _GUARDED_SUBS:
        for hint in lower_hints:
            if hint in low:
                break
        else:
            for hint in cased_hints:
                if hint in s:
                    break
            else:
                continue
        new = pattern.sub(replace, s)
        if new != s:
            s, low = new, new.lower()
    return s

_ENV_HINTS = tuple(_MARKERS.split("|"))
"""A NAME=value rule changes a text only for a name (ASCII by `_NAME_CHARS`) that
`is_secret_name` accepts, and every such name holds one of these markers in some case."""


def _trie_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """One regex matching any of `words`, written as a trie (`a(?:bc|d)` for abc and ad): the
    engine then tries at each position only the branches of the character found there, instead
    of every word in turn (3x faster with the table's 150 hints)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and "" not in node else f"(?:{'|'.join(alts)})"
        return body + "?" if "" in node else body

    return re.compile(build(trie))


_SHORT_CASED = tuple(h for h in CASED_SHAPE_HINTS if len(h) <= 2)
"""Cased hints too short to look for lower-cased (`SK` would find every "task")."""
_LOWER_HINTS = tuple(sorted(set(SHAPE_HINTS) | {h.lower() for h in CASED_SHAPE_HINTS
                                                if h not in _SHORT_CASED}))
"""Every other hint, lower-cased: a cased hint in the text is in its lower-cased form too."""
_HINT_RE = _trie_pattern(_LOWER_HINTS)
_ENV_HINT_RE = re.compile("|".join(_ENV_HINTS))
_SHORT = 128
"""Below this length one regex search over the hints is cheapest; above, one `in` per hint."""


def _may_hold_secret(s: str) -> bool:
    """False only when no shape and no NAME=value rule can change `s` (the prefilter: most
    strings of an event hold no hint, so they cost a `lower` and a search for the hints instead
    of one regex pass per rule)."""
    low = s.lower()
    for hint in _SHORT_CASED:
        if hint in s:
            return True
    if len(s) < _SHORT:
        if _HINT_RE.search(low) is not None:
            return True
    else:
        for hint in _LOWER_HINTS:
            if hint in low:
                return True
    return ("=" in s or ":" in s) and _ENV_HINT_RE.search(low) is not None


_secret_key = lru_cache(maxsize=4096)(is_secret_name)
"""is_secret_name for the keys of events (a few dozen names, asked for every dict): kept."""

_CUSTOM_MARKER = _marker("custom")


def _custom_replace(m: re.Match[str]) -> str:
    # An empty match would insert markers between characters: skip it.
    return _CUSTOM_MARKER if m.end() > m.start() else ""


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets with ``[REDACTED:kind]``; extra patterns give ``custom``."""

    extra_patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_config(cls, patterns: list[str]) -> Redactor:
        """Build from the regexes in config, refusing bad ones with a clear sentence."""
        compiled: list[re.Pattern[str]] = []
        for source in patterns:
            try:
                pattern = re.compile(source)
            except re.error as exc:
                raise ValueError(
                    f"Redaction pattern {source!r} is not a valid regular expression: {exc}."
                ) from exc
            if pattern.fullmatch("") is not None:
                raise ValueError(
                    f"Redaction pattern {source!r} matches the empty string; "
                    "it would redact nothing useful."
                )
            compiled.append(pattern)
        return cls(extra_patterns=tuple(compiled))

    def text(self, s: str) -> str:
        """Redact every secret found in ``s``: shapes first, then NAME=value, then custom."""
        if _may_hold_secret(s):
            s = _ENV.sub(_env_replace, _shapes(s))
        for pattern in self.extra_patterns:
            s = pattern.sub(_custom_replace, s)
        return s

    def value(self, obj: Any) -> Any:
        """Redact JSON-like data: strings inside dicts, lists and tuples, at any depth.

        A string under a key that looks secret (see :func:`is_secret_name`) is
        replaced whole, whatever its shape (keeping a more precise kind when a
        shape rule recognises it). Keys are redacted like any text. Other types
        (numbers, booleans, None, objects) are returned as they are.
        """
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for key, item in obj.items():
                if isinstance(key, str):
                    if isinstance(item, str) and _secret_key(key):
                        item = self._secret_value(key, item)
                    key = self.text(key)
                out[key] = self.value(item)
            return out
        if isinstance(obj, list):
            return [self.value(item) for item in obj]
        if isinstance(obj, tuple):
            return tuple(self.value(item) for item in obj)
        return obj

    def _secret_value(self, key: str, item: str) -> str:
        if _leave_value(item):
            return item
        shaped = self.text(item)
        if _ALREADY.fullmatch(shaped):
            return shaped
        return _marker(_secret_kind(key))


_MARKER_RE = re.compile(r"\[REDACTED:([A-Za-z0-9_-]+)\]")


def hidden_kinds(before: str, after: str) -> list[str]:
    """The kinds of the markers redaction added to `before` to give `after`, one per secret (a
    marker already in `before` is not counted), in the order they appear."""
    had: dict[str, int] = {}
    for m in _MARKER_RE.finditer(before):
        had[m.group(1)] = had.get(m.group(1), 0) + 1
    kinds: list[str] = []
    for m in _MARKER_RE.finditer(after):
        kind = m.group(1)
        if had.get(kind, 0) > 0:
            had[kind] -= 1
        else:
            kinds.append(kind)
    return kinds


@cache
def default_redactor() -> Redactor:
    """The built-in rules only; shared, since a Redactor is immutable."""
    return Redactor()


def is_secret_var(name: str, value: str = "") -> bool:
    """True if a variable must not reach a command: its name says secret (the shared table in
    agent_cli/secrets_table.py, plus broader words: over-matching such as KEYBOARD_LAYOUT is the
    safe side), it belongs to an API vendor, or its value holds anything the log redactor would
    redact (a key, a token, a URL with a password, NAME=secret text)."""
    if is_secret_env_name(name):
        return True
    if not value:
        return False
    return default_redactor().text(value) != value
