"""The one sanitiser for untrusted text shown in a terminal.

Everything a model, a tool result or a workspace file can put on screen goes
through here before it reaches the terminal, because such text may be hostile:
escape sequences can rewrite the screen, set the clipboard (OSC 52) or forge
hyperlinks (OSC 8); ``\\r`` and ``\\b`` can overwrite what the user thinks they
approve; bidi controls reorder it; zero-width and tag characters hide
instructions; thousands of blank lines push the real content off screen.

Each such character becomes a visible *token* (``\\x1b``, ``\\r``,
``<U+202E>``, ``⟨… 300 spaces …⟩``): nothing is dropped silently and every
token is counted by :func:`scan`. :func:`segments` says which parts are tokens
so the UI can style them differently (a literal backslash-x typed in the input
looks the same as a token once joined into one string).

Rich markup such as ``[bold red]x[/]`` or ``:smile:`` is left as plain text on
purpose: the UI must render the result with ``rich.text.Text`` (or
``Text.append``), which never parses markup or emoji codes. Never pass the
output to ``console.print(str)`` or ``Text.from_markup``.

The output boundary. Text from outside the program reaches a Rich console
only as a :class:`Safe` (made here, by sanitising) or as the Rich ``Text``
that ``agent_cli.ui.safe_rich`` builds from one; tests/test_output_boundary.py
walks every module that imports Rich and fails on any other value handed to
``Console.print``, ``Text(...)``, ``Text.append``, ``Table.add_row``,
``Panel(title=...)`` and the like. For a new UI module::

    from agent_cli.ui.safe_rich import safe, safe_line
    console.print(safe(model_text, "dim"))            # multi-line, tokens styled
    table.add_row("server", safe_line(name, 60))      # one line, cut counted

This module is stdlib-only and imports nothing from the UI, so the core loop
can use it and start-up stays fast. Every function is linear time: one regex
scan finds the characters of interest, the rest is slicing and ``"".join``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "Findings",
    "Safe",
    "Segment",
    "is_blank",
    "one_line",
    "one_line_segments",
    "sanitize",
    "scan",
    "segments",
]

# Characters that never reach the terminal raw. "\n" and "\t" are not here:
# multi-line values must stay readable (one_line handles them separately).
# This is every code point of category Cc, Cf, Cs, Zl, Zp (Unicode 14, the
# database of Python 3.11, plus Unicode 15's U+13439-U+1343F), and the known
# invisible characters of other categories: combining grapheme joiner, Hangul
# fillers, Khmer inherent vowels, Mongolian and standard variation selectors,
# and the whole tag block. tests/test_safe_text.py checks this against the
# running interpreter's unicodedata so a Python upgrade cannot slip past it.
# (Building the class from unicodedata at import would cost ~0.2 s.)
_HIDDEN_CLASS = (
    "\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f"  # C0 except \t \n, DEL, C1
    "\\xad\\u034f"  # soft hyphen, combining grapheme joiner
    "\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2"
    "\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f"
    "\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f"
    "\\u3164\\ud800-\\udfff\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff9-\\ufffb"
    "\\U000110bd\\U000110cd\\U00013430-\\U0001343f"
    "\\U0001bca0-\\U0001bca3\\U0001d173-\\U0001d17a"
    "\\U000e0000-\\U000e007f\\U000e0100-\\U000e01ef"
)

# Horizontal blank characters that make up padding: every Zs space, plus characters of other
# categories that most terminal fonts draw as nothing (U+2800 BRAILLE PATTERN BLANK is a "symbol",
# yet renders as an empty cell). Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) are hidden
# characters above, so they become tokens instead.
_BLANK_CLASS = " \\t\\xa0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u2800\\u3000"

_PAD_MIN_RUN = 16  # a run of this many blanks after text in a line is collapsed
_INDENT_MIN_RUN = 64  # leading indentation is code's structure: only absurd runs
_BLANK_LINES_MIN = 4  # "more than 3" consecutive blank lines are collapsed
_ALIGN_MAX_RUN = 160
"""In a tool's output (`keep_alignment`), a run of plain spaces shorter than this between text on
one line is a program's column alignment (pytest's `....   [100%]`, `ls -l`, tables) and is kept as
typed: at most two terminal lines of wrap, so it pushes nothing off screen. Longer runs, tabs,
other blank characters and runs that end a line are still shown as counted markers."""

# Branch order matters: at one position the first branch that matches wins.
# "blank" starts at the line break that ends the previous line and takes the
# following blank lines (a "\r" in a blank line counts as blank, for CRLF).
# Possessive quantifiers keep each attempt linear.
_BRANCH_BLANK = f"(?P<blank>\\n(?:[{_BLANK_CLASS}\\r]*+\\n){{{_BLANK_LINES_MIN},}})"
# (Whether a run is indentation is decided in _walk: a lookbehind here would
# cost the regex engine its fast first-character scan.)
_BRANCH_PAD = f"(?P<pad>[{_BLANK_CLASS}]{{{_PAD_MIN_RUN},}})"
_BRANCH_HIDDEN = f"(?P<hidden>[{_HIDDEN_CLASS}]+)"

_COLLAPSING = re.compile(f"{_BRANCH_BLANK}|{_BRANCH_PAD}|{_BRANCH_HIDDEN}")
_NOT_COLLAPSING = re.compile(_BRANCH_HIDDEN)

# one_line: line breaks and tabs left in the sanitised text become tokens too.
_BREAKS = re.compile("[\\n\\t]+")
_BREAK_TOKENS = str.maketrans({"\n": "\\n", "\t": "\\t"})

_SHORT_ESCAPES = {"\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

_CONTROL, _BIDI_KIND, _INVISIBLE = 0, 1, 2


def _is_control(cp: int) -> bool:
    return cp < 0x20 or 0x7F <= cp <= 0x9F


def _describe(ch: str) -> tuple[str, int]:
    """Token text and kind for one hidden character."""
    cp = ord(ch)
    if _is_control(cp):
        return _SHORT_ESCAPES.get(ch, f"\\x{cp:02x}"), _CONTROL
    kind = _BIDI_KIND if ch in _BIDI else _INVISIBLE
    return f"<U+{cp:04X}>", kind


# Hostile input tends to repeat a few characters many times; cache them.
_TOKEN_CACHE: dict[str, tuple[str, int]] = {}


def _token(ch: str) -> tuple[str, int]:
    hit = _TOKEN_CACHE.get(ch)
    if hit is None:
        hit = _describe(ch)
        if len(_TOKEN_CACHE) < 4096:
            _TOKEN_CACHE[ch] = hit
    return hit


def _pad_token(run: str) -> str:
    n = len(run)
    if run == " " * n:
        what = "spaces"
    elif run == "\t" * n:
        what = "tabs"
    else:
        what = "blank characters"
    return f"⟨… {n} {what} …⟩"


@dataclass(frozen=True)
class Segment:
    """A piece of sanitised text; ``token`` marks a stand-in the UI should style."""

    text: str
    token: bool


@dataclass(frozen=True)
class Findings:
    """What the sanitiser had to make visible, so the UI can warn about it.

    ``invisible`` covers every hidden character that is neither a control nor
    a bidi control: zero-width and format characters, tag characters, line and
    paragraph separators, lone surrogates.
    """

    controls: int
    bidi: int
    invisible: int
    padding_runs: int

    @property
    def any(self) -> bool:
        """True when the text was not plain: worth a warning next to it."""
        return bool(self.controls or self.bidi or self.invisible or self.padding_runs)

    def summary(self) -> str:
        """A short sentence for a warning line, e.g. "2 control characters shown as tokens"."""
        parts = [
            _plural(self.controls, "control character"),
            _plural(self.bidi, "bidi control"),
            _plural(self.invisible, "invisible character"),
            _plural(self.padding_runs, "padding run"),
        ]
        shown = [p for p in parts if p]
        if not shown:
            return "no hidden characters"
        return ", ".join(shown) + " shown as tokens"


def _plural(n: int, noun: str) -> str:
    if n == 0:
        return ""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Counts:
    __slots__ = ("kinds", "padding_runs")

    def __init__(self) -> None:
        self.kinds = [0, 0, 0]
        self.padding_runs = 0


def _walk(text: str, collapse_padding: bool, counts: _Counts | None,
          keep_alignment: bool = False) -> Iterator[tuple[str, bool]]:
    """Yield (piece, is_token) pairs covering ``text`` in order.

    One ``finditer`` pass over the string; plain text between matches is
    yielded as a slice, so the cost is linear in the input (the alignment test looks only at
    the characters either side of a run).
    """
    pattern = _COLLAPSING if collapse_padding else _NOT_COLLAPSING
    pos = 0
    for m in pattern.finditer(text):
        start = m.start()
        if start > pos:
            yield text[pos:start], False
        group = m.lastgroup
        matched = m.group()
        if group == "hidden":
            out = []
            for ch in matched:
                tok, kind = _token(ch)
                out.append(tok)
                if counts is not None:
                    counts.kinds[kind] += 1
            yield "".join(out), True
        elif group == "blank":
            if counts is not None:
                counts.padding_runs += 1
            blank_lines = matched.count("\n") - 1
            yield "\n", False
            yield f"⟨… {blank_lines} blank lines …⟩", True
            yield "\n", False
        elif len(matched) < _INDENT_MIN_RUN and (start == 0 or text[start - 1] == "\n"):
            yield matched, False  # "pad", but it is ordinary indentation
        elif keep_alignment and _is_alignment(text, start, m.end()):
            yield matched, False  # "pad", but it is a program's columns
        else:  # "pad"
            if counts is not None:
                counts.padding_runs += 1
            yield _pad_token(matched), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False


def _is_alignment(text: str, start: int, end: int) -> bool:
    """The blank run text[start:end] is plain spaces, short, with text before it on its line and
    text after it on the same line (not trailing padding, not a line of its own)."""
    return (end - start < _ALIGN_MAX_RUN and start > 0 and text[start - 1] != "\n"
            and end < len(text) and text[end] not in "\r\n"
            and text.count(" ", start, end) == end - start)


def _break_tokens(piece: str) -> Iterator[tuple[str, bool]]:
    """Split a plain piece so its line breaks and tabs become tokens."""
    pos = 0
    for m in _BREAKS.finditer(piece):
        if m.start() > pos:
            yield piece[pos : m.start()], False
        yield m.group().translate(_BREAK_TOKENS), True
        pos = m.end()
    if pos < len(piece):
        yield piece[pos:], False


def _line_length(piece: str, token: bool) -> int:
    """Length of a piece once its line breaks and tabs are tokens (2 chars each)."""
    if token:
        return len(piece)
    return len(piece) + piece.count("\n") + piece.count("\t")


def _merge(pieces: Iterator[tuple[str, bool]]) -> list[Segment]:
    """Join neighbouring pieces of the same kind: fewer, larger segments."""
    result: list[Segment] = []
    buf: list[str] = []
    current: bool | None = None
    for piece, is_token in pieces:
        if is_token is not current and buf:
            result.append(Segment("".join(buf), bool(current)))
            buf = []
        current = is_token
        buf.append(piece)
    if buf:
        result.append(Segment("".join(buf), bool(current)))
    return result


_ALL_BLANK = re.compile(f"[{_BLANK_CLASS}\\r]*")


def is_blank(text: str) -> bool:
    """True when `text` draws as nothing but blank cells (spaces, U+3000, U+2800 and the like)."""
    return _ALL_BLANK.fullmatch(text) is not None


def segments(text: str, *, collapse_padding: bool = True,
             keep_alignment: bool = False) -> list[Segment]:
    """Split ``text`` into plain and token segments, for styled rendering.

    "\\n" and "\\t" are kept as they are so multi-line values stay readable. With
    ``keep_alignment`` (a tool's output, never what a person approves), short runs of spaces
    between text on a line stay as typed (_ALIGN_MAX_RUN).
    """
    return _merge(_walk(text, collapse_padding, None, keep_alignment))


def sanitize(text: str, *, collapse_padding: bool = True, keep_alignment: bool = False) -> str:
    """``text`` with every hidden or dangerous character shown as a token."""
    return "".join(piece for piece, _ in _walk(text, collapse_padding, None, keep_alignment))


def scan(text: str) -> Findings:
    """Count what :func:`sanitize` (with padding collapsed) would make visible."""
    counts = _Counts()
    for _ in _walk(text, True, counts):
        pass
    controls, bidi, invisible = counts.kinds
    return Findings(controls, bidi, invisible, counts.padding_runs)


def one_line_segments(text: str, limit: int | None = None) -> list[Segment]:
    """Like :func:`one_line`, as segments; the cut marker is the last segment, a token.

    A cut never splits a token: a token that does not fit is left out whole
    and counted in the marker. Only the kept prefix is split into segments,
    so a short limit on a huge text costs little more than :func:`scan`.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be zero or positive, not {limit}")
    pieces = list(_walk(text, True, None))
    total = sum(_line_length(piece, token) for piece, token in pieces)
    if limit is None or total <= limit:
        return _merge(_expand_breaks(pieces))
    kept: list[tuple[str, bool]] = []
    room = limit
    full = False
    for piece, token in pieces:
        # A plain piece's first `room` characters already fill `room` or more.
        subs = [(piece, True)] if token else list(_break_tokens(piece[:room]))
        for sub, sub_token in subs:
            if len(sub) <= room:
                kept.append((sub, sub_token))
                room -= len(sub)
                continue
            if not sub_token and room > 0:
                kept.append((sub[:room], False))
                room = 0
            full = True
            break
        if full:
            break
    # The marker stays a segment of its own, even next to another token.
    return [*_merge(iter(kept)), Segment(f"…(+{total - (limit - room)} chars)", True)]


def _expand_breaks(pieces: list[tuple[str, bool]]) -> Iterator[tuple[str, bool]]:
    for piece, token in pieces:
        if token:
            yield piece, True
        else:
            yield from _break_tokens(piece)


def one_line(text: str, limit: int | None = None) -> str:
    """Sanitise for a single line (names, titles): "\\n" and "\\t" become tokens too.

    With ``limit``, at most ``limit`` characters of the sanitised text are kept
    and "…(+N chars)" is appended, N counting the sanitised characters left
    out, so a cut is never silent.
    """
    if limit is None:
        return sanitize(text).translate(_BREAK_TOKENS)
    return "".join(seg.text for seg in one_line_segments(text, limit))


class Safe:
    """Text from outside the program after the sanitiser: the only form in which such text may
    travel to a terminal. There is no way to make one without sanitising (the constructor runs
    the sanitiser; a ``Safe`` passed in is kept as it is), so holding a ``Safe`` proves it.

    ``line=True`` gives the one-line form (names, ids, paths: line breaks and tabs are tokens
    too) and ``limit`` cuts it with the cut counted, as :func:`one_line` does.
    """

    __slots__ = ("_segments",)
    _segments: tuple[Segment, ...]

    def __init__(self, text: str | Safe, *, line: bool = False, limit: int | None = None,
                 collapse_padding: bool = True, keep_alignment: bool = False) -> None:
        parts: tuple[Segment, ...]
        if isinstance(text, Safe):
            parts = text._segments
            if line:  # keep it on one line: its own line breaks become tokens too
                parts = tuple(_merge(p for seg in parts for p in (
                    [(seg.text, True)] if seg.token else _break_tokens(seg.text))))
        elif line or limit is not None:
            parts = tuple(one_line_segments(str(text), limit))
        else:
            parts = tuple(segments(str(text), collapse_padding=collapse_padding,
                                   keep_alignment=keep_alignment))
        self._segments = parts

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The plain and token pieces, in order, for styled rendering."""
        return self._segments

    @property
    def plain(self) -> str:
        """The sanitised text as one string (tokens and plain text joined)."""
        return "".join(seg.text for seg in self._segments)

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Safe({self.plain!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Safe) and other._segments == self._segments

    def __hash__(self) -> int:
        return hash(self._segments)

    def __add__(self, other: Safe) -> Safe:
        if not isinstance(other, Safe):
            return NotImplemented
        joined = Safe("")
        joined._segments = self._segments + other._segments
        return joined
