"""`agent-cli eval TASKS.toml`: run every task K times, check what each trial left behind, and
report pass@k and pass^k. Exit 0 iff every trial passed, 1 if any failed, 2 on a usage error."""

import json
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from agent_cli.cli.common import Common
    from agent_cli.eval.runner import TrialResult

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(app: typer.Typer) -> None:
    from agent_cli.cli.common import Common, fail, guarded, with_common

    @app.command("eval")
    @with_common
    @guarded
    def eval_(
        common: Common,
        tasks_file: Annotated[Path, typer.Argument(metavar="TASKS",
                                                   help="The task file (TOML).")],
        trials: Annotated[int, typer.Option("--trials", "-k", min=1, metavar="K",
                                            help="Trials per task (pass@k and pass^k use "
                                            "k = K).")] = 1,
        output: Annotated[str, typer.Option("--output", "-o", metavar="FORMAT",
                                            help="text: a report for people; json: one "
                                            "JSON object.")] = "text",
        jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, metavar="N",
                                          help="Trials run at once, each in its own process "
                                          "(the report is the same as a serial run's).")] = 1,
        ks: Annotated[Optional[str], typer.Option(  # noqa: UP045 (typer needs Optional)
            "--k", metavar="K,K,...",
            help="The ks of the pass@k / pass^k table, e.g. 1,2,4 (default: every k from 1 to "
            "--trials).")] = None,
        log_dir: Annotated[Optional[Path], typer.Option(  # noqa: UP045 (typer needs Optional)
            "--log-dir", metavar="DIR",
            help="Where the trials' session logs go (default: a new eval-* folder in the "
            "sessions folder).")] = None,
        answers: Annotated[Optional[Path], typer.Option(  # noqa: UP045 (typer needs Optional)
            "--answers", metavar="FILE",
            help="Your answers to the approval questions, by task id: a TOML file of "
            'TASK_ID = "all" | "none" | ["y", "n use ./tmp"] ("*" for the other tasks). '
            "Replaces the task file's own answers.")] = None,
        approve_task_answers: Annotated[bool, typer.Option(
            "--approve-task-answers",
            help="Use the answers written in the task file. Without this (or --answers), a "
            "task file's answers are ignored: it may come from someone else. A call that asks "
            "for the network is never approved either way.")] = False,
    ) -> None:
        """Run the tasks of a task file, each in a fresh copy of its workspace, through the same
        loop as a chat, with the answers you allow for approvals (--approve-task-answers,
        --answers FILE; otherwise write calls are denied). Check the files left, the calls
        approved and run, the answer, requests and cost. Every trial's log is kept."""
        from rich.console import Console

        from agent_cli.eval.answers import AnswerSource, apply_answers
        from agent_cli.eval.report import all_passed, build_report, parse_ks, text_lines
        from agent_cli.eval.runner import plan, run_suite
        from agent_cli.eval.tasks import load_tasks
        from agent_cli.ui.safe_rich import safe

        if output not in ("text", "json"):
            raise fail("--output must be text or json.", EXIT_USAGE)
        if common.workspace is not None or common.log is not None:
            raise fail("eval copies each task's own workspace and writes one log per trial: "
                       "drop --workspace and --log (use --log-dir DIR for the logs).",
                       EXIT_USAGE)
        try:
            chosen = parse_ks(ks, trials) if ks is not None else None
        except ValueError as e:
            raise fail(str(e), EXIT_USAGE) from None
        suite = load_tasks(tasks_file)
        note = apply_answers(suite, AnswerSource(approve_task_answers, answers))
        folder = log_dir if log_dir is not None else _default_log_dir(common)
        specs = plan(suite.tasks, common.settings(), common.tools_dir, trials, folder.resolve())
        err = Console(stderr=True, highlight=False)
        if note is not None:
            err.print(safe(note, "yellow"), soft_wrap=True)
        with _Progress(err, len(specs)) as progress:
            results = run_suite(specs, jobs=jobs, on_done=progress.advance)
        report = build_report([t.id for t in suite.tasks], results, trials, chosen)
        from agent_cli.write_faults import writing_stdout

        with writing_stdout("the eval report"):
            if output == "json":
                sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=True) + "\n")
            else:
                out = Console(highlight=False)
                for style, line in text_lines(report):
                    out.print(safe(line, style), soft_wrap=True)
            sys.stdout.flush()
        raise typer.Exit(EXIT_OK if all_passed(report) else EXIT_FAILED)


def _default_log_dir(common: "Common") -> Path:
    from agent_cli.log.store import sessions_dir

    settings = common.settings()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return sessions_dir(settings) / f"eval-{stamp}-{secrets.token_hex(3)}"


class _Progress:
    """A progress bar on stderr while trials run; nothing at all when stderr is not a terminal
    (stdout stays the report alone, for scripts)."""

    def __init__(self, console: "Console", total: int) -> None:
        self.console = console
        self.total = total
        self.bar: Progress | None = None
        self.task_id: TaskID | None = None
        self.passed = 0

    def __enter__(self) -> "_Progress":
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.description}"), console=self.console,
                           transient=True)
            self.task_id = bar.add_task("", total=self.total)
            bar.start()
            self.bar = bar
        return self

    def advance(self, result: "TrialResult") -> None:
        self.passed += result.passed
        if self.bar is not None and self.task_id is not None:
            self.bar.update(self.task_id, advance=1, description=f"{self.passed} passed")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
