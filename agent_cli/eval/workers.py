"""Trials in worker processes (`eval --jobs N`), each worker started isolated.

A suite is often run inside a cloned benchmark repository, and that folder is someone else's: a
`multiprocessing.py` (or `json.py`) in it must never be imported. A worker is therefore a fresh
interpreter started as `python -I` (no current folder or script folder on sys.path, no user site,
no PYTHON* variables) in a neutral current folder (an empty private temporary one), never a fork
or a multiprocessing child (those start with the parent's sys.path and current folder first).

Credentials: agent-cli overwrites the secret values of its own initial environment block
(sandbox/selfguard.py), so a child started with the inherited environment would have no API key.
The worker's environment is the parent's minus anything secret (the one table of secret shapes,
redact.is_secret_var); the secret variables the parent holds are handed to the worker through its
stdin pipe (never argv, never its initial environment block), before the first trial.

The protocol is pickles over the worker's stdin and stdout: first the secret variables, then one
TrialSpec per trial, answered by one TrialResult each; None ends the worker. The worker's own
stdout is moved to its stderr, so nothing a trial prints can corrupt the answers.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent_cli.cancel import get_on_main

if TYPE_CHECKING:
    from agent_cli.eval.runner import TrialResult, TrialSpec

_BOOT = ("import sys; p = sys.argv[1]; p in sys.path or sys.path.append(p); "
         "from agent_cli.eval.workers import serve; serve()")
"""The worker's program. agent_cli's own folder is appended (never put first) for a source
checkout that is not installed; an installed agent-cli is found on the isolated path itself."""

STOP_WAIT_S = 30.0
"""After Ctrl-C: how long running trials get to end before their workers are killed."""


def worker_env(environ: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(the worker's environment, the secret variables sent through its pipe)."""
    from agent_cli.redact import is_secret_var

    src = dict(os.environ if environ is None else environ)
    secret = {k: v for k, v in src.items() if is_secret_var(k, v)}
    return {k: v for k, v in src.items() if k not in secret}, secret


def worker_command() -> list[str]:
    """`python -I -c BOOT FOLDER`: FOLDER holds the agent_cli package (not a secret)."""
    import agent_cli

    folder = str(Path(agent_cli.__file__).resolve().parent.parent)
    return [sys.executable, "-I", "-c", _BOOT, folder]


class _Worker:
    """One worker process, from the parent's side."""

    def __init__(self, cwd: Path) -> None:
        env, secret = worker_env()
        self.proc = subprocess.Popen(worker_command(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=cwd, env=env,
                                     close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout
        self._send(secret)

    def _send(self, item: Any) -> None:
        pickle.dump(item, self._in, protocol=pickle.HIGHEST_PROTOCOL)
        self._in.flush()

    def run(self, spec: TrialSpec) -> TrialResult:
        """The trial's result; OSError/EOFError when the worker died."""
        from agent_cli.eval.runner import TrialResult

        self._send(spec)
        result = pickle.load(self._out)
        if not isinstance(result, TrialResult):
            raise EOFError("the worker answered something that is not a trial result")
        return result

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._send(None)
        with contextlib.suppress(OSError, ValueError):
            self._in.close()

    def end(self, wait_s: float) -> None:
        """Stop taking trials; wait up to `wait_s` for the process, then kill it."""
        self.close()
        try:
            self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            self._out.close()


def run_parallel(specs: list[TrialSpec], jobs: int,
                 on_done: Callable[[int, TrialResult], None]) -> None:
    """Run `specs` on `jobs` isolated workers; `on_done(index, result)` in this thread as each
    trial ends (in whatever order). A worker that dies fails its trial with a sentence and is
    replaced for the next one."""
    from agent_cli.private_files import private_dir

    todo: Iterator[tuple[int, TrialSpec]] = iter(enumerate(specs))
    lock = threading.Lock()
    done: queue.Queue[tuple[int, TrialResult]] = queue.Queue()
    stopping = threading.Event()
    workers: list[_Worker] = []
    cwd = Path(tempfile.mkdtemp(prefix="agent-cli-eval-cwd-"))
    private_dir(cwd)

    def next_spec() -> tuple[int, TrialSpec] | None:
        with lock:
            return None if stopping.is_set() else next(todo, None)

    def drive() -> None:
        worker: _Worker | None = None
        try:
            while (item := next_spec()) is not None:
                i, spec = item
                try:
                    if worker is None:
                        worker = _Worker(cwd)
                        with lock:
                            workers.append(worker)
                    result = worker.run(spec)
                except Exception as e:  # the worker died, or never started: fail this trial
                    code = worker.proc.poll() if worker is not None else None
                    result = _died(spec, code, e)
                    if worker is not None:
                        worker.end(0)
                    worker = None
                done.put((i, result))  # every trial gets a result: the loop below never hangs
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=drive, name=f"eval-worker-{n}", daemon=True)
               for n in range(min(jobs, len(specs)))]
    for t in threads:
        t.start()
    try:
        for _ in specs:
            i, result = get_on_main(done)  # (a Ctrl-C may land on another thread)
            on_done(i, result)
    except BaseException:
        # Ctrl-C (which reached the workers too): no new trial starts; running ones end.
        stopping.set()
        with lock:
            running = list(workers)
        for w in running:
            w.end(STOP_WAIT_S)
        raise
    finally:
        for t in threads:
            t.join(timeout=STOP_WAIT_S)
        with lock:
            running = list(workers)
        for w in running:
            w.end(STOP_WAIT_S)
        shutil.rmtree(cwd, ignore_errors=True)


def _died(spec: TrialSpec, code: int | None, error: Exception) -> TrialResult:
    from agent_cli.eval.runner import TrialResult

    how = (f"ended with exit code {code}" if code is not None
           else f"did not answer ({type(error).__name__}: {error})")
    return TrialResult(spec.task.id, spec.trial, False,
                       [f"error: the worker process {how}; its error is on stderr. Run the "
                        "suite without --jobs to see it in one process."],
                       str(spec.log))


def serve() -> None:
    """The worker's side: take the secret variables, then answer trials until None."""
    from agent_cli.eval.runner import run_trial

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the answers
    sys.stdout = sys.stderr
    source = sys.stdin.buffer
    try:
        secret = pickle.load(source)
        if isinstance(secret, dict):
            os.environ.update({str(k): str(v) for k, v in secret.items()})
        while (spec := pickle.load(source)) is not None:
            pickle.dump(run_trial(spec), answers, protocol=pickle.HIGHEST_PROTOCOL)
            answers.flush()
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass  # Ctrl-C or the parent went away: the trial in hand ended with its session
