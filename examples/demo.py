"""The offline demo: agent-cli chats with a scripted model in a real terminal while this script
does the typing. No API key, no network, standard library only.

    python examples/demo.py                 watch it (short pauses so you can read the panel)
    python examples/demo.py --fast          no pauses
    python examples/demo.py --interactive   the demo types the request; you answer the panel

What happens: examples/demo-workspace is copied to a fresh folder, and
`python -m agent_cli chat --script examples/demo_script.json --workspace THAT_FOLDER` runs in a
pseudo-terminal. The scripted model lists and reads the folder (read-only calls run at once),
proposes to write notes.txt (an approval panel asks first; the demo answers y), multiplies two
numbers and ends its turn. Then the demo presses Ctrl-D and shows the file and the session log.

The chat runs with its own AGENT_CLI_HOME inside that folder, so your settings, history and
sessions are neither used nor touched. It needs agent-cli installed for this Python
(`pip install .` in the repository, editable or not).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import select
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "demo_script.json"
WORKSPACE = HERE / "demo-workspace"
REQUEST = "Summarise README.txt into notes.txt, then check 24 x 17."

# What the demo waits for on screen. Matching ignores escape sequences and all whitespace, so
# line wrapping at any terminal width does not matter.
PROMPT = "›"
ASK = "? [y/N]"  # the question restates the call: `Run write_file on notes.txt (CREATE...)? [y/N]`
FINAL = "That is the whole demo"

_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_SPACE = re.compile(r"\s+")


class DemoError(Exception):
    """Something the person running the demo should read: one sentence, no traceback."""


def squash(text: str) -> str:
    return _SPACE.sub("", text)


class Screen:
    """Echoes everything the chat prints and lets the demo wait for a phrase to appear."""

    def __init__(self, fd: int, timeout: float) -> None:
        self.fd = fd
        self.timeout = timeout
        self.seen = ""  # squashed text printed so far
        self.pos = 0  # matching resumes after the last phrase found
        self.closed = False
        self._out = sys.stdout.buffer

    def pump(self, wait: float) -> None:
        """Copy whatever the chat printed within `wait` seconds to our terminal."""
        if self.closed:
            return
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the chat closed the terminal (it exited)
            data = b""
        if not data:
            self.closed = True
            return
        self._out.write(data)
        self._out.flush()
        self.seen += squash(_ANSI.sub(b"", data).decode("utf-8", "replace"))

    def wait_for(self, phrase: str) -> None:
        needle = squash(phrase)
        deadline = time.monotonic() + self.timeout
        while True:
            at = self.seen.find(needle, self.pos)
            if at >= 0:
                self.pos = at + len(needle)
                return
            if self.closed:
                raise DemoError(f"agent-cli exited before showing {phrase!r}; its output is "
                                "above.")
            left = deadline - time.monotonic()
            if left <= 0:
                raise DemoError(f"gave up waiting {self.timeout:.0f} s for {phrase!r}; the "
                                "output above shows where it stopped.")
            self.pump(min(left, 0.1))

    def idle(self, seconds: float) -> None:
        """Pause (so a person can read) while still echoing output."""
        end = time.monotonic() + seconds
        while not self.closed and time.monotonic() < end:
            self.pump(min(0.05, max(0.0, end - time.monotonic())))

    def drain(self) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.closed and time.monotonic() < deadline:
            self.pump(0.1)


def type_text(fd: int, screen: Screen, text: str, fast: bool) -> None:
    if fast:
        os.write(fd, text.encode())
        return
    for ch in text:
        os.write(fd, ch.encode())
        screen.idle(0.03)


def set_size(fd: int) -> None:
    """Give the chat the size of the terminal the demo runs in (120x40 when there is none)."""
    import fcntl
    import struct
    import termios

    cols, rows = shutil.get_terminal_size((120, 40))
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", max(rows, 10), max(cols, 60), 0, 0))


def hand_over(fd: int, screen: Screen) -> None:
    """--interactive: the person's keys go to the chat until it exits."""
    import termios
    import tty

    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin)

    def resize(signum: int, frame: object) -> None:
        set_size(fd)

    old_winch = signal.signal(signal.SIGWINCH, resize)
    try:
        tty.setraw(stdin)
        while not screen.closed:
            ready, _, _ = select.select([fd, stdin], [], [], 0.1)
            if stdin in ready:
                data = os.read(stdin, 1024)
                if data:
                    os.write(fd, data)
            if fd in ready:
                screen.pump(0)
    finally:
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, old_winch)


