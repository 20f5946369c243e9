"""The common part of the MCP browser's panes: the server they browse, a status line, failures as one line,
and the listing in flight that a second "more" must not ask for again."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from ditto_tui.sanitize import public_message_from_exception
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.text import render_untrusted

__all__ = ["McpPane", "problem_line"]


def problem_line(what: str, error: BaseException) -> Text:
    """One line saying what failed and why (the message sanitised, shown as plain text)."""
    line = Text(f"{what} failed: ", style="bold red")
    line.append_text(render_untrusted(public_message_from_exception(error), newlines="visible", style="red"))
    return line


class McpPane(Guarded, Vertical):
    """A pane of the MCP browser that browses one server at a time, loading it when first shown."""

    DEFAULT_CSS = """
    McpPane { height: 1fr; padding: 0 1; }
    McpPane > .mcp-pane-status { height: auto; max-height: 4; margin-bottom: 1; }
    McpPane > OptionList { height: auto; max-height: 12; }
    McpPane > .mcp-pane-buttons { height: auto; }
    McpPane > .mcp-pane-buttons > Button { margin-right: 1; }
    McpPane > .mcp-pane-scroll { height: 1fr; }
    McpPane > .mcp-pane-scroll > Static { height: auto; }
    """

    def __init__(self, source: McpSource, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="mcp-pane")
        self.source = source
        self.server: str | None = None
        self.loaded_for: str | None = None
        self.paging: Worker[None] | None = None
        """The listing in flight: a next page is asked for only once it is done."""

    def status_line(self) -> Static:
        """The pane's status line (the first child)."""
        return self.query_one(".mcp-pane-status", Static)

    def say(self, text: Text | str) -> None:
        """Show ``text`` (fixed wording or already rendered untrusted text) in the status line."""
        self.status_line().update(text if isinstance(text, Text) else Text(text))

    def show_server(self, server: str | None, *, load: bool) -> None:
        """Browse ``server`` (``None``: none selected); list what it offers when ``load`` and not done yet."""
        if server != self.server:
            self.server = server
            self.loaded_for = None
            self.reset()
        if not load or server is None or self.loaded_for == server:
            return
        if not self.source.server(server).callable:
            self.say(Text("The server is not connected (or not granted by the sandbox).", style="yellow"))
            return
        self.loaded_for = server
        self.load(server)

    def paging_busy(self) -> bool:
        """Whether the page last asked for is still on its way (asking again would list it twice)."""
        return self.paging is not None and not self.paging.is_finished

    def stop_paging(self) -> None:
        """Drop a listing in flight: its cursor belongs to a list that is gone."""
        if self.paging is not None:
            self.paging.cancel()
            self.paging = None

    def reset(self) -> None:
        """Forget what was shown for the previous server."""

    def load(self, server: str) -> None:
        """List what ``server`` offers (in a worker)."""

    def offer_changed(self, kind: str, uri: str | None) -> None:
        """The browsed server said ``kind`` changed (``resources``, ``prompts``, or ``resource`` ``uri``)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A request that failed in an unexpected way is one line, like the expected failures."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.say(problem_line(f"The {event.worker.name}", event.worker.error))
