"""The built wheel: it carries every bundled tool, the demo and the model table, and installed
into a fresh virtual environment it runs `agent-cli chat --demo` with no repository around."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO


@contextlib.contextmanager
def repo_build_lock() -> Iterator[None]:
    """Held while a build writes build/ and *.egg-info in the repository itself: two builds at
    once (the wheel on one test worker, the sdist on another, or another pytest run in this
    checkout) would share those folders and break each other."""
    name = hashlib.sha256(str(REPO).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"agent-cli-build-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def built_once(factory: pytest.TempPathFactory, name: str, pattern: str,
               build: Callable[[Path], Path]) -> Path:
    """`build(folder)`, once for the whole run: the test workers (pytest-xdist) share their
    run's temporary root, so the first to get here builds and the others find the result."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this run's folder, above every worker's own
    out = root / f"shared-{name}"
    with repo_build_lock():
        found = sorted(out.glob(pattern)) if out.is_dir() else []
        if found:
            return found[0]
        out.mkdir(exist_ok=True)
        return build(out)


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return next(out.glob("agent_cli_host-*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "dist", "agent_cli_host-*.whl", build_wheel)


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
    # The test and dev needs are dependency groups: never published, so no exact pin of a test
    # tool reaches a user's resolver.
    assert "Provides-Extra: mcp" in text
    assert "Provides-Extra: dev" not in text and "Provides-Extra: test" not in text
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    assert not any(tool in r for r in requires for tool in ("ruff", "pytest", "mcp-server"))
    assert any(r.startswith("Requires-Dist: markdown-it-py") and ">=4.1" in r for r in requires)
    # Written once (agent_cli/__init__.py), read by setuptools.
    from agent_cli import __version__

    assert f"Version: {__version__}" in text
    assert "Project-URL: Homepage," in text
    assert "MacOS" not in text  # never tested there
    assert zipfile.ZipFile(wheel).read("agent_cli/data/config.example.toml") == (
        REPO / "config.example.toml").read_bytes()
    for shipped in ("agent_cli/data/models.json", "agent_cli/demo_files/demo.py",
                    "agent_cli/demo_files/demo_script.json",
                    "agent_cli/demo_files/demo-workspace/README.txt"):
        assert shipped in names


def test_installed_wheel_runs_the_demo_headless(tmp_path: Path, wheel: Path) -> None:
    """A fresh virtual environment (no pip, no network): the wheel goes in with this pip, the
    dependencies come from this environment's site-packages through a .pth line (their .pth
    files, such as the editable install of this checkout, are not run from there). Then
    `agent-cli chat --demo` runs from a folder far from the repository."""
    venv, env = fresh_venv(tmp_path)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    where = tmp_path / "elsewhere"
    where.mkdir()
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


def build_sdist(out: Path) -> Path:
    """The source distribution, built by the build backend itself (offline)."""
    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.build_sdist(sys.argv[1]))")
    res = subprocess.run([sys.executable, "-c", code, str(out)], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=300)
    assert "agent_cli.data" not in res.stderr, res.stderr  # setuptools' missing-package warning
    return out / res.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "sdist", "agent_cli_host-*.tar.gz", build_sdist)


