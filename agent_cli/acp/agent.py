"""`agent-cli acp`: the Agent Client Protocol's methods over agent-cli sessions.

The reader thread (wire.Channel.serve) answers `initialize`, `authenticate` and
`session/set_mode` itself, takes `session/cancel` at once, and queues `session/new`,
`session/load` and `session/prompt` for the main thread, which opens sessions one at a time and
hands each prompt to a thread of its own (the turn runs on the engine's thread; see turns.py).
Several sessions stay open side by side, as an editor's threads do, each with its own log,
sandbox and turn: a prompt in one never waits for another's. At most `MAX_LIVE` are open; a new
one beyond that closes the one idle longest, whose id then answers with an error saying so.
docs/acp.md is the contract.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_cli import __version__
from agent_cli.acp import wire
from agent_cli.acp.content import PromptError, prompt_parts
from agent_cli.acp.opening import Options
from agent_cli.acp.turns import Turns
from agent_cli.acp.updates import SAID_REASONS, EventMapper, say, stop_reason
from agent_cli.acp.wire import Channel, Message, RpcError
from agent_cli.cancel import get_on_main

if TYPE_CHECKING:
    from agent_cli.session import Session

PROTOCOL_VERSION = 1
MAX_LIVE = 8
"""Sessions open at once (each holds its MCP servers and a sandbox): the one idle longest
closes for a new one beyond this."""
CLOSE_WAIT_S = 10.0
"""How long the end of the agent waits for the prompts' answers after cancelling their turns."""
MODES = [{"id": "normal", "name": "Ask before each write",
          "description": "Write tools are offered; each write call asks for your yes."},
         {"id": "read-only", "name": "Read-only",
          "description": "Only read tools are offered; every write call is refused."}]
"""The session's modes (the REPL's /mode): session/set_mode switches them."""


@dataclass
class Live:
    """An open session."""

    id: str
    session: Session
    turns: Turns


