"""A panel drawn line by line, so that its cost is linear in what it shows.

Rich lays a long `Text` out by wrapping it, joining the wrapped lines back into one segment that
holds every line break, then splitting that again with one `str.partition` per line over the rest
of the string (quadratic: a 1 MB argument took 4 s); a table and a panel around it then measure
each of its lines twice more. Here the two columns of the approval panel (name, value) are laid
out directly into lines of segments of exactly the panel's width, and the frame (border, title)
is Rich's own, taken from a `Panel` drawn around nothing. A line of printable one-cell characters
is word-wrapped by slicing, the way Rich wraps it (breaks where a word starts; a word longer than
the width is folded); any other line (a token, a wide or zero-width character, a tab) is wrapped
by Rich alone, one line at a time.

Every `Text` here comes from `safe`/`safe_line` (the output boundary); the plain strings cut out
of it are pieces of that sanitised text, and a line handed to Rich on its own is sanitised again
(a no-op on text that holds no token).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from agent_cli.ui.safe_rich import safe

Line = list[Segment]
_SPACES = re.compile(r" *")


def wrap_plain(line: str, width: int) -> list[str]:
    """One line of one-cell printable characters (`_single_cells`) word-wrapped at `width`
    exactly as Rich's `Text.wrap` does it with overflow fold, but by slicing: one `rfind` per
    output line instead of a regex match and two cell measures per word.

    Rich's rules: a "word" is its letters and the spaces after them (the first one also the
    spaces before); it stays on the line when its letters fit; a word wider than the width is
    cut into width-long chunks, its spaces included, and the last chunk begins the next line.
    Trailing spaces are dropped (the cell is padded with spaces anyway).
    """
    n = len(line)
    end = len(line.rstrip(" "))  # spaces after the last word never wrap: they are cropped
    out: list[str] = []
    start = 0  # where the current output line begins
    word = 0  # where the next word begins (after the words already on the line)
    while end - start > width:
        first = _past_spaces(line, word) if word == 0 else word
        space = line.rfind(" ", first + 1, start + width + 1)
        if space >= 0:  # the words up to this space fit: break where the next word starts
            word = _past_spaces(line, space)
            out.append(line[start:word].rstrip(" "))
            start = word
            continue
        letters_end = line.find(" ", first)
        letters_end = n if letters_end < 0 else letters_end
        if word > start:  # the line holds words already: this one starts the next line
            out.append(line[start:word].rstrip(" "))
            start = word
            if letters_end - word <= width:
                continue
        # a word wider than the width: cut into chunks, the last one begins the next line
        word_end = _past_spaces(line, letters_end)
        chunk = start
        while word_end - chunk > width:
            out.append(line[chunk:chunk + width].rstrip(" "))
            chunk += width
        start, word = chunk, word_end
    out.append(line[start:].rstrip(" "))
    return out


def _single_cells(line: str) -> bool:
    """`wrap_plain`'s case: every character printable and one cell wide, and no whitespace but
    the space (other whitespace is not printable), so characters are cells."""
    return line.isprintable() and (line.isascii() or cell_len(line) == len(line))


def _past_spaces(line: str, pos: int) -> int:
    """The index of the first non-space at or after `pos` (or the end)."""
    match = _SPACES.match(line, pos)
    return match.end() if match else pos


def text_lines(console: Console, text: Text, width: int, style: Style) -> list[Line | str]:
    """`text` wrapped at `width` cells, each line exactly `width` cells: a line of plain
    unstyled text as a `str` (the common case: no segment made for it yet), any other as
    segments, with `style` under the text's own styles (as a table column's style is applied).
    Linear in the text: it is split into lines once, and only a line holding a token, a wide
    character or a tab goes through Rich's wrap (each line on its own)."""
    out: list[Line | str] = []
    if not text.spans and not text.style and not style:
        for raw in text.plain.split("\n"):
            if _single_cells(raw):
                if len(raw) <= width:
                    out.append(raw.ljust(width))
                else:
                    out.extend(piece.ljust(width) for piece in wrap_plain(raw, width))
            else:
                # the same characters: `text` held no token, so sanitising its line again
                # changes nothing; Rich lays out the wide characters or tabs
                out.extend(_rich_lines(console, safe(raw), width, style))
        return out
    pad = style or None
    for line in text.split("\n", allow_blank=True) if "\n" in text.plain else [text]:
        plain = line.plain
        if not line.spans and _single_cells(plain):
            base = style + console.get_style(line.style) if line.style else style
            for piece in wrap_plain(plain, width):
                out.append([Segment(piece, base or None), Segment(" " * (width - len(piece)), pad)])
        else:
            out.extend(_rich_lines(console, line, width, style))
    return out


def _rich_lines(console: Console, text: Text, width: int, style: Style) -> Iterator[Line]:
    """Rich's own wrap of one line (or of a short `text`), each piece padded to `width`."""
    for piece in text.wrap(console, width, overflow="fold"):
        segments = list(Segment.apply_style(piece.render(console, end=""), style))
        used = piece.cell_len
        if used < width:
            segments.append(Segment(" " * (width - used), style or None))
        yield segments


def grid_lines(console: Console, rows: Iterable[tuple[Text, Text]], width: int,
               key_max: int, key_style: str) -> list[Line | str]:
    """A two-column grid (names, values), as `Table.grid(padding=(0, 1))` draws it with the
    name column capped at `key_max` and folding: the name column as wide as the widest name
    (at most `key_max`), one space, the value in the rest; each row as tall as its taller cell.
    Each line is exactly `width` cells; a line with no style is one `str`."""
    rows = list(rows)
    if not rows:
        return []
    key_w = max(1, min(key_max, max(k.cell_len for k, _ in rows)))
    value_w = max(1, width - key_w - 1)
    kstyle = console.get_style(key_style)
    gap = Segment(" ")
    blank = " " * (key_w + 1)
    out: list[Line | str] = []
    for key, value in rows:
        keys = text_lines(console, key, key_w, kstyle)
        values = text_lines(console, value, value_w, Style())
        for i, v in enumerate(values):
            if i < len(keys):
                k = keys[i]
                out.append([*(k if isinstance(k, list) else [Segment(k)]), gap,
                            *(v if isinstance(v, list) else [Segment(v)])])
            elif isinstance(v, str):  # the common case: a plain continuation line
                out.append(blank + v)
            else:
                out.append([Segment(blank), *v])
        for k in keys[len(values):]:
            out.append([*(k if isinstance(k, list) else [Segment(k)]), gap,
                        Segment(" " * value_w)])
    return out


class FramedLines:
    """Lines of segments (each exactly `width - 4` cells), then `rest` laid out by Rich, inside
    the frame of `frame`: a `Panel` around nothing, so border and title are Rich's own."""

    def __init__(self, body: list[Line | str], rest: Group | None, frame: Panel) -> None:
        self.body = body
        self.rest = rest
        self.frame = frame

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.frame, options.update(height=None), pad=False)
        top, middle, bottom = lines[0], lines[1], lines[-1]
        border_l, border_r = middle[0], middle[-1]
        left, right = [border_l, Segment(" ")], [Segment(" "), border_r]
        new_line = Segment.line()
        yield from top
        yield new_line
        for line in self.body:
            if isinstance(line, str):
                yield border_l
                yield Segment(f" {line} ")
                yield border_r
            else:
                yield from left
                yield from line
                yield from right
            yield new_line
        if self.rest is not None:
            inner = options.update(width=max(options.max_width - 4, 1), height=None)
            for line in console.render_lines(self.rest, inner, pad=True):
                yield from left
                yield from line
                yield from right
                yield new_line
        yield from bottom
        yield new_line
