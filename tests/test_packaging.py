"""The built wheel: it carries every bundled tool, the demo and the model table, and installed
into a fresh virtual environment it runs `agent-cli chat --demo` with no repository around."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return next(out.glob("agent_cli_host-*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def test_wheel_ships_every_module_of_the_package(wheel: Path) -> None:
    """A package folder missing from pyproject's list is silently left out of the wheel (the
    sandbox once was): every module in the source tree must be in it."""
    source = {p.relative_to(REPO).as_posix() for p in (REPO / "agent_cli").rglob("*.py")
              if "__pycache__" not in p.parts}
    with zipfile.ZipFile(wheel) as z:
        shipped = set(z.namelist())
    assert sorted(source - shipped) == []


def test_wheel_ships_every_bundled_tool(tmp_path: Path, wheel: Path) -> None:
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


def test_wheel_metadata_names_the_free_distribution_and_its_license(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "Name: agent-cli-host" in text
    assert "License-Expression: MIT" in text
    assert "Classifier: Programming Language :: Python :: 3.11" in text
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Provides-Extra: dev" in text
    # ruff and mypy are dev tools, not test requirements
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    assert any("ruff" in r and "extra == \"dev\"" in r for r in requires)
    assert not any("ruff" in r and "extra == \"test\"" in r for r in requires)
    for shipped in ("agent_cli/data/models.json", "agent_cli/demo_files/demo.py",
                    "agent_cli/demo_files/demo_script.json",
                    "agent_cli/demo_files/demo-workspace/README.txt"):
        assert shipped in names


def test_installed_wheel_runs_the_demo_headless(tmp_path: Path, wheel: Path) -> None:
    """A fresh virtual environment (no pip, no network): the wheel goes in with this pip, the
    dependencies come from this environment's site-packages through a .pth line (their .pth
    files, such as the editable install of this checkout, are not run from there). Then
    `agent-cli chat --demo` runs from a folder far from the repository."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], check=True,
                               capture_output=True, text=True, timeout=60).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    where = tmp_path / "elsewhere"
    where.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path / "user"),
           "AGENT_CLI_HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "TMPDIR": str(tmp_path)}
    probe = subprocess.run([str(py), "-c", "import agent_cli; print(agent_cli.__file__)"],
                           capture_output=True, text=True, env=env, cwd=where, timeout=60)
    assert probe.stdout.startswith(str(venv)), probe.stdout + probe.stderr
    request = "Summarise README.txt into notes.txt, then check 24 x 17.\n"
    proc = subprocess.run([str(venv / "bin" / "agent-cli"), "chat", "--demo"], input=request,
                          capture_output=True, text=True, env=env, cwd=where, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "That is the whole demo" in proc.stdout
    assert "408" in proc.stdout
    # headless: the write was denied, never approved by default
    assert "denied without a terminal" in proc.stdout
    [workspace] = tmp_path.glob("agent-cli-demo-*/workspace")
    assert (workspace / "README.txt").is_file() and not (workspace / "notes.txt").exists()
    assert os.listdir(where) == []


def test_demo_refuses_another_provider(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "agent_cli", "chat", "--demo", "--provider",
                           "openai"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "--demo brings its own scripted model" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
