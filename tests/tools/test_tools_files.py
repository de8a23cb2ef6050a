"""The read-only file tools (read_file, list_dir, search_text) and get_time, on real files,
links and FIFOs: they never follow a link out of the workspace and never block."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agent_cli.errors import PathRefused, ToolFailed
from agent_cli.tools.base import ToolContext
from agent_cli.tools.loader import load_tools
from agent_cli.tools.registry import Registry


@pytest.fixture(scope="module")
def tools() -> Registry:
    registry, report = load_tools([])
    assert report.errors == []
    return registry


def ctx(ws: Path, max_read: int = 2_000_000) -> ToolContext:
    return ToolContext(workspace=ws, timeout_s=10, output_cap=30_000, max_read_bytes=max_read)


def run(tools: Registry, ws: Path, name: str, c: ToolContext | None = None, **kw: Any) -> str:
    tool = tools.get(name)
    assert tool is not None
    out = tool.run(tool.args.model_validate(kw), c or ctx(ws))
    assert isinstance(out, str)
    return out


@pytest.fixture
def tree(tmp_path: Path, workspace: Path) -> Path:
    """A workspace with files, a link in, links out, a FIFO and a secret next door."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle in the secret file\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('needle')\nx = 1\n")
    (workspace / "README.md").write_text("a needle here too\n")
    (workspace / "blob.bin").write_bytes(b"\x00needle\x00")
    os.symlink("src/main.py", workspace / "alias.py")
    os.symlink(outside / "secret.txt", workspace / "leak.txt")
    os.symlink(outside, workspace / "leakdir")
    os.mkfifo(workspace / "pipe")
    return outside


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p).encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


# --------------------------------------------------------------------------- read_file


def test_read_file_reads_and_states_a_cut(tools: Registry, workspace: Path) -> None:
    (workspace / "big.txt").write_text("0123456789" * 10)
    assert run(tools, workspace, "read_file", path="big.txt").startswith("0123456789")
    out = run(tools, workspace, "read_file", c=ctx(workspace, max_read=25), path="big.txt")
    assert out.startswith("0123456789012345678901234\n")
    assert "file is 100 bytes; only the first 25 were read" in out


def test_read_file_follows_a_link_inside_only(tools: Registry, workspace: Path,
                                              tree: Path) -> None:
    assert run(tools, workspace, "read_file", path="alias.py").startswith("print('needle')")
    with pytest.raises(PathRefused, match="symbolic link"):
        run(tools, workspace, "read_file", path="leak.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        run(tools, workspace, "read_file", path="leakdir/secret.txt")


def test_read_file_refuses_a_fifo_at_once(tools: Registry, workspace: Path, tree: Path) -> None:
    with pytest.raises(PathRefused, match="not a regular file"):
        run(tools, workspace, "read_file", path="pipe")


def test_read_file_replaces_bad_bytes(tools: Registry, workspace: Path, tree: Path) -> None:
    assert run(tools, workspace, "read_file", path="blob.bin") == "\x00needle\x00"
    (workspace / "latin.txt").write_bytes(b"caf\xe9")
    assert run(tools, workspace, "read_file", path="latin.txt") == "caf\ufffd"


# --------------------------------------------------------------------------- list_dir


def test_list_dir_shows_kinds_and_never_follows_links(tools: Registry, workspace: Path,
                                                      tree: Path) -> None:
    out = run(tools, workspace, "list_dir", path=".")
    lines = out.splitlines()
    assert "src/  (dir)" in lines
    assert "README.md  (file 18 bytes)" in lines
    assert "alias.py  (link -> src/main.py, not followed)" in lines
    assert f"leakdir  (link -> {tree}, not followed)" in lines
    assert "pipe  (fifo)" in lines
    assert "secret.txt" not in out.replace(f"{tree}/secret.txt", "")


def test_list_dir_refuses_a_link_out_and_a_file(tools: Registry, workspace: Path,
                                                tree: Path) -> None:
    with pytest.raises(PathRefused, match="symbolic link"):
        run(tools, workspace, "list_dir", path="leakdir")
    with pytest.raises(PathRefused, match="not a folder"):
        run(tools, workspace, "list_dir", path="README.md")
    with pytest.raises(PathRefused, match="outside the workspace"):
        run(tools, workspace, "list_dir", path="..")


def test_list_dir_of_an_empty_folder(tools: Registry, workspace: Path) -> None:
    assert run(tools, workspace, "list_dir", path=".") == "(empty folder)"


# --------------------------------------------------------------------------- search_text


def test_search_text_stays_inside_and_skips_links_fifos_and_binaries(
        tools: Registry, workspace: Path, tree: Path) -> None:
    before = digest(tree)
    out = run(tools, workspace, "search_text", pattern="needle", path=".")
    assert set(out.splitlines()) == {"README.md:1: a needle here too",
                                     "src/main.py:1: print('needle')"}
    assert digest(tree) == before


def test_search_text_in_one_file_and_in_a_link_out(tools: Registry, workspace: Path,
                                                   tree: Path) -> None:
    assert run(tools, workspace, "search_text", pattern=r"x = \d",
               path="src/main.py") == "src/main.py:2: x = 1"
    with pytest.raises(PathRefused, match="symbolic link"):
        run(tools, workspace, "search_text", pattern="needle", path="leakdir")
    with pytest.raises(PathRefused, match="not a regular file"):
        run(tools, workspace, "search_text", pattern="needle", path="pipe")


def test_search_text_bad_pattern_and_no_match(tools: Registry, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\n")
    with pytest.raises(ToolFailed, match="not a valid regular expression"):
        run(tools, workspace, "search_text", pattern="(", path=".")
    assert run(tools, workspace, "search_text", pattern="absent", path=".") == "no matches"


def test_search_text_stops_at_the_match_limit(tools: Registry, workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * 600)
    out = run(tools, workspace, "search_text", pattern="hit", path=".")
    assert out.count("many.txt:") == 500 and out.endswith("[... stopped at 500 matches ...]")


# --------------------------------------------------------------------------- get_time


def test_get_time_runs_date_in_the_zone(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "get_time", timezone="Asia/Kolkata")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d IST \(UTC\+0530\), \w+day "
                        r"\[Asia/Kolkata\]", out), out
    assert "UTC+0000" in run(tools, workspace, "get_time")


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "UTC;id"])
def test_get_time_refuses_unknown_zones(tools: Registry, workspace: Path, zone: str) -> None:
    with pytest.raises(ToolFailed, match="time zone"):
        run(tools, workspace, "get_time", timezone=zone)
