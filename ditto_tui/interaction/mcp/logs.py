"""A server's log file: ditto's own notes and the server's text, each line sanitised and labelled.

Every line starts with the label of who wrote it: ``[ditto]`` for ditto-tui's notes on the connection,
``[stderr]`` for what the server wrote to its stderr, ``[log]`` for its ``notifications/message`` log
notifications. Server text is split into lines and only ever written after its own label, with every
control, bidi and invisible character shown as an escape (``\\x1b``, ``\\u202e``), so a server can neither
forge a ``[ditto]`` line nor hide or reorder text. Configured secrets are redacted from every line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any, TextIO

from ditto_tui.home import open_private
from ditto_tui.sanitize import SecretRedactor, escape_controls, sanitize_public_message

LOG_LINES_PER_SECOND = 50
"""Log notifications written per server per second; the rest are counted and dropped."""

MAX_LINE_CHARS = 8192
"""The longest piece of server text on one log line; a longer line continues on the next."""

DITTO, STDERR, LOG = "[ditto]", "[stderr]", "[log]"


def server_lines(text: str) -> list[str]:
    """Server text as log lines: split at line feeds (a trailing CR dropped), cut to ``MAX_LINE_CHARS``."""
    lines: list[str] = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        lines += [line[at : at + MAX_LINE_CHARS] for at in range(0, len(line), MAX_LINE_CHARS)] or [""]
    return lines


def log_text(data: Any) -> str:
    """The text of a log notification's ``data``: a string as it is, anything else as JSON."""
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        return repr(data)


class LogSink:
    """The server's log file as ditto writes it: labelled, sanitised lines; log notifications rate-bound."""

    def __init__(self, file: TextIO, secrets: tuple[str, ...]) -> None:
        self.file = file
        self.secrets = secrets
        self._redactor = SecretRedactor(secrets)
        self._window = time.monotonic()
        self._written = 0
        self.dropped = 0
        self.listener: Callable[[str, str], object] | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], secrets: tuple[str, ...]) -> LogSink:
        """Append to the log file at ``path`` (mode 0600), never through a link: a link as the file or in
        its directory raises :class:`~ditto_tui.home.StateDirError`."""
        fd = open_private(path, append=True)
        return cls(open(fd, "w", encoding="utf-8", errors="backslashreplace"), secrets)

    def _write(self, label: str, line: str) -> None:
        print(f"{label} {line}", file=self.file, flush=True)
        if self.listener is not None:
            self.listener(label, line)

    def note(self, text: object) -> None:
        """Write one of ditto's own notes on the connection, unlimited (connection events)."""
        self._write(DITTO, sanitize_public_message(text, secrets=self.secrets))

    def detail(self, text: str) -> None:
        """Write one of ditto's notes with its paths kept (what ran, where): redacted and escaped only."""
        self._write(DITTO, escape_controls(self._redactor.redact(text)))

    def stderr(self, text: str) -> None:
        """Write what the server wrote to stderr, one ``[stderr]`` line per line of it."""
        self._server(STDERR, "", text)

    def log(self, level: str, logger: str | None, data: Any) -> None:
        """Write one log notification unless this second's allowance is spent; ``[log] level logger:``."""
        if self._allowed():
            source = f" {escape_controls(self._redactor.redact(logger))}" if logger else ""
            self._server(LOG, f"{level}{source}: ", log_text(data))

    def note_limited(self, text: object) -> None:
        """Write one of ditto's notes unless this second's allowance is spent (per-message events)."""
        if self._allowed():
            self.note(text)

    def _server(self, label: str, head: str, text: str) -> None:
        for line in server_lines(self._redactor.redact(text)):
            self._write(label, head + escape_controls(line))

    def _allowed(self) -> bool:
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._flush_dropped()
            self._window, self._written = now, 0
        if self._written >= LOG_LINES_PER_SECOND:
            if not self.dropped:
                self.note(f"over {LOG_LINES_PER_SECOND} log messages this second: dropping the rest")
            self.dropped += 1
            return False
        self._written += 1
        return True

    def _flush_dropped(self) -> None:
        if self.dropped:
            self.note(f"dropped {self.dropped} log messages from the server (over {LOG_LINES_PER_SECOND}/s)")
            self.dropped = 0

    def close(self) -> None:
        """Record what was dropped and close the file."""
        self._flush_dropped()
        self.file.close()
