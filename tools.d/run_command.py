"""run_command: run a program in the workspace, bounded in time, output and reach."""

import codecs
import os
import shlex
import signal
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_cli.tools import Tool, ToolContext, ToolOutput
from agent_cli.tools.procs import run_process, scrubbed_env

DEFAULT_TIMEOUT_S = 60.0
SHELL = "/bin/sh"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: list[str] | str = Field(
        description=(
            "Either an argv list such as [\"pytest\", \"-q\"] (run directly, no shell) or one "
            "string such as \"ls | wc -l\" (run through /bin/sh -c, so pipes, globs and && work)."
        )
    )
    timeout_s: float = Field(
        DEFAULT_TIMEOUT_S, gt=0, le=3600,
        description="Seconds before the command and everything it started are killed "
                    "(default 60; the session's tool timeout caps it).",
    )
    network: bool = Field(
        False,
        description="Let the command use the network (and sockets). Off by default; set it "
                    "only when the task needs the network (installing packages, fetching); the "
                    "user sees it in the approval panel.",
    )

    @field_validator("command")
    @classmethod
    def _not_empty(cls, v: "list[str] | str") -> "list[str] | str":
        if isinstance(v, str):
            if not v.strip():
                raise ValueError("the command is empty")
            if "\x00" in v:
                raise ValueError("the command contains a NUL byte")
        else:
            if not v or not v[0]:
                raise ValueError("the argv list is empty; give the program first")
            if any("\x00" in a for a in v):
                raise ValueError("an argument contains a NUL byte")
        return v


def argv_of(args: Args) -> "list[str]":
    if isinstance(args.command, str):
        return [SHELL, "-c", args.command]
    return list(args.command)


def _timeout(args: Args, ctx: ToolContext) -> float:
    return min(args.timeout_s, ctx.timeout_s)


def _sandbox(ctx: ToolContext) -> Any:
    """The session's sandbox: the one in the context, else the running session's."""
    if ctx.sandbox is not None:
        return ctx.sandbox
    from agent_cli.sandbox.policy import current

    return current()


def sandbox_lines(args: Args, ctx: ToolContext) -> list[str]:
    box = _sandbox(ctx)
    if box is None:
        return ["not sandboxed: no session sandbox is set up; the command runs with all your "
                "rights"]
    lines: list[str] = box.panel_lines(args.network)
    return lines


def preview(args: Args, ctx: ToolContext) -> str:
    argv = argv_of(args)
    how = ("through the shell: " if isinstance(args.command, str) else "directly: ")
    confinement = sandbox_lines(args, ctx)
    network_first = [line for line in confinement if line.startswith("network:")]
    lines = [
        *network_first,
        "runs " + how + shlex.join(argv),
        f"in     {os.path.realpath(ctx.workspace)}",
        f"limit  {_timeout(args, ctx):g} s, then the whole process group is killed",
        "stdin  closed; secrets removed from the environment; processes left running when it "
        "returns are ended",
    ]
    if args.timeout_s > ctx.timeout_s:
        lines.append(f"note   timeout_s {args.timeout_s:g} is capped to the session's "
                     f"{ctx.timeout_s:g} s")
    lines.extend(line for line in confinement if line not in network_first)
    return "\n".join(lines)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _live(ctx: ToolContext) -> Callable[[bytes], None] | None:
    """The command's output as it arrives, decoded for the live view (chunks may split a UTF-8
    character: an incremental decoder keeps it whole)."""
    show = ctx.on_output
    if show is None:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return lambda chunk: show(decoder.decode(chunk))


def run(args: Args, ctx: ToolContext) -> ToolOutput:
    timeout = _timeout(args, ctx)
    half = max(ctx.output_cap - 400, 2000) // 2
    res = run_process(argv_of(args), cwd=str(ctx.workspace), env=scrubbed_env(),
                      timeout_s=timeout, cancel=ctx.cancel, head_bytes=half, tail_bytes=half,
                      sandbox=_sandbox(ctx),
                      network=args.network,
                      on_output=_live(ctx))
    if res.error is not None:
        if res.error.startswith("could not start"):
            return ToolOutput(res.error + ". Check the program name and that it is installed.",
                              True)
        return ToolOutput(res.error + ".", True)
    facts: list[str] = []
    if res.timed_out:
        status = (f"timed out after {timeout:g} s; its effect is unknown (its process group was "
                  "killed)")
    elif res.cancelled:
        status = f"interrupted after running {res.duration_s:.1f} s; its process group was killed"
    elif res.returncode is not None and res.returncode < 0:
        status = f"killed by {_signal_name(-res.returncode)}"
    else:
        status = f"exit code {res.returncode}"
    facts.append(status)
    facts.append(f"{res.duration_s:.2f} s")
    if res.cut_bytes:
        facts.append(f"output {res.total_bytes:,} bytes, {res.cut_bytes:,} cut from the middle")
    else:
        facts.append(f"output {res.total_bytes:,} bytes")
    if res.leftovers:
        facts.append(f"ended {res.leftovers} process(es) it left running")
    body = res.text()
    text = f"[{'; '.join(facts)}]\n{body}" if body else f"[{'; '.join(facts)}]\n(no output)"
    failed = res.timed_out or res.cancelled or res.returncode != 0
    said = _say_it(body, args, ctx) if failed else None
    if said is not None:
        text = f"{text.rstrip()}\n{said}"
    return ToolOutput(text, failed)


def _say_it(body: str, args: Args, ctx: ToolContext) -> "str | None":
    """The sandbox's one line after a failed result that looks like its refusal, or like its
    undo layer running out of room (the model reads it too, so it knows why)."""
    box = _sandbox(ctx)
    if box is None:
        return None
    from agent_cli.sandbox.diagnose import explain, layer_full

    full = layer_full(body, box.layer is not None)
    if full is not None or not box.enforced:
        return full
    return explain(body, box.capabilities(args.network))


TOOL = Tool(
    name="run_command",
    description=(
        "Run a command in the workspace folder and return its exit code, duration and combined "
        "stdout+stderr. `command` is an argv list (run directly) or a string (run through "
        "/bin/sh -c). stdin is closed, so anything that waits for input or an editor ends at "
        "once; the environment has secrets removed. Long output keeps its head and tail and "
        "says how much was cut. On timeout (timeout_s, default 60) the whole process group is "
        "killed, and background processes still running when the command returns are ended, "
        "so start no servers or daemons. A non-zero exit is reported as an error. "
        "Where the sandbox is on, the command may write only inside the workspace and TMPDIR, "
        "cannot read agent-cli's files or the user's credential stores, and has no network "
        "unless `network` is true; a refusal is named in a `sandbox:` line after the result."
    ),
    args=Args,
    effect="write",
    run=run,
    preview=preview,
)
