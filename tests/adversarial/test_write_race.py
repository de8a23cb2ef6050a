"""Family: an approved write lands in the folder the panel showed, or nowhere.

Between the panel and the yes, something else on the machine (a build, a hostile script the model
started earlier) swaps `docs` for a link or for another folder. The write used to resolve the
path again and follow it. Now the panel's snapshot records the resolved path and the identity
(device, inode) of its folder, and the write checks both on the descriptor it writes through.
The swap happens inside the approver, after the panel was built, exactly when a person reads it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_cli.approval import Approved, Decision
from agent_cli.calls import Call
from tests.scripts import calls, done

from .conftest import Harness, tree_hashes, use

Swap = Callable[[Path, Path], None]


class SwapThenYes:
    """Says yes, but only after changing the workspace under the panel."""

    def __init__(self, swap: Swap, ws: Path, outside: Path) -> None:
        self.swap, self.ws, self.outside = swap, ws, outside
        self.seen: list[Call] = []

    def decide(self, request: Call) -> Decision:
        self.seen.append(request)
        self.swap(self.ws, self.outside)
        return Approved(request.id, request.args_hash)


def link_to_outside(ws: Path, outside: Path) -> None:
    shutil.rmtree(ws / "docs")
    (ws / "docs").symlink_to(outside)


def link_to_other_inside(ws: Path, outside: Path) -> None:
    shutil.rmtree(ws / "docs")
    (ws / "docs").symlink_to(ws / "other")


def other_folder_in_its_place(ws: Path, outside: Path) -> None:
    (ws / "docs").rename(ws / "docs.old")
    (ws / "other").rename(ws / "docs")


def identical_copy_in_its_place(ws: Path, outside: Path) -> None:
    """Same names, same bytes, but not the folder that was shown."""
    shutil.copytree(ws / "docs", ws / "docs.copy")
    (ws / "docs").rename(ws / "docs.old")
    (ws / "docs.copy").rename(ws / "docs")


SWAPS: dict[str, Swap] = {
    "link-to-outside": link_to_outside,
    "link-to-other-inside": link_to_other_inside,
    "other-folder-moved-in": other_folder_in_its_place,
    "identical-copy": identical_copy_in_its_place,
}


def setup(harness: Harness, tmp_path: Path) -> tuple[Path, Path]:
    ws = harness.workspace
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "setup.sh").write_text("echo outside\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "setup.sh").write_text("echo docs\n")
    (ws / "docs" / "README").write_text("docs\n")
    (ws / "other").mkdir()
    (ws / "other" / "setup.sh").write_text("echo docs\n")
    return ws, outside


CALLS = {
    "create": ("write_file", {"path": "docs/new.sh", "content": "echo approved\n"}),
    "create-in-new-folder": ("write_file", {"path": "docs/sub/new.sh",
                                            "content": "echo approved\n"}),
    "overwrite": ("write_file", {"path": "docs/setup.sh", "content": "echo approved\n"}),
    "edit": ("edit_file", {"path": "docs/setup.sh", "old_string": "docs",
                           "new_string": "approved"}),
}


# An identical copy only matters where the file existed (a create into a copied folder is the
# other-folder case).
CASES = [(call, swap) for call in CALLS for swap in SWAPS
         if not (swap == "identical-copy" and call.startswith("create"))]


@pytest.mark.parametrize(("call", "swap"), CASES)
def test_a_folder_swapped_after_the_panel_gets_nothing(harness: Harness, tmp_path: Path,
                                                       swap: str, call: str) -> None:
    ws, outside = setup(harness, tmp_path)
    approver = SwapThenYes(SWAPS[swap], ws, outside)
    tool, args = CALLS[call]
    o = harness.run([calls(use(tool, args)), done()], approver=approver)
    assert len(approver.seen) == 1, "the panel was shown and approved"
    [result] = o.sent_back(1)
    assert result["is_error"] is True, result
    content = result["content"]
    assert any(w in content for w in ("replaced", "link", "moved")), content
    assert "nothing was written" in content or "refused" in content, content
    # Nothing anywhere says "approved": not outside, not in the folder now called docs, not in
    # the one that was moved away.
    for root in (ws, outside):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert "approved" not in path.read_text(), path
    assert (outside / "setup.sh").read_text() == "echo outside\n"


def test_without_a_swap_the_write_goes_through(harness: Harness, tmp_path: Path) -> None:
    ws, outside = setup(harness, tmp_path)
    before = tree_hashes(outside)
    o = harness.run([calls(use("write_file", {"path": "docs/sub/new.sh",
                                              "content": "echo approved\n"}),
                           use("edit_file", {"path": "docs/setup.sh", "old_string": "docs",
                                             "new_string": "approved"}, "toolu_2")), done()],
                    approver=SwapThenYes(lambda w, o: None, ws, outside))
    assert [r.get("is_error", False) for r in o.sent_back(1)] == [False, False]
    assert (ws / "docs" / "sub" / "new.sh").read_text() == "echo approved\n"
    assert (ws / "docs" / "setup.sh").read_text() == "echo approved\n"
    assert tree_hashes(outside) == before
