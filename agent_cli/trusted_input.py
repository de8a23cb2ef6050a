"""The one gate for every file agent-cli itself acts on as text: project instructions, SKILL.md
and a skill's files, eval task files, plugin sources, imported configs.

Such a file is named in the user's config or on the command line, but its content is written by
whoever controls the folder it sits in (a cloned repository, a pull request). So it is opened one
way, here:

- by the name as configured, relative to its root (the workspace, or the folder the user named:
  a skills or tools folder, the config folder for user-level files);
- resolved by the path guard read_file uses (tools/paths.py): a name whose real location leaves
  its root is refused, and so is agent-cli's own state (log key, sessions, pins, history, config)
  whatever the root is; the file is then reached from the root without following any link,
  opened with O_NOFOLLOW|O_NONBLOCK and fstat-checked, so a FIFO, a device, a socket or a folder
  is refused at once (nothing blocks, nothing is read without bound);
- at most `max_bytes` are read, checked before and during the read.

What it returns is the bytes and their sha256: the one copy that is checked against a pin, shown
to the user and used. Pins are keyed by `pin_key` (the configured name under its root, not where
a link leads), so a name that becomes a link to another file is a change, never a first use.

`frame` puts such text inside a tag the text cannot close: any spelling of the tag in the text
(case, spaces, a look-alike `<`) is replaced before the frame is drawn.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent_cli.errors import AgentError, PathRefused

__all__ = ["InputMissing", "InputRefused", "TrustedInput", "frame", "neutralize_tags",
           "open_trusted_text", "pin_key"]

DEFAULT_MAX_BYTES = 1_000_000
_STATE_NAMES = ("log.key", "config.toml", "plugin-pins.json", "mcp-pins.json", "history",
                "sessions", "store")
"""The entries of agent-cli's own folders that are state, never input, even for a file whose
root (a skills or tools folder) is kept inside one of those folders."""


class InputRefused(AgentError):
    """A file agent-cli was to act on was refused: the message names it and says why."""


class InputMissing(InputRefused):
    """The file named does not exist (a config name for a file this workspace does not have)."""


@dataclass(frozen=True)
class TrustedInput:
    """One file as the gate read it."""

    root: Path
    """The folder the name is relative to, as the caller gave it (absolute)."""
    name: str
    """The name as configured (relative to `root` when inside it)."""
    key: str
    """The pin key: the configured name under its root, links not followed (`pin_key`)."""
    real: Path
    """Where the name led when it was read (links followed, inside the root)."""
    data: bytes
    """The bytes read: the ones checked, shown and used."""
    sha256: str

    @property
    def linked(self) -> bool:
        """True when the name leads through a symbolic link (its real place is elsewhere)."""
        return str(self.real) != self.key

    @property
    def text(self) -> str:
        """The bytes as UTF-8; InputRefused when they are not text."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputRefused(f"{self.name} is not UTF-8 text; refused.") from None

    def shown_name(self) -> str:
        """The name, with where it leads when that is another place."""
        if not self.linked:
            return self.name
        try:
            where = str(self.real.relative_to(_real(self.root)))
        except ValueError:
            where = str(self.real)
        return f"{self.name} (a link to {where})"


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def pin_key(root: Path, name: str) -> str:
    """The key of a file's pin: the configured name joined to its root's real path, normalised
    but with no link in the name followed. Two names reaching one file are two pins; a name that
    becomes a link keeps its key and so its pin."""
    base = _real(Path(root).expanduser())
    raw = os.path.expanduser(name) if name == "~" or name.startswith("~/") else name
    return os.path.normpath(os.path.join(base, raw))


