"""A session: one conversation, its tools, its log, and the loop that drives it, as a service.

The turn protocol: a front end sends commands, from any thread, and renders the events that
come out of its sink.
- `prompt(text)` starts a turn on a thread of its own and returns its `TurnHandle`; `send(text)`
  runs one on the caller's thread and returns its `TurnResult`;
- `answer(call_id, decision)` decides a call that waits (announced by `ApprovalNeeded`);
- `cancel(reason)` ends the running turn: its wait ends at once, a running command's process
  group is ended, a question that waits is answered no, and every call still waiting gets its
  "interrupted" result from the engine itself;
- `set_mode(read_only=...)` switches read-only mode.
The REPL, `run`, eval, replay's rerun and the ACP server are such front ends; nothing here knows
a terminal. What belongs to the session (its sandbox, the state it protects, its sinks) is held
here, so two sessions in one process keep apart.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli import __version__
from agent_cli import events as ev
from agent_cli.approval import Gate
from agent_cli.calls import Decision
from agent_cli.cancel import CancelToken
from agent_cli.config import Settings
from agent_cli.context import CompactResult, ContextBudget
from agent_cli.conversation import Attachment, History, with_attachments
from agent_cli.errors import UsageError
from agent_cli.log.writer import SessionLog
from agent_cli.loop import Loop, RequestHook, TurnResult
from agent_cli.providers.base import Provider
from agent_cli.sandbox.policy import Sandbox, scope
from agent_cli.session_parts import default_log_path, limits_of, make_provider, make_redactor
from agent_cli.tools.loader import LoadReport, load_tools
from agent_cli.tools.registry import Registry
from agent_cli.tools.scope import READ_ONLY_REASON, Scope, ScopedRegistry
from agent_cli.turn import Answerer, Answers, TurnHandle
from agent_cli.usage import UsageMeter
from agent_cli.write_faults import LogUnwritable

if TYPE_CHECKING:
    from agent_cli.instructions import Instruction
    from agent_cli.skills import SkillSet
    from agent_cli.tools.mcp.hub import MCPHub
    from agent_cli.undo.recorder import WorkspaceRecorder

Sink = Callable[[ev.AnyEvent], None]

CLOSE_WAIT_S = 15.0
"""How long `close` waits for a cancelled turn to answer its calls (a tool's grace included)."""


def session_scope(settings: Settings, registry: Registry, extra: Scope | None = None
                  ) -> ScopedRegistry:
    """The settings' scope (`tools`, `exclude_tools`, `read_only`), narrowed by `extra` (an eval
    task's), over `registry`: the one place scope is applied (tools/scope.py)."""
    from agent_cli.tools.scope import Scope, scoped

    scope = Scope.of(settings.tools, settings.exclude_tools, settings.read_only,
                     origin="--tools / config").narrowed(extra)
    return scoped(registry, scope)


def load_registry(settings: Settings, tools_dirs: Iterable[Path] = ()) -> tuple[Registry,
                                                                                 LoadReport]:
    """The tools of a session (or `agent-cli tools`): user plugins are checked against their
    pins, so one that changed since it was trusted is reported and not loaded."""
    from agent_cli.tools.trust import PluginPins

    folders = [Path(d).expanduser() for d in settings.tools_dirs] + list(tools_dirs)
    return load_tools(folders, pins=PluginPins())


def _guard_own_state(settings: Settings, log_path: Path, *, default_folder: bool
                     ) -> dict[Path, str]:
    """Keep agent-cli's own state out of every tool's reach (tools/paths.py refuses it by real
    path), and make its folders private (0700) before anything is written in them. Returns what
    this session protects; the path guard refuses the union of every session's in the process
    (a session never makes another's state reachable)."""
    from agent_cli.config import own_state
    from agent_cli.private_files import private_dir
    from agent_cli.tools.paths import protect

    own = {**own_state(settings), log_path: "this session's log"}
    protect(own)
    from agent_cli.config import home
    from agent_cli.log.store import sessions_dir
    from agent_cli.write_faults import writing

    # A read-only or unwritable AGENT_CLI_HOME is one sentence here, before anything started.
    for folder in (home(), sessions_dir(settings), *([log_path.parent] if default_folder else [])):
        with writing(folder, "agent-cli's folder"):
            private_dir(folder)
    return own


class Session:
    """One conversation with its tools, its log and the loop that drives it: the composition
    root. `Session.create(settings, ...)` builds every part from the settings (provider, tools
    in scope, MCP servers); tests build one from parts they choose. Either way this constructor
    is the one place the parts are wired together (log, usage meter, gate, sandbox, context
    budget, undo recorder, and the loop with its request hooks), so no caller rewires the loop
    afterwards. The UI comes in as event sinks and an approver; nothing here knows a terminal.
    """

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        workspace: Path,
        approver: Answerer | None = None,
        sinks: Iterable[Sink] = (),
        taggers: Iterable[Sink] = (),
        tools_dirs: Iterable[Path] = (),
        scope: Scope | None = None,
        log_path: Path | None = None,
        history: History | None = None,
        continues: str | None = None,
        provider: Provider | None = None,
    ) -> Session:
        """A session as `chat`, `run` and `eval` run it: the provider named in the settings
        (unless one is given), the plugin tools in the settings' scope narrowed by `scope` (an
        eval task's), and the configured MCP servers started in the background (their tools
        join the same scoped registry, so they are held to it too)."""
        registry, report = load_registry(settings, tools_dirs)
        return cls(settings, workspace=workspace,
                   provider=provider if provider is not None else make_provider(settings),
                   registry=session_scope(settings, registry, scope), approver=approver,
                   sinks=sinks, taggers=taggers, log_path=log_path, history=history,
                   continues=continues, load_report=report, start_mcp=True)

    def __init__(
        self,
        settings: Settings,
        *,
        workspace: Path,
        provider: Provider,
        registry: Registry,
        approver: Answerer | None = None,
        sinks: Iterable[Sink] = (),
        taggers: Iterable[Sink] = (),
        log_path: Path | None = None,
        history: History | None = None,
        continues: str | None = None,
        load_report: LoadReport | None = None,
        start_mcp: bool = False,
    ) -> None:
        self.settings = settings
        self.workspace = workspace.resolve()
        self.provider = provider
        if settings.debug_log:
            from agent_cli.providers.debug import attach_debug, open_debug

            try:
                attach_debug(provider, open_debug(settings.debug_log))
            except (OSError, ValueError) as e:
                raise UsageError(f"--debug-file {settings.debug_log}: cannot write it ({e}). "
                                 "Name a file you can write, or use --debug for stderr.") from None
        # Always scoped: `set_mode` flips the scope, and the loop keeps the one registry.
        self.registry: ScopedRegistry = registry if isinstance(registry, ScopedRegistry) \
            else ScopedRegistry(Scope(), registry)
        self.history: History = history if history is not None else []
        self.log_path = log_path or default_log_path(settings)
        self.protected = _guard_own_state(settings, self.log_path,
                                          default_folder=log_path is None)
        """agent-cli's own state this session keeps out of its tools' reach."""
        self.log = SessionLog(self.log_path, redactor=make_redactor(settings))
        if self.log.key is not None:
            self.registry.args_key = self.log.key  # args_hash is an HMAC under the log key
        self.usage = UsageMeter(settings.prices, lambda: self.provider.model)
        self._emitting = threading.RLock()
        """Events reach the sinks one at a time, in order, whichever thread emits them."""
        self.answers = Answers(self.emit, direct=approver)
        """The questions waiting for a person's answer (`answer` decides them). `approver`, when
        given, is a front end that answers on the spot (scripted answers, eval, no terminal)."""
        self.gate = Gate(self.answers, settings.deny, read_only=self._read_only_reason)
        self.skills = self._load_skills()
        self.sandbox = Sandbox.for_settings(settings, self.workspace, [self.log_path])
        """Confinement of every process the session's tools and MCP servers start (current in
        each of its turns and in its MCP hub's threads: sandbox/policy.py `scope`)."""
        self._check_scope_settings()
        self.budget = ContextBudget(settings.context_budget_chars, self.emit,
                                    budget_tokens=self._budget_tokens)
        self.effects: WorkspaceRecorder | None = None
        """Records approved calls' effects for undo (config `undo`); also a sink for /undo."""
        if settings.undo:
            from agent_cli.undo.recorder import WorkspaceRecorder

            self.effects = WorkspaceRecorder.for_session(self.workspace, settings)
            if continues:
                self.effects.earlier = Path(continues)
        self.sinks: tuple[Sink, ...] = (
            *taggers, self.log, self.usage, self.budget.observe,
            *([self.effects] if self.effects is not None else []), *sinks)
        """Fixed here: the taggers (which may add fields before the log writes), the log, the
        session's own observers, then the front end's."""
        self.continues = continues
        self.load_report = load_report or LoadReport()
        self._closed = False
        self._started = False
        """`session_start` is in the log: only then may `close` write `session_end` (a log
        always begins with its start, whatever cut the start short)."""
        self._turn: CancelToken | None = None
        """The running turn's token (None between turns)."""
        self._turn_lock = threading.Lock()
        self._handle: TurnHandle | None = None
        """The last turn started with `prompt` (close waits for it)."""
        self.instructions: list[Instruction] = []
        """Project instruction files passed to the model with every request (instructions.py
        sets them after start(), so their notices follow session_start in the log)."""
        self.mcp: MCPHub | None = None
        """The MCP servers (with `start_mcp` and servers configured); closed with the session."""
        if start_mcp:
            from agent_cli.tools.mcp.hub import start_hub

            with scope(self.sandbox):
                self.mcp = start_hub(settings, self.registry, self.emit,
                                     session_id=self.log_path.stem, workspace=self.workspace,
                                     sandbox=self.sandbox)
        note = self.sandbox.model_note()
        base = self.system_prompt()
        hooks: list[RequestHook] = [self.mcp.request_hook] if self.mcp is not None else []
        hooks += [self._within_budget, self._with_instructions]
        self.loop = Loop(provider, self.registry, self.gate, self.emit, workspace=self.workspace,
                         limits=limits_of(settings), system=f"{base}\n\n{note}" if note else base,
                         hooks=hooks, sandbox=self.sandbox, effects=self.effects,
                         redactor=self.log.redactor, cost=self.usage.spent,
                         tool_choice=settings.tool_choice,
                         tool_choice_after_call=settings.tool_choice_after_call)

    def _within_budget(self, messages: History, system: str | None
                       ) -> tuple[History, str | None]:
        """Request hook: old tool results stubbed past the context budget (context.py)."""
        return self.budget(messages), system

    def _with_instructions(self, messages: History, system: str | None
                           ) -> tuple[History, str | None]:
        """Request hook: the accepted project instruction files first in the first message."""
        if not self.instructions:
            return messages, system
        from agent_cli.instructions import with_instructions

        return with_instructions(messages, self.instructions), system

    def _budget_tokens(self) -> int:
        """Config context_budget_tokens, else 80% of the current model's context window."""
        if self.settings.context_budget_tokens:
            return self.settings.context_budget_tokens
        from agent_cli.usage import context_window

        return int(context_window(self.provider.model) * 0.8)

    def _load_skills(self) -> SkillSet | None:
        """Skills from config `skills_dirs` (none by default), pinned; `load_skill` joins the
        tools when there is at least one."""
        if not self.settings.skills_dirs:
            return None
        from agent_cli.skills import load_skill_tool, load_skills
        from agent_cli.tools.trust import PluginPins

        skills = load_skills([Path(d).expanduser() for d in self.settings.skills_dirs],
                             PluginPins())
        if skills.skills and self.registry.get("load_skill") is None:
            self.registry.add(load_skill_tool(skills))
        return skills

    def _check_scope_settings(self) -> None:
        """A tool choice naming a tool that is not offered, or a cost budget that cannot be
        counted, would fail later or never hold: say so now, in a sentence."""
        choice = self.settings.tool_choice
        if choice not in ("auto", "any", "none") and choice not in self.registry.names() \
                and not self.settings.mcp.get("servers"):
            raise UsageError(f"--tool-choice {choice}: no tool of that name is offered in this "
                             "session. `agent-cli tools` lists them; check --tools and "
                             "--read-only.")
        # (the shipped price table counts: usage.py; a /model switch is checked the same way)
        refused = self.usage.budget_refusal(self.provider.model, self.settings.max_cost_usd)
        if refused is not None:
            raise UsageError(refused)

    def system_prompt(self) -> str:
        """The configured system prompt, plus the skills' names and descriptions (marked)."""
        if self.skills is None or self.registry.get("load_skill") is None:
            return self.settings.system_prompt
        from agent_cli.skills import system_section

        return self.settings.system_prompt + system_section(self.skills)

    @property
    def read_only(self) -> bool:
        return self.registry.scope.read_only

    def _read_only_reason(self) -> str | None:
        return READ_ONLY_REASON if self.read_only else None

    def set_mode(self, *, read_only: bool) -> str:
        """`/mode read-only` and `/mode normal`: the tools offered from the next request on, and
        the gate's refusal of write calls, change together. Returns what changed (logged)."""
        self.registry.scope.read_only = read_only
        message = ("Read-only mode: only read tools are offered; write calls are refused."
                   if read_only else "Normal mode: write tools are offered again; each write "
                   "call asks for your yes.")
        self.emit(ev.Notice(message=message, kind="mode"))
        return message

    def set_read_only(self, on: bool) -> str:
        """The same as `set_mode(read_only=on)`."""
        return self.set_mode(read_only=on)

    def emit(self, event: ev.AnyEvent) -> None:
        """Every sink gets the event, the log first. When the log refuses it (LogUnwritable),
        the others still see an event the log kept in memory (it happened), never one it
        dropped (what it would start does not happen); then the refusal is raised, a turn stop
        for the loop and a sentence for everyone else."""
        with self._emitting:
            self._fan_out(event)

    def _fan_out(self, event: ev.AnyEvent) -> None:
        refused: LogUnwritable | None = None
        for sink in self.sinks:
            if sink is self.log:
                try:
                    sink(event)
                except LogUnwritable as e:
                    if e.dropped:
                        raise
                    refused = e  # chained and held in memory: written first when space returns
                if isinstance(event, ev.SessionStart):
                    self._started = True
                continue
            sink(event)
        if refused is not None:
            raise refused

    def start(self) -> None:
        tools = [ev.ToolInfo(name=t.name, effect=t.effect, source=t.source,
                             schema_hash=t.schema_hash()) for t in self.registry]
        try:
            self.emit(ev.SessionStart(version=__version__, model=self.provider.model,
                                      provider=self.provider.name, workspace=str(self.workspace),
                                      tools=tools, continues=self.continues,
                                      system=self.loop.system))
        except LogUnwritable:
            # Refused before the first turn: nothing ran, and the empty log it made goes too.
            self.close()
            raise
        notice = self.sandbox.start_notice()
        if notice:
            self.emit(ev.Notice(message=notice, kind="sandbox"))
        if self.effects is not None:
            overlay_note = self.effects.overlay_notice()
            if overlay_note:
                self.emit(ev.Notice(message=overlay_note, kind="undo"))
        for problem in self.load_report.errors:
            self.emit(ev.Notice(message=problem, kind="plugin_error"))
        for problem in self.skills.problems if self.skills is not None else []:
            self.emit(ev.Notice(message=problem, kind="plugin_error"))
        if isinstance(self.registry, ScopedRegistry) and not self.settings.mcp.get("servers"):
            loaded = [t.name for t in self.registry.all_tools()]
            for glob in self.registry.scope.unmatched(loaded):
                self.emit(ev.Notice(message=f"The tool pattern {glob!r} matches no loaded tool "
                                    "(a typo?); `agent-cli tools` lists them.",
                                    kind="plugin_error"))
        if self.mcp is not None:
            self.mcp.sync()

    # -- the turn protocol ------------------------------------------------------------------

    def send(self, text: str, attachments: Sequence[Attachment] = ()) -> TurnResult:
        """One turn on the caller's thread, to its end (a cancel from another thread, or an
        answer, still reaches it)."""
        text = with_attachments(text, attachments)
        token = self._begin()
        try:
            with scope(self.sandbox):
                return self.loop.run_turn(self.history, text, token)
        finally:
            self._finish()

    def prompt(self, text: str, attachments: Sequence[Attachment] = ()) -> TurnHandle:
        """Start a turn on a thread of its own and return at once; the handle's `wait` gives
        its result. The front end meanwhile renders the events, answers `ApprovalNeeded` with
        `answer`, and may `cancel`. `attachments` (an editor's files) join the user's words,
        marked (conversation.with_attachments)."""
        token = self._begin()
        text = with_attachments(text, attachments)

        def run() -> TurnResult:
            with scope(self.sandbox):
                return self.loop.run_turn(self.history, text, token)

        handle = TurnHandle(run, self._finish)
        self._handle = handle
        handle.thread.start()
        return handle

    def answer(self, call_id: str, decision: Decision) -> bool:
        """Decide the call `call_id` that waits for an answer (from any thread). A yes counts
        only for the id and the arguments' hash shown; False when no such call waits."""
        return self.answers.answer(call_id, decision)

    def cancel(self, reason: str = "user") -> bool:
        """End the running turn (from any thread, a signal handler included): True when a
        turn was running. Its waits end at once, a running command's process group is ended,
        a question that waits is answered no, and the engine answers every pending call."""
        with self._turn_lock:
            token = self._turn
        if token is None:
            return False
        token.cancel(reason)
        self.answers.cancel_all()
        return True

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self._turn is not None

    def _begin(self) -> CancelToken:
        with self._turn_lock:
            if self._turn is not None:
                raise UsageError("A turn is already running in this session; wait for it to "
                                 "end, or cancel it first.")
            self._turn = CancelToken()
            self.answers.begin_turn()
            return self._turn

    def _finish(self) -> None:
        with self._turn_lock:
            self._turn = None

    def retract_unanswered(self, text: str) -> bool:
        """Take back the user's `text` when the model never answered it (the request failed or
        was interrupted), so it is not merged into the next message; True when it was."""
        from agent_cli.conversation import retract_unanswered

        return retract_unanswered(self.history, text)

    def compact(self) -> CompactResult:
        """`/compact`: the conversation becomes a model-written summary (context.compact)."""
        from agent_cli.context import compact

        return compact(self.history, self.provider, self.emit, budget=self.budget,
                       max_tokens=self.loop.limits.max_tokens)

    def clear(self) -> None:
        self.history.clear()
        self.emit(ev.Notice(message="Conversation cleared; the log keeps everything.",
                            kind="clear"))

    def close(self, reason: str = "exit") -> None:
        """End the session: a turn still running is cancelled and waited for (its calls get
        their results), then the MCP servers stop and the log gets `session_end`."""
        if self._closed:
            return
        self._closed = True
        handle = self._handle
        if handle is not None and not handle.done:
            self.cancel(reason)
            handle.finished.wait(CLOSE_WAIT_S)
        if self.mcp is not None:
            self.mcp.close()
            self.mcp.sync()
        try:
            if self._started:
                with contextlib.suppress(LogUnwritable):  # kept in memory: close() tries again
                    self.emit(ev.SessionEnd(reason=reason))
            self.log.close()  # raises the sentence when held records are lost
        finally:
            self.sandbox.close()
            closer = getattr(self.provider, "close", None)
            if callable(closer):
                closer()
