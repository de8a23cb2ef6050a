"""The preview's folder anchor: where a write is previewed is where it goes, or nowhere.

`file_state` (the snapshot write_file and edit_file take before the panel) records a
`DirAnchor`: the deepest existing folder on the path, reached from the workspace root one
component at a time without following links. A link or a regular file where a folder is
expected must be refused by the anchor itself, whatever the link points at (outside the
workspace or inside it): the anchor is what the write later checks its descriptor against, so
an anchor taken through a link would bless the link. And a folder swapped for another between
the panel and the yes is refused by the write. Real links, real files, real folders.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_cli.errors import PathRefused
from agent_cli.tools.paths import dir_anchor, file_state, write_bytes_guarded, write_resolved


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_anchor_refuses_a_link_to_a_folder_outside(workspace: Path, outside: Path) -> None:
    """The path was resolved while `sub` was a folder; now `sub` is a link out."""
    os.symlink(outside, workspace / "sub")
    real = workspace.resolve() / "sub" / "secret.txt"
    with pytest.raises(PathRefused, match="symbolic link"):
        dir_anchor(workspace, real, "sub/secret.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        write_resolved(workspace, real, "sub/secret.txt", b"pwned")
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert _listing(outside) == ["secret.txt"]


def test_anchor_refuses_a_link_to_a_folder_inside(workspace: Path) -> None:
    """A link that stays inside the workspace is still a link: the anchor never follows one
    (the resolved path it walks holds none, so a link met on the way was planted)."""
    (workspace / "inner").mkdir()
    os.symlink(workspace / "inner", workspace / "sub")
    real = workspace.resolve() / "sub" / "f.txt"
    with pytest.raises(PathRefused, match="symbolic link"):
        dir_anchor(workspace, real, "sub/f.txt")
    assert _listing(workspace / "inner") == []


def test_anchor_refuses_a_deeper_link(workspace: Path, outside: Path) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    os.symlink(outside, workspace / "a" / "b" / "c")
    real = workspace.resolve() / "a" / "b" / "c" / "d" / "f.txt"
    with pytest.raises(PathRefused, match="symbolic link"):
        dir_anchor(workspace, real, "a/b/c/d/f.txt")
    assert _listing(outside) == ["secret.txt"]


def test_anchor_refuses_a_file_where_a_folder_is_expected(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    real = workspace.resolve() / "notes.txt" / "new.txt"
    with pytest.raises(PathRefused, match="not a folder"):
        dir_anchor(workspace, real, "notes.txt/new.txt")
    with pytest.raises(PathRefused, match="not a folder"):
        file_state(workspace, "notes.txt/new.txt")
    assert (workspace / "notes.txt").read_text() == "mine\n"


def test_preview_through_a_link_inside_anchors_the_real_folder(workspace: Path) -> None:
    """A link inside the workspace is followed at check time: the preview shows, and anchors,
    the folder it leads to, never the link."""
    (workspace / "inner").mkdir()
    os.symlink(workspace / "inner", workspace / "sub")
    state = file_state(workspace, "sub/f.txt")
    assert state.anchor is not None
    inner = os.stat(workspace / "inner")
    assert (state.anchor.depth, state.anchor.dev, state.anchor.ino) == (1, inner.st_dev,
                                                                        inner.st_ino)
    assert state.anchor.real == str(workspace.resolve() / "inner" / "f.txt")
    write_bytes_guarded(workspace, "sub/f.txt", b"ok\n", state)
    assert (workspace / "inner" / "f.txt").read_bytes() == b"ok\n"


def test_folder_swapped_for_another_folder_after_the_preview_is_refused(
        workspace: Path, tmp_path: Path) -> None:
    (workspace / "sub").mkdir()
    state = file_state(workspace, "sub/f.txt")
    assert state.anchor is not None and state.anchor.depth == 1
    os.rename(workspace / "sub", tmp_path / "moved")  # the folder the panel showed, moved away
    (workspace / "sub").mkdir()  # and another one put in its place
    with pytest.raises(PathRefused, match="replaced or moved"):
        write_bytes_guarded(workspace, "sub/f.txt", b"x", state)
    assert _listing(workspace / "sub") == [] and _listing(tmp_path / "moved") == []


def test_missing_folders_anchor_at_the_deepest_existing_one(workspace: Path,
                                                            outside: Path) -> None:
    """A folder the write will create is not there to anchor; the deepest one that is, is.
    A link planted where the missing folder was is refused when the write walks it."""
    (workspace / "a").mkdir()
    state = file_state(workspace, "a/new/deeper/f.txt")
    assert state.anchor is not None and state.anchor.depth == 1
    os.symlink(outside, workspace / "a" / "new")
    with pytest.raises(PathRefused):
        write_resolved(workspace, workspace.resolve() / "a" / "new" / "deeper" / "f.txt",
                       "a/new/deeper/f.txt", b"pwned", state)
    assert _listing(outside) == ["secret.txt"]
