"""The workspace path guard, with real files, symbolic links, hard links, FIFOs and sockets.

Every test that could touch something outside the workspace hashes the outside tree before and
after and asserts it is byte-identical. The containment and snapshot cases also run through the
real loop (ScriptedProvider + ScriptedApprover), since that is how a model reaches the tools.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import Decision, Gate, ScriptedApprover
from agent_cli.calls import Call
from agent_cli.errors import PathRefused
from agent_cli.loop import Loop
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.tools.base import ToolContext
from agent_cli.tools.loader import load_tools
from agent_cli.tools.paths import (
    FileState,
    file_state,
    read_bytes_capped,
    read_text_capped,
    resolve_in_workspace,
    write_bytes_guarded,
    write_resolved,
)
from tests.scripts import use

# --------------------------------------------------------------------------- helpers


def tree_hash(root: Path) -> dict[str, str]:
    """Every entry under root (links not followed) with a hash of its content or target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace holding something worth protecting, plus the sibling
    whose name starts with the workspace's name (the string-prefix trap)."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    evil = tmp_path / "ws-evil"
    evil.mkdir()
    (evil / "loot.txt").write_text("loot\n")
    return out


def protected(tmp_path: Path) -> dict[str, str]:
    return {k: v for k, v in tree_hash(tmp_path).items() if not k.startswith("ws/")
            and k != "ws"}


def run_loop(workspace: Path, calls: list[dict[str, Any]], answers: list[str],
             approver: Any = None) -> tuple[list[ev.AnyEvent], list[dict[str, Any]]]:
    """One user turn: the model makes `calls` (one reply), then ends. Returns (events, results)."""
    registry, report = load_tools([])
    assert report.errors == []
    provider = ScriptedProvider([{"content": calls, "stop_reason": "tool_use"},
                                 {"content": [{"type": "text", "text": "ok"}],
                                  "stop_reason": "end_turn"}])
    events: list[ev.AnyEvent] = []
    loop = Loop(provider, registry, Gate(approver or ScriptedApprover(answers)), events.append,
                workspace=workspace)
    history: list[dict[str, Any]] = []
    loop.run_turn(history, "go")
    results = history[2]["content"]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    return events, results


def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, timeout_s=10, output_cap=30_000)


# --------------------------------------------------------------------------- containment


