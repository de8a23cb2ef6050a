"""The built wheel carries every bundled tool: a plain `pip install .` must find them all."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_wheel_ships_every_bundled_tool(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    wheel = next(out.glob("agent_cli-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    bundled = sorted(p.name for p in (REPO / "tools.d").glob("*.py"))
    assert bundled, "tools.d/ holds no plugins"
    for name in bundled:
        assert f"agent_cli/bundled_tools/{name}" in names

    # Load the tools from the unpacked wheel, not from this source tree.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import agent_cli.tools.loader as l; r, rep = l.load_tools([]);"
        "print(l.bundled_tools_dir()); print(','.join(r.names())); print(len(rep.errors))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    where, names_line, errors = res.stdout.split("\n")[:3]
    assert where.startswith(str(site))
    loaded = set(names_line.split(","))
    for name in bundled:
        assert Path(name).stem in loaded
    assert errors == "0"