def test_sdist_holds_the_tests_docs_and_examples(sdist: Path) -> None:
    import tarfile

    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    tests = {p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("*")
             if p.is_file() and "node_modules" not in p.parts and "__pycache__" not in p.parts
             and not p.name.endswith(".pyc")}
    assert sorted(tests - names) == []
    docs = {p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*") if p.is_file()}
    examples = {p.relative_to(REPO).as_posix() for p in (REPO / "examples" / "eval").rglob("*")
                if p.is_file()}
    assert docs and examples and (docs | examples) <= names
    assert {"SECURITY.md", "config.example.toml", "README.md", "LICENSE",
            "tests/conftest.py", "agent_cli/data/config.example.toml"} <= names
    assert not any("node_modules" in n for n in names)


def fresh_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A venv without pip whose dependencies come from this environment (a .pth line)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], check=True,
                               capture_output=True, text=True, timeout=60).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path / "user"),
           "AGENT_CLI_HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "TMPDIR": str(tmp_path)}
    return venv, env


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installed_from_wheel_or_sdist_prints_version_and_the_example(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Installed offline into a fresh venv (the sdist is built there, from its own files), then
    run from a folder far from the repository."""
    artefact: Path = request.getfixturevalue(kind)
    venv, env = fresh_venv(tmp_path)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                    str(artefact)], check=True, capture_output=True, text=True, timeout=600)
    where = tmp_path / "elsewhere"
    where.mkdir()
    tool = str(venv / "bin" / "agent-cli")
    from agent_cli import __version__

    version = subprocess.run([tool, "--version"], capture_output=True, text=True, env=env,
                             cwd=where, timeout=60)
    assert version.stdout == f"agent-cli {__version__}\n", version.stderr
    example = subprocess.run([tool, "config", "example"], capture_output=True, text=True,
                             env=env, cwd=where, timeout=60)
    assert example.returncode == 0, example.stderr
    assert example.stdout == (REPO / "config.example.toml").read_text(encoding="utf-8")
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import agent_cli; print(agent_cli.__file__)"],
                           capture_output=True, text=True, env=env, cwd=where, timeout=60)
    assert probe.stdout.startswith(str(venv)), probe.stdout + probe.stderr


def test_config_path_and_the_config_help_name_the_real_file(tmp_path: Path) -> None:
    env = dict(os.environ, AGENT_CLI_HOME=str(tmp_path / "h"))
    out = subprocess.run([sys.executable, "-m", "agent_cli", "config", "path"],
                         capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert out.stdout.strip() == str(tmp_path / "h" / "config.toml")
    env.pop("AGENT_CLI_HOME")
    env["HOME"] = str(tmp_path / "u")
    env.pop("XDG_CONFIG_HOME", None)
    out = subprocess.run([sys.executable, "-m", "agent_cli", "config", "path"],
                         capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert out.stdout.strip() == str(tmp_path / "u" / ".config" / "agent-cli" / "config.toml")
    page = subprocess.run([sys.executable, "-m", "agent_cli", "chat", "--help"],
                          capture_output=True, text=True, env=dict(env, COLUMNS="200"),
                          timeout=60, cwd=REPO).stdout
    assert "~/.config/agent-cli/config.toml" in page and "agent-cli config path" in page


def test_shell_completion_is_offered_and_completes(tmp_path: Path) -> None:
    """Through the installed `agent-cli` script (completion is keyed to the program's name)."""
    tool = str(Path(sys.executable).parent / "agent-cli")
    env = dict(os.environ, HOME=str(tmp_path))
    script = subprocess.run([tool, "--show-completion", "bash"], capture_output=True, text=True,
                            env=env, timeout=60, cwd=REPO)
    assert script.returncode == 0, script.stderr
    assert "_AGENT_CLI_COMPLETE=complete_bash" in script.stdout
    words = subprocess.run([tool], capture_output=True, text=True, timeout=60, cwd=REPO,
                           env=dict(env, _AGENT_CLI_COMPLETE="complete_bash",
                                    COMP_WORDS="agent-cli run --tool", COMP_CWORD="2"))
    assert {"--tools", "--tool-choice", "--tools-dir"} <= set(words.stdout.split())
    install = subprocess.run([tool, "--install-completion", "bash"], capture_output=True,
                             text=True, env=env, timeout=60, cwd=REPO)
    assert install.returncode == 0, install.stderr
    assert (tmp_path / ".bash_completions" / "agent-cli.sh").is_file()


def test_no_color_is_honoured(tmp_path: Path) -> None:
    """In a terminal, colour by default; with NO_COLOR set, not one colour escape."""
    import pty

    def output(extra: dict[str, str]) -> bytes:
        env = dict(os.environ, COLUMNS="100", TERM="xterm-256color", **extra)
        pid, fd = pty.fork()
        if pid == 0:  # the child: the tool listing, on a terminal
            os.execve(sys.executable, [sys.executable, "-m", "agent_cli", "tools"], env)
        chunks = []
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.waitpid(pid, 0)
        return b"".join(chunks)

    coloured = output({})
    plain = output({"NO_COLOR": "1"})
    assert b"read_file" in coloured and b"read_file" in plain
    assert b"\x1b[" in coloured
    assert b"\x1b[3" not in plain and b"\x1b[9" not in plain and b"\x1b[38" not in plain
