"""get_time: an example of a read-only plugin that calls something outside the process.

It runs the system's `date` program with TZ set, so the answer comes from the operating system's
clock and time-zone database, not from Python. The zone name is checked first (a name `date`
does not know would silently give UTC), and the program runs with a short timeout, no stdin and
a minimal environment.
"""

import re
import shutil
import subprocess
import zoneinfo
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from agent_cli.errors import ToolFailed
from agent_cli.tools import Tool, ToolContext

ZONE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,2}$")
FORMAT = "+%Y-%m-%d %H:%M:%S %Z (UTC%z), %A"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timezone: str = Field("UTC", description="IANA time zone name such as Europe/Paris, "
                          "America/New_York or UTC.")


def _check_zone(name: str) -> None:
    if not ZONE_RE.match(name):
        raise ToolFailed(f"{name!r} is not an IANA time zone name (like Europe/Paris).")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ToolFailed(f"unknown time zone {name!r}; use an IANA name like Europe/Paris.") \
            from None


def run(args: Args, ctx: ToolContext) -> str:
    _check_zone(args.timezone)
    date = shutil.which("date")
    if date is None:
        raise ToolFailed("the `date` program was not found on this system.")
    try:
        done = subprocess.run([date, FORMAT], env={"TZ": args.timezone, "LC_ALL": "C"},
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=min(5.0, ctx.timeout_s), check=False)
    except subprocess.TimeoutExpired:
        raise ToolFailed("`date` did not answer within 5 s.") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[:200]
        raise ToolFailed(f"`date` failed with exit code {done.returncode}: {err}")
    text = done.stdout.decode("utf-8", "replace").strip()
    # `date` falls back to UTC, silently, for a zone the system does not have (Python may know
    # it from the tzdata package): compare the offsets so that is reported, not passed on.
    offset = datetime.now(zoneinfo.ZoneInfo(args.timezone)).strftime("%z")
    if f"(UTC{offset})" not in text:
        before = (datetime.now(zoneinfo.ZoneInfo(args.timezone)) - timedelta(minutes=1))
        if f"(UTC{before.strftime('%z')})" not in text:  # not just an offset change this second
            raise ToolFailed(f"the system's time-zone database does not know {args.timezone!r} "
                             f"(date said {text!r}).")
    return f"{text} [{args.timezone}]"


TOOL = Tool(
    name="get_time",
    description=(
        "Current date and time in an IANA time zone (default UTC), read from the system clock "
        "by running the `date` program."
    ),
    args=Args,
    effect="read",
    run=run,
)
