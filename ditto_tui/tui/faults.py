"""A failure in a screen, a widget or a worker is shown and logged, never the end of the app (U-10).

Textual ends the app on any exception that reaches it, and the message loop a handler raised in stops
for good: a supervisor that dies (or freezes) on one bad schema takes the live run and its pending
approvals down with it. Two layers keep it alive:

- :class:`Guarded` catches an exception around each message a pump handles (the app's own loop, where
  key bindings and actions run, and every screen of the app), reports it and goes on with the next
  message, so the loop never stops;
- :meth:`FaultLog.report` is what the app's ``_handle_exception`` does instead of exiting for what
  reaches it anyway (a failed ``compose``, a timer, a worker started with ``exit_on_error``): show the
  error in one line and append its traceback to ``ui-errors.log`` in the workspace's log folder.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Protocol, runtime_checkable

from textual.message import Message
from textual.message_pump import MessagePump

from ditto_tui.home import StateDirError, append_private, logs_dir
from ditto_tui.sanitize import escape_unprintable, public_message_from_exception

__all__ = ["UI_ERRORS_LOG", "FaultLog", "FaultReporter", "Guarded"]

UI_ERRORS_LOG = "ui-errors.log"
"""The file, in the workspace's log folder, that keeps the traceback of every error the UI survived."""


@runtime_checkable
class FaultReporter(Protocol):
    """An app that survives errors: it shows and logs each one (see :class:`FaultLog`)."""

    def report_fault(self, error: BaseException, where: object) -> None:
        """Show ``error`` (raised in ``where``) and log it; the app goes on."""
        ...


class Guarded(MessagePump):
    """A message pump whose handlers may fail without stopping its loop: the app reports the error.

    Mixed in before the Textual base (``class RunScreen(Guarded, Screen[None])``). In an app that is
    not a :class:`FaultReporter` the error propagates as Textual would have it.
    """

    async def _dispatch_message(self, message: Message) -> None:
        try:
            await super()._dispatch_message(message)
        except Exception as error:
            app = self.app
            if not isinstance(app, FaultReporter):
                raise
            app.report_fault(error, self)


class FaultLog:
    """Shows each error in one sanitised line and appends its traceback to the workspace's error log."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.path = logs_dir(workspace) / UI_ERRORS_LOG
        self.count = 0

    def message(self, error: BaseException) -> str:
        """The one-line public message of ``error`` (no secrets, paths or controls)."""
        return public_message_from_exception(error, workspace=self.workspace)

    def write(self, error: BaseException, where: object) -> str:
        """Append the traceback of ``error`` to the log; where it went (or why it could not)."""
        self.count += 1
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        lines = traceback.format_exception(type(error), error, error.__traceback__)
        # Exception text can carry what a server or a file sent: no control character reaches the log.
        body = "".join(escape_unprintable(line.rstrip("\n")) + "\n" for line in "".join(lines).splitlines())
        header = escape_unprintable(f"--- {stamp} in {type(where).__name__}: {self.message(error)}")
        try:
            append_private(self.path, f"{header}\n{body}")
        except StateDirError as exc:
            return f"not logged: {exc.message}"
        return f"logged to {self.path}"
