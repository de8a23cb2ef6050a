"""Real file systems that refuse writes: a small tmpfs that can be filled to the last byte,
remounted read-only, and emptied again.

Mounting needs root (CI runs as root). Anywhere else these tests skip with the reason, except
under CI=true, where a missing mount is a failure: a fault test that cannot run is a defect
there, not a skip.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class SmallDisk:
    """A tmpfs mounted at `root`. `fill()` takes every free byte (a file of filler, written until
    the kernel says ENOSPC); `free()` gives it back; `read_only()` / `writable()` remount."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / ".filler"

    def fill(self) -> None:
        chunk = b"\0" * 4096
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
            for size in (512, 64, 1):  # the last page's slack too
                while True:
                    try:
                        os.write(fd, b"\0" * size)
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.root)], check=True)

    def writable(self) -> None:
        subprocess.run(["mount", "-o", "remount,rw", str(self.root)], check=True)

    def debris(self) -> list[str]:
        """Files left in the disk besides the filler (names relative to the root)."""
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*")
                      if p != self.filler and p.is_file())


def need_mount() -> None:
    """Skip (fail under CI=true) when this process cannot mount a tmpfs."""
    why = None
    if os.geteuid() != 0:
        why = "mounting a tmpfs needs root (CI runs these as root)"
    elif shutil.which("mount") is None:
        why = "no mount command"
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why + "; skipped only outside CI")


@contextlib.contextmanager
def small_disk(where: Path, size: str = "256k") -> Iterator[SmallDisk]:
    need_mount()
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                    str(where)], check=True)
    try:
        yield SmallDisk(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 256 kB tmpfs at tmp_path/disk, unmounted at teardown whatever happened."""
    with small_disk(tmp_path / "disk") as d:
        yield d


@pytest.fixture
def home_on_disk(disk: SmallDisk, monkeypatch: pytest.MonkeyPatch) -> Path:
    """AGENT_CLI_HOME on the small disk."""
    home = disk.root / "home"
    monkeypatch.setenv("AGENT_CLI_HOME", str(home))
    return home