def wait_exit(pid: int, within: float) -> int | None:
    """The child's wait status once it has exited (its terminal closes a moment before it can be
    reaped), or None if it is still running after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def child_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["AGENT_CLI_HOME"] = str(root / "home")
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"  # nobody answers cursor-position requests in --fast
    if env.get("TERM", "dumb") == "dumb":
        env["TERM"] = "xterm-256color"
    return env


def agent_cli_command() -> str:
    """How to call agent-cli from the user's shell, so the printed commands work as printed:
    `agent-cli` when that is the one installed for this Python, else its full path (a
    virtualenv that is not activated), else `python -m agent_cli`."""
    here = Path(sys.executable).parent / "agent-cli"
    found = shutil.which("agent-cli")
    if found and here.exists() and Path(found).resolve() == here.resolve():
        return "agent-cli"
    if here.exists():
        return shlex.quote(str(here))
    return f"{shlex.quote(sys.executable)} -m agent_cli"


def run(args: argparse.Namespace) -> int:
    try:
        import pty
    except ImportError:
        raise DemoError("the demo needs a Unix-like system (it drives agent-cli in a "
                        "pseudo-terminal); on Windows run: agent-cli chat --script "
                        f"{SCRIPT}") from None
    if not SCRIPT.is_file() or not WORKSPACE.is_dir():
        raise DemoError(f"{SCRIPT.name} and {WORKSPACE.name}/ must sit next to demo.py in {HERE}.")
    if importlib.util.find_spec("agent_cli") is None:
        raise DemoError(f"agent-cli is not installed for {sys.executable}; run `pip install .` "
                        "in the repository first.")
    if args.interactive and not sys.stdin.isatty():
        raise DemoError("--interactive needs a terminal to read your keys from.")

    if args.dir:
        root = Path(args.dir).resolve()
    else:
        root = Path(tempfile.mkdtemp(prefix="agent-cli-demo-"))
    workspace = root / "workspace"
    log = root / "session.jsonl"
    if workspace.exists() or log.exists():
        raise DemoError(f"{root} already holds a demo run; pass an empty or new --dir.")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(WORKSPACE, workspace)
    argv = [sys.executable, "-m", "agent_cli", "chat", "--script", str(SCRIPT),
            "--workspace", str(workspace), "--log", str(log)]
    env = child_env(root)

    pid, fd = pty.fork()
    if pid == 0:  # the chat, with the pty as its terminal
        try:
            os.chdir(workspace)  # never the repository, so an installed agent_cli is what runs
            os.execve(sys.executable, argv, env)
        except OSError as e:
            os.write(2, f"demo: could not start {sys.executable}: {e}\n".encode())
        os._exit(127)

    set_size(fd)
    screen = Screen(fd, args.timeout)
    pause = (lambda s: None) if args.fast else screen.idle
    try:
        screen.wait_for(PROMPT)
        pause(1.0)
        type_text(fd, screen, REQUEST, args.fast)
        os.write(fd, b"\r")  # Enter (a terminal sends CR; LF would be Ctrl-J, a newline)
        screen.wait_for(ASK)
        if args.interactive:
            hand_over(fd, screen)
        else:
            pause(2.0)  # time to read the panel
            type_text(fd, screen, "y", args.fast)
            os.write(fd, b"\r")
            screen.wait_for(FINAL)
            screen.wait_for(PROMPT)
            pause(1.5)
            os.write(fd, b"\x04")  # Ctrl-D leaves the chat
        screen.drain()
        status = wait_exit(pid, 5.0 if screen.closed else 0.0)
        if status is None:
            raise DemoError(f"agent-cli did not exit within {args.timeout:.0f} s of Ctrl-D.")
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(fd)
    code = os.waitstatus_to_exitcode(status)

    notes = workspace / "notes.txt"
    print("\n" + "-" * 60)
    if notes.exists():
        print(f"notes.txt, written after your yes ({notes}):\n")
        print(notes.read_text(encoding="utf-8"))
    else:
        print(f"notes.txt was not written ({notes}): the call was denied.\n")
    cli = agent_cli_command()
    print(f"Session log: {log}")
    print(f"  show it again:  {cli} replay {shlex.quote(str(log))}")
    print(f"  check it:       {cli} log verify {shlex.quote(str(log))}")
    print(f"  try it yourself: {cli} chat --script {shlex.quote(str(SCRIPT))} --workspace "
          f"{shlex.quote(str(workspace))}")
    if cli != "agent-cli":
        print("  (agent-cli is not on your PATH: `pipx install .` or `uv tool install .` puts "
              "it there; or activate the virtualenv: source "
              f"{shlex.quote(str(Path(sys.executable).parent / 'activate'))})")
    if code != 0:
        print(f"agent-cli exited with status {code}.", file=sys.stderr)
        return code
    return 0 if (notes.exists() or args.interactive) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="no pauses (for CI)")
    parser.add_argument("--interactive", action="store_true",
                        help="type the request, then hand the keyboard to you")
    parser.add_argument("--dir", help="folder for the workspace copy and the log "
                        "(default: a new temporary folder, kept afterwards)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for each step (default 60)")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except DemoError as e:
        print(f"\ndemo: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ndemo: stopped.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
