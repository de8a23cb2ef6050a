"""`!cmd` at the REPL: a shell command the user types runs as the user's own action.

It is not the model's call, so there is no panel: the person typed the exact command and pressed
Enter, as in their own shell. It runs in the workspace with the user's own shell (`$SHELL -c`,
else /bin/sh), the user's environment, stdin /dev/null, its own process group (Ctrl-C ends the
whole group), output capped like run_command's (head and tail), and NOT inside the kernel sandbox
(as Claude Code runs `!` commands): the sandbox confines what the model chooses; this is what
the user chose. README ("In the REPL") says so.

The output is shown through the output boundary, recorded in the log (a `notice` of kind
`user_shell`, fields in events.UserShell), and goes to the model with the user's next message, as
an attachment marked `user-shell` (after the redaction a tool result gets, config
redact_results). Several commands before one message all go with it, in order.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import TYPE_CHECKING

from agent_cli import events as ev
from agent_cli.cancel import SIGNAL_SLICE_S
from agent_cli.conversation import Attachment

if TYPE_CHECKING:
    from agent_cli.session import Session

USER_SHELL_TIMEOUT_S = 3600.0
"""A `!` command still running after an hour is ended (Ctrl-C ends it sooner)."""
USER_SHELL_URI = "user-shell"
"""How the output is marked for the model: `<resource uri="user-shell">`."""

_pending: weakref.WeakKeyDictionary[Session, list[Attachment]] = weakref.WeakKeyDictionary()


def run_user_shell(session: Session, command: str) -> ev.UserShell:
    """Run `command` in the workspace (Ctrl-C ends it), record it, and keep its output for the
    next message. Called on the terminal's thread, which the record is emitted on (so it is
    drawn at once); the command runs on a thread of its own so Ctrl-C reaches this one.
    Returns the record (what the log holds: the output as the model gets it)."""
    from agent_cli.tools.procs import ProcResult, run_process
    from agent_cli.ui.mentions import for_the_model

    shell = os.environ.get("SHELL") or "/bin/sh"
    cancel = threading.Event()
    done: list[ProcResult] = []
    worker = threading.Thread(target=lambda: done.append(run_process(
        [shell, "-c", command], cwd=str(session.workspace), env=dict(os.environ),
        timeout_s=USER_SHELL_TIMEOUT_S, cancel=cancel, sandbox=None)), daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join(SIGNAL_SLICE_S)  # in slices: a Ctrl-C may land on another thread
        except KeyboardInterrupt:
            cancel.set()  # run_process ends the command's whole process group
    result = done[0]
    if result.error is not None:
        output, code = f"[{result.error}]", None
    else:
        output, code = result.text(), result.returncode
        if result.timed_out:
            output += f"\n[ended after {USER_SHELL_TIMEOUT_S:.0f} s]"
        elif result.cancelled:
            output += "\n[interrupted by the user]"
    status = f"exit {code}" if code is not None else "it did not run"
    # the command line too: a key typed in it (`curl -H "x-api-key: ..."`) is not sent
    sent, hidden = for_the_model(session, f"$ {command}\n{output}", "this shell output")
    from agent_cli.sandbox.capabilities import Capabilities

    record = ev.UserShell(command=command, exit_code=code, output=sent.partition("\n")[2],
                          duration=round(result.duration_s, 3), hidden=hidden,
                          sandbox=Capabilities("off", network=True).record())
    session.emit(record.notice())
    _pending.setdefault(session, []).append(Attachment(
        USER_SHELL_URI, f"The user ran this shell command in the workspace ({status}):\n{sent}"))
    return record


def take_pending(session: Session) -> list[Attachment]:
    """The outputs of the `!` commands run since the last message (and forget them)."""
    return _pending.pop(session, [])
