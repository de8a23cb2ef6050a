"""The prompt history on a full disk: prompt-toolkit is never handed an exception (it would print
"Exception [Errno 28] ... Press ENTER to continue" and lose the line); the entry is kept in memory,
the fault is said once, and the entries land, whole, when space returns."""

from __future__ import annotations

from prompt_toolkit.history import FileHistory

from agent_cli.ui.history import RedactedFileHistory
from tests.faults.conftest import SmallDisk


def test_a_history_entry_on_a_full_disk_is_kept_and_written_later(disk: SmallDisk) -> None:
    path = disk.root / "history"
    history = RedactedFileHistory(path)
    history.append_string("first")
    before = path.read_bytes()
    disk.fill()
    long = "x" * 9000  # longer than the slack of the file's last page
    history.append_string(long)  # what prompt-toolkit calls on Enter: must not raise
    history.append_string("third")
    assert path.read_bytes() == before, "a refused entry left part of itself"
    said = history.take_fault()
    assert said is not None and "prompt history" in said and "is full" in said
    assert history.take_fault() is None, "the fault is said once, not at every line"
    assert list(history.get_strings())[-1] == "third"  # Up-arrow still has them
    disk.free()
    history.append_string("fourth")
    assert history.take_fault() is None
    on_disk = list(FileHistory(str(path)).load_history_strings())
    assert on_disk == ["fourth", "third", long, "first"]
    assert disk.debris() == ["history"]


def test_a_history_on_a_read_only_disk_never_raises(disk: SmallDisk) -> None:
    path = disk.root / "history"
    history = RedactedFileHistory(path)
    disk.read_only()
    try:
        history.append_string("typed while read-only")
        said = history.take_fault()
        assert said is not None and "read-only file system" in said
    finally:
        disk.writable()
