"""Telling the person a decision waits when they are looking elsewhere: bell, desktop notification, title.

When a request enters the inbox while the terminal does not have focus (Textual's ``AppBlur``/``AppFocus``,
from the terminal's focus reporting), :class:`Notifier` rings the bell and, where the terminal supports
one, sends a desktop notification with an escape sequence the terminal itself turns into one:

- ``osc9``: ``ESC ] 9 ; text BEL`` (iTerm2, WezTerm, Windows Terminal, Ghostty);
- ``osc777``: ``ESC ] 777 ; notify ; title ; body BEL`` (foot, urxvt, Ghostty, WezTerm, VTE terminals);
- ``osc99``: kitty's ``ESC ] 99 ; … ST``, a title and a body.

``auto`` (the default) picks one from the terminal's own variables (``TERM``, ``TERM_PROGRAM``,
``KITTY_WINDOW_ID``); inside tmux or screen, or a terminal it does not know, it rings the bell only
(tmux marks the window). ``bell`` rings only, ``off`` does nothing. The window title always shows how many
requests wait (``ditto-tui · 2 waiting``), set with ``ESC ] 2``.

What goes into a sequence is the request's summary (a tool name a server chose, perhaps): only printable
characters are kept, ``;`` becomes ``,`` and it is cut to :data:`MAX_TEXT` characters, so no text can end
the sequence early or start another one.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping
from typing import Literal, get_args

NotifyMethod = Literal["auto", "off", "bell", "osc9", "osc777", "osc99"]
NOTIFY_METHODS: tuple[NotifyMethod, ...] = get_args(NotifyMethod)
NOTIFY_VARIABLE = "DITTO_TUI_NOTIFY"
"""Overrides the method picked from the terminal (``off`` sends nothing)."""
MAX_TEXT = 120
TITLE = "ditto-tui"

_BEL = "\x07"
_ST = "\x1b\\"


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` safe inside an OSC sequence: printable characters only, ``;`` as ``,``, at most ``limit``."""
    kept = []
    for char in text:
        if char in "\t\n\r":
            kept.append(" ")
        elif unicodedata.category(char)[0] not in "CZ" or char == " ":
            kept.append("," if char == ";" else char)
    line = " ".join("".join(kept).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def pick_method(method: NotifyMethod, env: Mapping[str, str] | None = None) -> NotifyMethod:
    """The method ``auto`` means in this terminal (others are returned as they are)."""
    env = os.environ if env is None else env
    forced = env.get(NOTIFY_VARIABLE)
    if forced in NOTIFY_METHODS:
        method = forced
    if method != "auto":
        return method
    term = env.get("TERM", "")
    program = env.get("TERM_PROGRAM", "")
    if env.get("TMUX") or term.startswith(("screen", "tmux")):
        return "bell"
    if env.get("KITTY_WINDOW_ID") or term == "xterm-kitty":
        return "osc99"
    if program in ("iTerm.app", "WezTerm", "ghostty") or env.get("WT_SESSION"):
        return "osc9"
    if term.startswith(("foot", "rxvt")) or env.get("VTE_VERSION"):
        return "osc777"
    return "bell"


def notification(method: NotifyMethod, title: str, body: str) -> str:
    """The bytes that ring and notify with ``method`` (empty for ``off``)."""
    title, body = clean(title), clean(body)
    if method == "off":
        return ""
    if method == "osc9":
        return f"{_BEL}\x1b]9;{title}: {body}{_BEL}"
    if method == "osc777":
        return f"{_BEL}\x1b]777;notify;{title};{body}{_BEL}"
    if method == "osc99":
        return f"{_BEL}\x1b]99;i=ditto:d=0;{title}{_ST}\x1b]99;i=ditto:d=1:p=body;{body}{_ST}"
    return _BEL


def window_title(waiting: int) -> str:
    """The sequence that sets the window title to show ``waiting`` requests."""
    shown = f"{TITLE} · {waiting} waiting" if waiting else TITLE
    return f"\x1b]2;{shown}{_BEL}"


class Notifier:
    """Rings and notifies for requests that arrive while the terminal is unfocused; keeps the title.

    ``write`` sends text to the terminal (the app's driver); ``focused`` says whether the terminal has
    focus now.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        focused: Callable[[], bool],
        method: NotifyMethod = "auto",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.write = write
        self.focused = focused
        self.method = pick_method(method, env)
        self._waiting = 0
        self.sent = 0

    def request_arrived(self, summary: str) -> None:
        """A request entered the inbox; ``summary`` says what it asks (``approve write_text``)."""
        if self.method == "off" or self.focused():
            return
        self.write(notification(self.method, f"{TITLE}: a decision waits", summary))
        self.sent += 1

    def waiting(self, count: int) -> None:
        """``count`` requests wait: show it in the window title (only when it changed)."""
        if self.method == "off" or count == self._waiting:
            return
        self._waiting = count
        self.write(window_title(count))


__all__ = [
    "MAX_TEXT",
    "NOTIFY_METHODS",
    "NOTIFY_VARIABLE",
    "NotifyMethod",
    "Notifier",
    "clean",
    "notification",
    "pick_method",
    "window_title",
]