def open_trusted_text(root: Path, name: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                      what: str = "file") -> TrustedInput:
    """Read `name` (relative to `root`, or absolute inside it) through the gate. Raises
    InputRefused with a sentence (what it is, why, what to do) for a name that leaves its root,
    reaches agent-cli's own state, is not a regular file, is over `max_bytes`, or is missing
    (InputMissing, a kind of InputRefused)."""
    from agent_cli.tools import paths

    root = Path(root).expanduser().absolute()
    label = f"{what} {name}"
    try:
        real = _resolve(root, name)
        if not real.exists() and not os.path.lexists(real):
            raise InputMissing(f"{label}: no such file in {root}.")
        with paths.open_parent(root, real, name) as (dir_fd, last):
            try:
                fd = os.open(last, os.O_RDONLY | paths._NOFOLLOW | paths._NONBLOCK
                             | paths._CLOEXEC, dir_fd=dir_fd)
            except OSError as e:
                raise paths._refusal(e, name) from None
        try:
            st = os.fstat(fd)
            paths._check_regular(st, name)
            paths.refuse_protected_fd(st, name)
            if st.st_size > max_bytes:
                raise InputRefused(f"{label} is {st.st_size:,} bytes, over the {max_bytes:,} "
                                   "byte limit; refused (nothing was read).")
            data = paths.read_fd(fd, max_bytes + 1)
        finally:
            os.close(fd)
    except PathRefused as e:
        raise InputRefused(f"{label}: {e} It was not read.") from None
    if len(data) > max_bytes:
        raise InputRefused(f"{label} grew past the {max_bytes:,} byte limit while it was read; "
                           "refused.")
    return TrustedInput(root, name, pin_key(root, name), real, data,
                        hashlib.sha256(data).hexdigest())


def _resolve(root: Path, name: str) -> Path:
    """The path guard's resolution (tools/paths.py), with one allowance: a root that is itself
    inside agent-cli's folders (skills or plugins kept in the config folder) may read its own
    files, but never the state entries of that folder (`_STATE_NAMES`) or a registered file."""
    from agent_cli.tools import paths

    root_real = paths.real_root(root)
    if paths.protected_reason(root_real) is None:
        return paths.resolve_in_workspace(root, name)
    paths._check_text(name)
    joined = Path(name) if Path(name).is_absolute() else root_real / name
    real = _real(joined)
    if not paths._inside(root_real, real):
        if paths._inside(root_real, Path(os.path.normpath(joined))):
            raise PathRefused(f"{name!r} leads outside its folder through a symbolic link; "
                              "refused.")
        raise PathRefused(f"{name!r} is outside its folder ({root_real}); refused.")
    for top, what in paths.protected_roots().items():
        if not paths._inside(top, real):
            continue
        if not paths._inside(top, root_real):
            raise PathRefused(f"{name!r} is inside {what}; agent-cli's own state. Refused.")
        first = real.relative_to(top).parts[:1]
        if first and first[0] in _STATE_NAMES:
            raise PathRefused(f"{name!r} is agent-cli's own state ({first[0]}); refused.")
    for registered, what in paths._PROTECTED.items():
        if paths._inside(registered, real) and not paths._inside(registered, root_real):
            raise PathRefused(f"{name!r} is {what}, agent-cli's own state; refused.")
    return real


def neutralize_tags(text: str, tags: tuple[str, ...]) -> str:
    """`text` with every opening or closing spelling of the tags (any case, spaces, `_`/`-`/space
    between the words, a full-width or small `<`) replaced by `[tag removed]`."""
    for tag in tags:
        words = r"[\s_\-]*".join(re.escape(w) for w in re.split(r"[_\-\s]+", tag))
        pattern = re.compile(r"[<\uff1c\ufe64\u2039\u27e8]\s*/?\s*" + words, re.I)
        text = pattern.sub("[tag removed]", text)
    return text


def frame(tag: str, attrs: dict[str, str], text: str, *, also: tuple[str, ...] = ()) -> str:
    """`<tag k="v">` text `</tag>`, the text unable to close (or open) the frame or the `also`
    tags; attribute values escaped."""
    shown = " ".join(f'{k}="{_attr(v)}"' for k, v in attrs.items())
    body = neutralize_tags(text, (tag, *also))
    return f"<{tag}{' ' if shown else ''}{shown}>\n{body.rstrip()}\n</{tag}>"


def _attr(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;").replace("\n", " "))
