"""The elicitation view: an MCP server asks the person for information, in a form or at a URL.

A form is built from the request's ``requestedSchema`` (defaults filled) and checked before it is sent.
A URL is shown in full with its host, as plain text, and opened in the browser only on ``o``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from ditto_tui.supervise.mcp_requests import ElicitationAnswer, ElicitationRequest
from ditto_tui.tui.screens.decision_modal import SHARED_CSS, DecisionModal
from ditto_tui.tui.text import render_untrusted
from ditto_tui.tui.widgets.inline import one_line
from ditto_tui.tui.widgets.schema_form import SchemaForm

Check = Callable[[Mapping[str, Any]], None]


class ElicitationModal(DecisionModal[ElicitationAnswer]):
    """One elicitation: ``ctrl+s`` accepts (a form only once it passes its schema), ``ctrl+d`` declines,
    ``escape`` cancels; a URL request also opens on ``o``. Keys work after :data:`ARM_SECONDS`."""

    CSS_PATH = [SHARED_CSS, "elicitation.tcss"]
    DECISIONS = frozenset({"accept", "decline", "cancel", "open_url"})
    TOPIC = "Elicitation"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept"),
        Binding("ctrl+d", "decline", "Decline"),
        Binding("escape", "cancel", "Cancel"),
        Binding("o", "open_url", "Open URL"),
    ]

    body_text = getters.query_one("#content", Static)

    def __init__(self, request: ElicitationRequest, check: Check | None = None) -> None:
        super().__init__()
        self.request = request
        self.check = check

    def compose_body(self) -> ComposeResult:
        yield Static(id="content")
        if self.request.mode == "form":
            yield SchemaForm(
                self.request.requested_schema, validate=self.check, submit_on_enter=False, id="form"
            )

    def on_mount(self) -> None:
        request = self.request
        self.heading.update(
            Text.assemble(
                ("MCP server ", "bold"), one_line(request.server, style="bold"), (" asks you", "bold")
            )
        )
        content = render_untrusted(request.message or "(no message)")
        if request.mode == "url":
            content = Text.assemble(
                content,
                ("\n\nURL   ", "dim"),
                render_untrusted(request.url or "", newlines="visible"),
                ("\nHost  ", "dim"),
                one_line(request.host or "(none)", style="bold"),
                ("\n\n", ""),
                "o opens it in your browser; nothing is opened otherwise."
                if request.url_allowed
                else Text("This URL cannot be opened from here (not a plain http(s) URL).", style="bold"),
            )
        self.body_text.update(content)
        self.arm_later()
        self.call_after_refresh(self._focus)

    def _focus(self) -> None:
        forms = self.query(SchemaForm)
        if forms:
            forms.first().focus_first()
        else:
            self.body.focus()

    def offers(self, action: str) -> bool:
        """``o`` only for a URL that may be opened."""
        return action != "open_url" or (self.request.mode == "url" and self.request.url_allowed)

    def action_accept(self) -> None:
        """Send the form (once it passes its checks), or accept the URL request."""
        if self.request.mode == "url":
            self._close(ElicitationAnswer(action="accept"))
            return
        self.query_one("#form", SchemaForm).submit()

    def on_schema_form_submitted(self, event: SchemaForm.Submitted) -> None:
        """The form passed the schema: send it."""
        event.stop()
        self._close(ElicitationAnswer(action="accept", content=event.arguments))

    def action_decline(self) -> None:
        """Refuse to give the information."""
        self._close(ElicitationAnswer(action="decline"))

    def action_cancel(self) -> None:
        """Dismiss without deciding: the server is told it was cancelled."""
        self._close(ElicitationAnswer(action="cancel"))

    def action_open_url(self) -> None:
        """Open the URL in the browser (only a plain http(s) URL, and only on this key)."""
        if self.request.url is not None and self.request.url_allowed:
            self.app.open_url(self.request.url)


__all__ = ["ElicitationModal"]
