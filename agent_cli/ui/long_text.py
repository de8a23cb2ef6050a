"""A long sanitised value laid out in linear time.

Rich renders a `Text` by wrapping it and then joining the wrapped lines back into one `Text`;
its one unstyled span becomes one segment holding every line break, and splitting that segment
into lines (`Segment.split_and_crop_lines`, a `str.partition` per line over the rest) is
quadratic: a 1 MB argument in the approval panel took seconds. `FoldedText` wraps line by line
and yields each wrapped line's own segments, so the cost grows with the length. The text is the
boundary's `Text` (from `safe()`); nothing here adds or reads characters, it only lays them out.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

LONG = 4096
"""Values at least this long go through FoldedText; shorter ones render as a plain Text."""


class FoldedText:
    """`text` folded at the width it is drawn at (overflow "fold": no character is dropped)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        # The same choices Text.__rich_console__ makes, so the lines are the ones it draws.
        width = max(1, options.max_width)
        justify = self.text.justify or options.justify or "default"
        overflow = self.text.overflow or options.overflow or "fold"
        tab_size = (console.tab_size if self.text.tab_size is None else self.text.tab_size) or 8
        new_line = Segment.line()
        for line in self.text.split("\n", allow_blank=True):
            for piece in line.wrap(console, width, justify=justify, overflow=overflow,
                                   tab_size=tab_size):
                yield from piece.render(console)
                yield new_line


def laid_out(text: Text) -> Text | FoldedText:
    """`text` itself when short, else the same text in a FoldedText."""
    return FoldedText(text) if len(text) >= LONG else text
