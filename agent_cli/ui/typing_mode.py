"""The terminal's mode while the chat's first frame waits for the line editor (ui/startup.py),
and the keys typed meanwhile. Standard library only, except `typeahead` (called once the line
editor is loaded)."""

from __future__ import annotations

import contextlib
import os
from typing import Any


def typing_mode(saved: list[Any]) -> list[Any]:
    """The terminal while the frame waits for the line editor: the kernel echoes each key as it
    arrives and keeps the line (backspace and Ctrl-U edit it there, on screen too), and nothing
    is a signal, an end of file or flow control: Ctrl-C, Ctrl-D, Ctrl-S, Ctrl-R are bytes the
    editor reads as its keys. Enter stays CR (the editor's "send"); a typed CR does not end the
    kernel's line, so all of it is still there for the editor, which reads it raw."""
    import termios

    disabled = b"\x00"
    with contextlib.suppress(OSError, ValueError):
        disabled = bytes([os.fpathconf(0, "PC_VDISABLE") & 0xFF])
    mode = list(saved)
    mode[0] = saved[0] & ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR
                           | termios.IGNCR)
    echo = termios.ECHO | termios.ECHOE | termios.ECHOK | getattr(termios, "ECHOCTL", 0) \
        | getattr(termios, "ECHOKE", 0)
    mode[3] = (saved[3] | termios.ICANON | echo) & ~(termios.ISIG | termios.IEXTEN
                                                     | termios.ECHONL)
    cc = list(saved[6])
    cc[termios.VEOF] = disabled
    mode[6] = cc
    return mode


def _raw_for_a_moment(fd: int, saved: list[Any]) -> None:
    """Raw, no echo, reads that never wait: in the kernel's line mode an unfinished line can be
    neither read nor counted."""
    import termios

    raw = list(saved)
    raw[0] = saved[0] & ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
    raw[3] = saved[3] & ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
    cc = list(saved[6])
    cc[termios.VMIN], cc[termios.VTIME] = 0, 0
    raw[6] = cc
    termios.tcsetattr(fd, termios.TCSANOW, raw)


def pending_count(fd: int, saved: list[Any]) -> int:
    """How many bytes were typed and not yet read, left where they are (for whoever reads the
    terminal next), the terminal in `typing_mode` afterwards."""
    import fcntl
    import struct
    import termios

    _raw_for_a_moment(fd, saved)
    try:
        count: int = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, typing_mode(saved))
    return count


def read_pending(fd: int, saved: list[Any]) -> bytes:
    """Every byte typed and not yet read, taken off the terminal (raw for a moment: in the
    kernel's line mode an unfinished line cannot be read). A CR the shell's mode turned into LF
    is a CR again (the Enter it was)."""
    import termios

    _raw_for_a_moment(fd, saved)
    got = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        got += chunk
    if saved[0] & termios.ICRNL:
        got = got.replace(b"\n", b"\r")
    termios.tcsetattr(fd, termios.TCSANOW, typing_mode(saved))
    return got


def visible(typed: bytes, echo: bool = False) -> str:
    """What of `typed` a line shows: its printable characters; with `echo`, also each control
    character as the kernel echoed it (two columns: ^C)."""
    text = typed.decode("utf-8", "replace")
    if echo:
        return "".join(c if c.isprintable() else "^?" for c in text)
    return "".join(c for c in text if c.isprintable())


def typeahead(typed: bytes) -> list[Any]:
    """`typed` as the line editor's key presses (prompt-toolkit parses its own input so)."""
    from prompt_toolkit.input.vt100_parser import Vt100Parser
    from prompt_toolkit.key_binding import KeyPress

    keys: list[KeyPress] = []
    parser = Vt100Parser(keys.append)
    parser.feed(typed.decode("utf-8", "replace"))
    parser.flush()
    return keys

