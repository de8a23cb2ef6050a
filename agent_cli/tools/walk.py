"""The walk a tool does by itself over the workspace (search_text, list_dir, a plugin's search).

A path argument is checked by the path guard and the deny rules before the call runs; the files a
walk reaches are not arguments, so without this they would be checked by nothing. Every file and
folder a walk opens or lists goes through `hidden` here, in one place: agent-cli's own state
(tools/paths.py) and the config deny rules as they apply to that file (ToolContext.denied), so a
rule `path = "secrets/*"` keeps secrets/ out of `search_text(".", ".")` exactly as it keeps it
out of read_file. Links are never followed and the walk goes through folder descriptors.
"""

from __future__ import annotations

import os
from collections.abc import Container, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from agent_cli.tools.base import ToolContext
from agent_cli.tools.paths import protected_reason


@dataclass
class WalkCount:
    """What a walk left out because a deny rule refuses it, so the tool can say so (never
    which). (agent-cli's own state is left out without a word, as the guard always did.)"""

    hidden: int = 0

    def note(self) -> str:
        if not self.hidden:
            return ""
        s = "y" if self.hidden == 1 else "ies"
        return f"[{self.hidden} entr{s} left out by a deny rule in the user's config]"


def hidden(ctx: ToolContext, real: Path, count: WalkCount | None = None) -> bool:
    """True when a walk must neither open nor show `real` (a real path in the workspace):
    agent-cli's own state, or a file a deny rule refuses (counted in `count`)."""
    if protected_reason(real) is not None:
        return True
    if ctx.denied is not None and ctx.denied(str(real)) is not None:
        if count is not None:
            count.hidden += 1
        return True
    return False


def walk_files(ctx: ToolContext, root: Path, count: WalkCount,
               skip_dirs: Container[str] = ()) -> Generator[tuple[int, str, Path], None, None]:
    """(folder descriptor, file name, real path) of every file below `root` (a real folder in
    the workspace) that the walk may open, in sorted order; folders named in `skip_dirs` and
    everything `hidden` are left out (those counted in `count`). Closing the iterator closes the
    folder descriptors still open."""
    walker = cast("Generator[tuple[str, list[str], list[str], int], None, None]",
                  os.fwalk(root, follow_symlinks=False))
    try:
        for dirpath, dirnames, filenames, dir_fd in walker:
            here = Path(dirpath)
            kept = []
            for d in sorted(dirnames):
                if d not in skip_dirs and not hidden(ctx, here / d, count):
                    kept.append(d)
            dirnames[:] = kept
            for name in sorted(filenames):
                if not hidden(ctx, here / name, count):
                    yield dir_fd, name, here / name
    finally:
        walker.close()  # closes the folder descriptors still open, also when stopped early


def listed(ctx: ToolContext, folder: Path, names: list[str], count: WalkCount) -> list[str]:
    """The entries of `folder` a listing may show (the rest counted in `count`)."""
    return [name for name in names if not hidden(ctx, folder / name, count)]