class Agent:
    def __init__(self, channel: Channel, options: Options) -> None:
        self.channel = channel
        self.options = options
        self.client = "client"
        """The client's name from initialize's clientInfo (recorded as `via` with approvals)."""
        self.live: dict[str, Live] = {}
        """The open sessions by id, the one used longest ago first."""
        self.closed_ids: set[str] = set()
        self._lock = threading.Lock()
        self._prompts: set[threading.Thread] = set()
        self._jobs: queue.Queue[Message | None] = queue.Queue()
        self.end_reason = "exit"
        self._stopping = False

    # -- the reader thread -------------------------------------------------------------------

    def receive(self, msg: Message) -> None:
        if msg.method == "initialize":
            self._reply(msg, self.initialize)
        elif msg.method == "authenticate":
            self._reply(msg, lambda params: {})
        elif msg.method == "session/cancel":
            live = self.live.get(str(msg.params.get("sessionId")))
            if live is not None:
                live.turns.cancel()
        elif msg.method == "session/set_mode":  # (the engine takes it from any thread)
            self._reply(msg, self.set_mode)
        elif msg.method in ("session/new", "session/load", "session/prompt"):
            self._jobs.put(msg)
        elif msg.id is not None:
            self.channel.fail(msg.id, RpcError(wire.METHOD_NOT_FOUND,
                                               f"agent-cli does not offer {msg.method}"))

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        info = params.get("clientInfo")
        if isinstance(info, dict) and isinstance(info.get("name"), str) and info["name"]:
            from agent_cli.safe_text import one_line

            self.client = one_line(info["name"], 60)
        return {"protocolVersion": PROTOCOL_VERSION,
                "agentCapabilities": {"loadSession": True,
                                      "promptCapabilities": {"image": False, "audio": False,
                                                             "embeddedContext": True},
                                      "mcpCapabilities": {"http": True, "sse": True}},
                "agentInfo": {"name": "agent-cli", "title": "agent-cli",
                              "version": __version__},
                "authMethods": []}

    # -- the main thread ---------------------------------------------------------------------

    def run(self) -> None:
        """Serve until the client closes the stream; then the live session closes."""
        reader = threading.Thread(target=self._read, name="acp-reader", daemon=True)
        reader.start()
        try:
            while True:
                msg = get_on_main(self._jobs)  # (a signal may land on another thread)
                if msg is None or (self._stopping and msg.method == "session/prompt"):
                    break
                if msg.method == "session/prompt":
                    self._prompt_aside(msg)
                    continue
                handler = {"session/new": self.new_session,
                           "session/load": self.load_session}[msg.method]
                self._reply(msg, handler)
        finally:
            self._close_all(self.end_reason)

    def _read(self) -> None:
        try:
            self.channel.serve(self.receive)
        finally:
            self.stop()

    def stop(self, reason: str = "exit") -> None:
        """The client is gone (EOF) or the process is asked to end (SIGTERM, SIGHUP): the
        running turn is cancelled, queued requests are dropped, and the session closes."""
        self.end_reason, self._stopping = reason, True
        for live in self._open_ones():
            live.turns.cancel()
        self._jobs.put(None)

    def _prompt_aside(self, msg: Message) -> None:
        """A prompt runs on a thread of its own, so that opening another session, or prompting
        it, never waits for this turn."""
        def run() -> None:
            try:
                self._reply(msg, self.prompt)
            finally:
                with self._lock:
                    self._prompts.discard(thread)

        thread = threading.Thread(target=run, name="acp-prompt", daemon=True)
        with self._lock:
            self._prompts.add(thread)
        thread.start()

    def _close_all(self, reason: str) -> None:
        """The end: every turn cancelled, their prompts answered, every session closed."""
        for live in self._open_ones():
            live.turns.cancel()
        with self._lock:
            prompts = list(self._prompts)
        for thread in prompts:
            thread.join(CLOSE_WAIT_S)
        for live in self._open_ones():
            self._close_live(live, reason)

    def _reply(self, msg: Message, handler: Callable[[dict[str, Any]], Any]) -> None:
        try:
            result = handler(msg.params)
        except RpcError as e:
            if msg.id is not None:
                self.channel.fail(msg.id, e)
            return
        except Exception as e:
            from agent_cli.errors import AgentError

            sentence = str(e) if isinstance(e, AgentError) else \
                f"agent-cli failed: {type(e).__name__}: {e}"
            if msg.id is not None:
                self.channel.fail(msg.id, RpcError(wire.INTERNAL_ERROR, sentence))
            return
        if msg.id is not None:
            self.channel.respond(msg.id, result)

    # -- sessions ----------------------------------------------------------------------------

    def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        live = self._open(params, history=None, continues=None, session_id=None)
        return {"sessionId": live.id, "modes": _modes(live.session)}

    def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        from agent_cli.acp.resume import load

        wanted = params.get("sessionId")
        if not isinstance(wanted, str) or not wanted:
            raise RpcError(wire.INVALID_PARAMS, "session/load needs the sessionId to load")
        loaded = load(wanted, self.options.settings())
        live = self._open(params, history=loaded.history, continues=str(loaded.path),
                          session_id=wanted, notes=loaded.notes)
        from agent_cli.acp.content import replay_updates

        for update in replay_updates(loaded.history, lambda name: _effect_of(live.session, name)):
            live.turns.update(update)
        return {"modes": _modes(live.session)}

    def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        live = self._live(params.get("sessionId"))
        mode = params.get("modeId")
        if mode not in ("normal", "read-only"):
            raise RpcError(wire.INVALID_PARAMS, f"no mode {mode!s}: normal or read-only")
        live.session.set_mode(read_only=mode == "read-only")
        live.turns.update({"sessionUpdate": "current_mode_update", "currentModeId": mode})
        return {}

    def _open(self, params: dict[str, Any], *, history: list[dict[str, Any]] | None,
              continues: str | None, session_id: str | None,
              notes: list[str] | None = None) -> Live:
        from agent_cli.acp.opening import open_session

        if session_id is not None and session_id in self.live:
            self._close_live(self.live[session_id], "replaced")  # loaded again: this copy goes
        self._make_room()
        turns = Turns(self.channel, via=f"acp:{self.client}")
        session, said = open_session(self.options, params, sink=turns.sink,
                                     client=self.client, history=history,
                                     continues=continues)
        turns.session = session
        live = Live(session_id or session.log_path.name.removesuffix(".jsonl"), session, turns)
        turns.session_id = live.id
        turns.mapper = EventMapper(lambda name: _effect_of(session, name),
                                   str(session.workspace), session.log.redactor.text)
        with self._lock:
            self.live[live.id] = live
        try:
            session.start()
            _attach_instructions(session)
            from agent_cli import events as ev

            for note in [*said, *(notes or [])]:
                session.emit(ev.Notice(message=note, kind="acp"))
        except BaseException:
            self._close_live(live, "error")
            raise
        return live

    def _open_ones(self) -> list[Live]:
        """The open sessions now, the one used longest ago first (a copy: others may change)."""
        with self._lock:
            return list(self.live.values())

    def _make_room(self) -> None:
        """Below `MAX_LIVE` open sessions: close the one idle longest (a busy one never)."""
        if len(self.live) < MAX_LIVE:
            return
        for live in self._open_ones():
            if not live.session.busy:
                self._close_live(live, "too many sessions")
                return
        raise RpcError(wire.INTERNAL_ERROR, f"agent-cli has {MAX_LIVE} sessions open and each "
                       "is running a turn; cancel one, or wait for one to end, then open "
                       "another.")

    def _close_live(self, live: Live, reason: str) -> None:
        with self._lock:
            if self.live.get(live.id) is not live:
                return
            del self.live[live.id]
            self.closed_ids.add(live.id)
        live.session.close(reason)

    def _live(self, sid: Any) -> Live:
        with self._lock:
            live = self.live.get(str(sid))
            if live is not None:  # used now: the last to be closed for room
                del self.live[live.id]
                self.live[live.id] = live
        if live is None:
            why = (f"it was closed (agent-cli keeps at most {MAX_LIVE} sessions open, and closes "
                   "the one idle longest for a new one); session/load it to go on"
                   if sid in self.closed_ids else "no session of that id is open")
            raise RpcError(wire.INVALID_PARAMS, f"session {sid!s}: {why}.")
        return live

    def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        live = self._live(params.get("sessionId"))
        try:
            text, attachments = prompt_parts(params.get("prompt"))
        except PromptError as e:
            raise RpcError(wire.INVALID_PARAMS, str(e)) from None
        from agent_cli.write_faults import LogUnwritable

        try:
            result, cancelled = live.turns.run(text, attachments)
        except LogUnwritable as e:
            self._close_live(live, "log_unwritable")
            raise RpcError(wire.INTERNAL_ERROR, str(e)) from None
        if cancelled or result is None:
            return {"stopReason": "cancelled"}
        if result.reason == "log_unwritable":
            self._close_live(live, "log_unwritable")
            raise RpcError(wire.INTERNAL_ERROR, result.message or "the session log refused a "
                           "record; the session ended.")
        if result.reason in SAID_REASONS and result.message:
            live.turns.update(say(result.message))
        return {"stopReason": stop_reason(result.reason)}


def _attach_instructions(session: Session) -> None:
    """Config `instructions` (the project's AGENTS.md and the like), as chat and run attach
    them; nobody can be asked in the editor about a file that changed since it was trusted, so
    such a file is left out with a notice that says how to trust it (`agent-cli trust FILE`)."""
    from agent_cli import instructions as ins

    files = ins.resolve(session.settings.instructions, [], session.workspace)
    if files:
        ins.attach(session, ins.load(files, None))


def _modes(session: Session) -> dict[str, Any]:
    return {"currentModeId": "read-only" if session.read_only else "normal",
            "availableModes": [dict(m) for m in MODES]}


def _effect_of(session: Session, name: str) -> str | None:
    tool = session.registry.get(name)
    return None if tool is None else str(tool.effect)