def test_plain_paths_resolve_inside(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("x")
    root = Path(os.path.realpath(workspace))
    assert resolve_in_workspace(workspace, "src/a.py") == root / "src" / "a.py"
    assert resolve_in_workspace(workspace, "./src/../src/a.py") == root / "src" / "a.py"
    assert resolve_in_workspace(workspace, str(root / "src")) == root / "src"
    assert resolve_in_workspace(workspace, "new/dir/file.txt") == root / "new" / "dir" / "file.txt"


@pytest.mark.parametrize("raw", ["", "   ", "\t"])
def test_empty_path_is_refused(workspace: Path, raw: str) -> None:
    with pytest.raises(PathRefused, match="empty"):
        resolve_in_workspace(workspace, raw)


def test_nul_byte_is_refused(workspace: Path) -> None:
    with pytest.raises(PathRefused, match="NUL"):
        resolve_in_workspace(workspace, "a\x00b")


def test_sibling_with_common_prefix_is_outside(workspace: Path, outside: Path) -> None:
    evil = workspace.parent / "ws-evil" / "loot.txt"
    for raw in (str(evil), "../ws-evil/loot.txt"):
        with pytest.raises(PathRefused, match="outside the workspace"):
            resolve_in_workspace(workspace, raw)


@pytest.mark.parametrize("raw", ["../outside/secret.txt", "/etc/passwd", "..", "~",
                                 "a/../../outside/secret.txt"])
def test_dotdot_and_absolute_paths_that_leave_are_refused(workspace: Path, outside: Path,
                                                          raw: str) -> None:
    with pytest.raises(PathRefused, match="outside the workspace"):
        resolve_in_workspace(workspace, raw)


def test_symlinks_out_are_refused_and_symlinks_in_are_followed(workspace: Path,
                                                               outside: Path) -> None:
    (workspace / "inner.txt").write_text("in")
    os.symlink(outside / "secret.txt", workspace / "file_link")
    os.symlink(outside, workspace / "dir_link")
    os.symlink("inner.txt", workspace / "good_link")
    os.symlink(outside / "nothing-yet.txt", workspace / "dangling_out")
    for raw in ("file_link", "dir_link/secret.txt", "dir_link", "dangling_out"):
        with pytest.raises(PathRefused, match="symbolic link"):
            resolve_in_workspace(workspace, raw)
    assert resolve_in_workspace(workspace, "good_link").name == "inner.txt"


def test_workspace_reached_through_a_symlink_still_contains(tmp_path: Path) -> None:
    real = tmp_path / "real_ws"
    real.mkdir()
    (real / "f.txt").write_text("hello")
    alias = tmp_path / "alias_ws"
    alias.symlink_to(real)
    assert read_text_capped(alias, "f.txt", 100)[0] == "hello"
    assert read_text_capped(alias, str(alias / "f.txt"), 100)[0] == "hello"


def test_kernel_views_are_refused_even_with_root_as_workspace() -> None:
    with pytest.raises(PathRefused, match="kernel view"):
        resolve_in_workspace(Path("/"), "/proc/self/environ")
    with pytest.raises(PathRefused, match="kernel view"):
        resolve_in_workspace(Path("/"), "dev/zero")


# --------------------------------------------------------------------------- reading


def test_read_is_capped_and_decoded_with_replacement(workspace: Path) -> None:
    (workspace / "bin.dat").write_bytes(b"ok \xff\xfe end" + b"x" * 1000)
    text, size, cut = read_text_capped(workspace, "bin.dat", 9)
    assert text == "ok \ufffd\ufffd end"
    assert size == 1009 and cut is True
    data, size, cut = read_bytes_capped(workspace, "bin.dat", 5000)
    assert len(data) == 1009 and cut is False


def test_fifo_is_refused_without_blocking(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    # Nobody ever writes to the pipe: a blocking open would hang this test forever.
    with pytest.raises(PathRefused, match="not a regular file"):
        read_bytes_capped(workspace, "pipe", 100)
    with pytest.raises(PathRefused, match="not a regular file"):
        file_state(workspace, "pipe")
    with pytest.raises(PathRefused, match="not a regular file"):
        write_bytes_guarded(workspace, "pipe", b"data")


def test_socket_and_folder_are_refused_for_reading(workspace: Path) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(workspace / "sock"))
        with pytest.raises(PathRefused):
            read_bytes_capped(workspace, "sock", 100)
    finally:
        sock.close()
    (workspace / "d").mkdir()
    with pytest.raises(PathRefused, match="folder"):
        read_bytes_capped(workspace, "d", 100)


def test_missing_file_says_so(workspace: Path) -> None:
    with pytest.raises(PathRefused, match="does not exist"):
        read_bytes_capped(workspace, "nope.txt", 100)
    assert file_state(workspace, "nope.txt") == FileState(False)


def test_file_below_a_file_says_not_a_folder(workspace: Path) -> None:
    (workspace / "f.txt").write_text("x")
    with pytest.raises(PathRefused, match="not a folder"):
        read_bytes_capped(workspace, "f.txt/inner", 100)


# --------------------------------------------------------------------------- writing


def test_write_creates_parents_and_content(workspace: Path) -> None:
    write_bytes_guarded(workspace, "a/b/c.txt", b"hello")
    assert (workspace / "a" / "b" / "c.txt").read_bytes() == b"hello"
    write_bytes_guarded(workspace, "a/b/c.txt", b"hi")
    assert (workspace / "a" / "b" / "c.txt").read_bytes() == b"hi"


def test_write_refuses_hard_linked_file(tmp_path: Path, workspace: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", workspace / "hard.txt")
    before = protected(tmp_path)
    with pytest.raises(PathRefused, match="hard links"):
        write_bytes_guarded(workspace, "hard.txt", b"overwritten")
    assert protected(tmp_path) == before
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_write_through_symlink_out_is_refused(tmp_path: Path, workspace: Path,
                                             outside: Path) -> None:
    os.symlink(outside / "secret.txt", workspace / "link.txt")
    os.symlink(outside, workspace / "dirlink")
    before = protected(tmp_path)
    for raw in ("link.txt", "dirlink/secret.txt", "dirlink/new.txt", "../ws-evil/loot.txt"):
        with pytest.raises(PathRefused):
            write_bytes_guarded(workspace, raw, b"pwned")
    assert protected(tmp_path) == before


def test_folder_swapped_for_a_link_after_the_check_is_refused(tmp_path: Path, workspace: Path,
                                                              outside: Path) -> None:
    (workspace / "sub").mkdir()
    real = resolve_in_workspace(workspace, "sub/secret.txt")  # checked: inside
    before = protected(tmp_path)
    (workspace / "sub").rmdir()
    os.symlink(outside, workspace / "sub")  # the race: swapped before the write
    with pytest.raises(PathRefused, match="symbolic link"):
        write_resolved(workspace, real, "sub/secret.txt", b"pwned")
    assert protected(tmp_path) == before


def test_file_swapped_for_a_link_after_the_check_is_refused(tmp_path: Path, workspace: Path,
                                                            outside: Path) -> None:
    (workspace / "f.txt").write_text("mine")
    real = resolve_in_workspace(workspace, "f.txt")
    before = protected(tmp_path)
    (workspace / "f.txt").unlink()
    os.symlink(outside / "secret.txt", workspace / "f.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        write_resolved(workspace, real, "f.txt", b"pwned")
    assert protected(tmp_path) == before


def test_write_compares_the_snapshot_on_the_file_it_writes(workspace: Path) -> None:
    (workspace / "f.txt").write_text("v1")
    seen = file_state(workspace, "f.txt")
    (workspace / "f.txt").write_text("v2 by someone else")
    with pytest.raises(PathRefused, match="changed after the preview"):
        write_bytes_guarded(workspace, "f.txt", b"mine", seen)
    assert (workspace / "f.txt").read_text() == "v2 by someone else"
    absent = file_state(workspace, "new.txt")
    (workspace / "new.txt").write_text("created meanwhile")
    with pytest.raises(PathRefused, match="created by someone else"):
        write_bytes_guarded(workspace, "new.txt", b"mine", absent)
    assert (workspace / "new.txt").read_text() == "created meanwhile"


# --------------------------------------------------------------------------- through the loop


def test_loop_refuses_every_way_out(tmp_path: Path, workspace: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", workspace / "link.txt")
    os.symlink(outside, workspace / "dirlink")
    os.link(outside / "secret.txt", workspace / "hard.txt")
    before = protected(tmp_path)
    calls = [
        use("t1", "read_file", {"path": "link.txt"}),
        use("t2", "read_file", {"path": "../ws-evil/loot.txt"}),
        use("t3", "write_file", {"path": "dirlink/secret.txt", "content": "pwned"}),
        use("t4", "write_file", {"path": "hard.txt", "content": "pwned"}),
        use("t5", "edit_file", {"path": "link.txt", "old_string": "top", "new_string": "no"}),
        use("t6", "write_file", {"path": str(outside / "secret.txt"), "content": "pwned"}),
        use("t7", "list_dir", {"path": "dirlink"}),
        use("t8", "search_text", {"pattern": "secret", "path": "dirlink"}),
        use("t9", "read_file", {"path": ""}),
    ]
    _events, results = run_loop(workspace, calls, ["y"] * 10)
    assert all(r.get("is_error") for r in results), results
    text = "\n".join(r["content"] for r in results)
    assert "top secret" not in text and "loot" not in text.replace("loot.txt", "")
    assert "symbolic link" in results[0]["content"]
    assert "outside the workspace" in results[1]["content"]
    assert "hard links" in results[3]["content"]
    assert "empty" in results[8]["content"]
    assert protected(tmp_path) == before


def test_loop_binds_the_approval_to_the_previewed_file(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("line one\n")

    class EditorMeanwhile:
        """Approves, but someone edits the file while the panel is up."""

        def __init__(self) -> None:
            self.previews: list[str | None] = []

        def decide(self, request: Call) -> Decision:
            self.previews.append(request.preview)
            (workspace / "notes.txt").write_text(f"their edit {len(self.previews)}\n")
            return ScriptedApprover(["y"]).decide(request)

    approver = EditorMeanwhile()
    calls = [use("w1", "write_file", {"path": "notes.txt", "content": "mine\n"}),
             use("e1", "edit_file", {"path": "notes.txt", "old_string": "their",
                                     "new_string": "our"})]
    _events, results = run_loop(workspace, calls, [], approver=approver)
    assert results[0]["is_error"] and "changed after the preview" in results[0]["content"]
    assert "OVERWRITE" in (approver.previews[0] or "")
    # The edit was previewed against "their edit" and then the file changed again.
    assert results[1]["is_error"] and "changed after the preview" in results[1]["content"]
    assert "EDIT notes.txt: 1 replacement" in (approver.previews[1] or "")
    assert (workspace / "notes.txt").read_text() == "their edit 2\n"


def test_loop_refuses_a_folder_swapped_for_a_link_during_the_panel(tmp_path: Path,
                                                                   workspace: Path,
                                                                   outside: Path) -> None:
    (workspace / "sub").mkdir()
    before = protected(tmp_path)

    def swap_then_yes(request: Call) -> Decision:
        (workspace / "sub").rmdir()
        os.symlink(outside, workspace / "sub")
        return ScriptedApprover(["y"]).decide(request)

    approver = type("Swap", (), {"decide": staticmethod(swap_then_yes)})()
    _events, results = run_loop(workspace, [use("w1", "write_file",
                                                 {"path": "sub/secret.txt", "content": "x"})],
                                [], approver=approver)
    assert results[0]["is_error"]
    assert protected(tmp_path) == before
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_snapshot_of_unchanged_file_lets_the_write_through(workspace: Path) -> None:
    (workspace / "a.txt").write_text("old\n")
    events, results = run_loop(workspace, [use("w", "write_file",
                                                {"path": "a.txt", "content": "new\n"})], ["y"])
    assert not results[0].get("is_error"), results
    assert (workspace / "a.txt").read_text() == "new\n"
    started = [e for e in events if isinstance(e, ev.ToolStarted)]
    assert len(started) == 1




@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs a writable /dev/shm")
def test_a_workspace_inside_dev_shm_may_use_its_own_files(tmp_path: Path) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        ws = Path(d)
        write_bytes_guarded(ws, "f.txt", b"ok")
        assert read_bytes_capped(ws, "f.txt", 10)[0] == b"ok"
        with pytest.raises(PathRefused):
            resolve_in_workspace(ws, "/dev/zero")
