"""The Logs tab of the MCP browser: one server's log, live, as ditto writes it.

The log file's end is shown first, then every new line as it is written: ditto's own notes on the
connection (``[ditto]``), what the server wrote to stderr (``[stderr]``) and its ``notifications/message``
log messages (``[log]``). Lines arrive already sanitised (controls escaped, secrets redacted) and are shown
as plain text; a burst is drawn at once, when the pane next handles its messages. ``f`` shows one kind of
line at a time.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Log, Static

from ditto_tui.interaction.mcp import McpLogLine
from ditto_tui.interaction.mcp.logs import DITTO, LOG, STDERR
from ditto_tui.sanitize import escape_controls
from ditto_tui.tui.mcp_source import McpSource, read_log_tail
from ditto_tui.tui.widgets.mcp_pane import McpPane

__all__ = ["HISTORY_BYTES", "MAX_LOG_LINES", "McpLogsPane"]

HISTORY_BYTES = 64 * 1024
"""How much of the end of the log file is shown when a server's log is opened."""

MAX_LOG_LINES = 10_000
"""The most lines the pane keeps; the oldest go first."""

_FILTERS: tuple[str | None, ...] = (None, LOG, STDERR, DITTO)
_FILTER_NAMES = {None: "every line", LOG: "log messages", STDERR: "stderr", DITTO: "ditto's notes"}


class McpLogsPane(McpPane):
    """One server's log: the end of its file, then each line as it is written."""

    DEFAULT_CSS = """
    McpLogsPane > Log { height: 1fr; border: round $primary; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("f", "filter", "Filter lines")]

    class LinesArrived(Message):
        """Lines are waiting to be drawn."""

    def __init__(self, source: McpSource, *, id: str | None = None) -> None:
        super().__init__(source, id=id)
        self.lines: list[tuple[str, str]] = []
        self.only: str | None = None
        self._waiting: list[tuple[str, str]] = []
        self._stop: object = None

    def compose(self) -> ComposeResult:
        yield Static(classes="mcp-pane-status")
        yield Log(max_lines=MAX_LOG_LINES, id="mcp-log")

    def on_mount(self) -> None:
        self._stop = self.source.registry.on_log(self._heard)

    def on_unmount(self) -> None:
        if callable(self._stop):
            self._stop()

    # -- what is shown ----------------------------------------------------------------------------------

    def show_server(self, server: str | None, *, load: bool) -> None:
        """Unlike the other panes, a log shows whatever the server's state (a failed start above all)."""
        if server != self.server:
            self.server, self.loaded_for = server, None
            self.reset()
        if load and server is not None and self.loaded_for != server:
            self.loaded_for = server
            self.load(server)

    def reset(self) -> None:
        self.lines, self._waiting = [], []
        self.query_one(Log).clear()
        self._status()

    def load(self, server: str) -> None:
        """Show the end of ``server``'s log file; new lines follow as they are written."""
        tail = read_log_tail(self.source.server(server).log_path, HISTORY_BYTES) or ""
        for raw in tail.splitlines():
            label, _, text = raw.partition(" ")
            self.lines.append((label, escape_controls(text)))
        del self.lines[:-MAX_LOG_LINES]
        self._redraw()

    def _heard(self, line: McpLogLine) -> None:
        """A line written to some server's log (called where it is written: keep it cheap)."""
        if line.server != self.server or self.loaded_for != line.server:
            return
        first = not self._waiting
        self._waiting.append((line.label, line.text))
        if first:  # post_message: the writer may run outside the app's context
            self.post_message(self.LinesArrived())

    @on(LinesArrived)
    def _drain(self) -> None:
        """Draw every line that arrived since the last time, at once."""
        arrived, self._waiting = self._waiting, []
        self.lines.extend(arrived)
        del self.lines[:-MAX_LOG_LINES]
        self.query_one(Log).write_lines(self._shown(arrived))
        self._status()

    def _shown(self, lines: list[tuple[str, str]]) -> list[str]:
        return [f"{label} {text}" for label, text in lines if self.only is None or label == self.only]

    def _redraw(self) -> None:
        log = self.query_one(Log)
        log.clear()
        log.write_lines(self._shown(self.lines))
        self._status()

    def _status(self) -> None:
        if self.server is None:
            self.say("Select a server to see its log.")
            return
        counts = {label: 0 for label in (LOG, STDERR, DITTO)}
        for label, _text in self.lines:
            counts[label] = counts.get(label, 0) + 1
        figures = ", ".join(
            f"{counts[label]:,} {noun}" + ("" if counts[label] == 1 else "s")
            for label, noun in ((LOG, "log message"), (STDERR, "stderr line"), (DITTO, "note"))
        )
        self.say(f"{figures}; showing {_FILTER_NAMES[self.only]} (f changes it; l sets the server's level)")

    def action_filter(self) -> None:
        """Show the next kind of line only: every line, log messages, stderr, ditto's notes."""
        self.only = _FILTERS[(_FILTERS.index(self.only) + 1) % len(_FILTERS)]
        self._redraw()
