"""Pins for every file of a plugin folder, however a plugin would load it.

An import hook (tools/pinned_imports.py) sees `import _helpers`, but not a plugin that loads its
helper by path (`importlib.util.spec_from_file_location`, `runpy`, `open(...).read()` + `exec`, a
`.pth`, a data file it evaluates). So before any plugin of a user's folder runs, every file in
that folder's tree is read through the gate (trusted_input.py: by its name under the folder, no
link leading out of it, regular files only, capped) and checked against its pin, keyed by that
name: the first time a file is seen it is pinned; a file that changed since (or a name that now
leads through a link, or a link out of the folder) holds out every plugin of the folder, since
any of them may load it, with the whole change and the way to trust it (`agent-cli trust FILE`).
The plugin files themselves then run from the very bytes checked here.

Limits: a file is checked when the folder loads; a file a plugin reads later by path, changed
while the session runs, is checked at the next start (an import is checked when it happens, by
the hook). Version-control metadata (`.git`, `.hg`, `.svn`) is not pinned. agent-cli writes no
bytecode while plugins load, so `__pycache__` files in a plugin folder are the user's own and are
pinned like the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_cli.tools.trust import PluginPins

MAX_FILES = 2000
"""A plugin folder with more files than this is not loaded (it is not a plugin folder)."""
MAX_FILE_BYTES = 64 << 20
"""Largest file of a plugin folder that is read and pinned; a larger one holds the folder out."""
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass
class FolderPins:
    """What checking a plugin folder gave."""

    sources: dict[str, bytes] = field(default_factory=dict)
    """Name under the folder -> the bytes checked (the plugin files run from these)."""
    problems: list[str] = field(default_factory=list)
    """One sentence per file that changed, is refused or cannot be pinned."""


def folder_names(folder: Path) -> tuple[list[str], list[str]]:
    """(names of the files under `folder`, relative, in order; problems), walking without
    following links to folders (a link to a folder that leads out of it is a problem)."""
    names: list[str] = []
    problems: list[str] = []
    root = os.path.realpath(folder)
    for here, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for d in list(dirs):
            full = os.path.join(here, d)
            if os.path.islink(full):
                dirs.remove(d)
                real = os.path.realpath(full)
                if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
                    problems.append(f"{full}: a link to a folder outside the plugin folder; "
                                    "a plugin could load files from there unpinned. Put the "
                                    "files in the folder itself.")
        for f in sorted(files):
            names.append(os.path.relpath(os.path.join(here, f), folder))
        if len(names) > MAX_FILES:
            problems.append(f"{folder}: more than {MAX_FILES:,} files, too many to pin; this "
                            "is not loaded as a plugin folder.")
            break
    return names, problems


def check_folder(folder: Path, pins: PluginPins) -> FolderPins:
    """Read and check every file of the folder (first use pins it)."""
    from agent_cli.trusted_input import InputRefused, open_trusted_text

    out = FolderPins()
    names, out.problems = folder_names(folder)
    if out.problems:
        return out
    for name in names:
        try:
            item = open_trusted_text(folder, name, max_bytes=MAX_FILE_BYTES,
                                     what="file of a plugin folder")
        except InputRefused as e:
            out.problems.append(f"{folder / name}: {e}")
            continue
        check = pins.check_input(item, what="file of a plugin folder",
                                 how="agent-cli tools --trust")
        if not check.ok:
            out.problems.append(check.message)
            continue
        out.sources[name] = item.data
    return out


def held_out(folder: Path, plugins: list[str]) -> str:
    """The sentence for the plugins a changed folder holds out."""
    shown = ", ".join(plugins) or "(none)"
    return (f"{folder}: its plugins ({shown}) were not loaded, because a file of the folder "
            "changed or cannot be pinned (named above) and any of them may load it. Trust it "
            "with `agent-cli trust FILE` once you have read the change.")
