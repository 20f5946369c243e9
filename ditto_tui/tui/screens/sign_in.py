"""The sign-in view: an MCP server needs the person to sign in at its authorization server.

The address is shown in full as plain text with its host made plain; ``o`` opens it in the system
browser, nothing opens it otherwise. The view closes by itself once the browser comes back to ditto-tui.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from ditto_tui.supervise.sign_in import SignInAnswer, SignInRequest
from ditto_tui.tui.screens.decision_modal import SHARED_CSS, DecisionModal
from ditto_tui.tui.text import render_untrusted
from ditto_tui.tui.widgets.inline import one_line, visible

OpenBrowser = Callable[[str], object]


class SignInModal(DecisionModal[SignInAnswer]):
    """One sign-in: ``o`` opens the address in the browser, ``c`` or ``escape`` cancels the sign-in.

    Keys work after :data:`ARM_SECONDS`. ``open_browser`` is called in a thread (it may block).
    """

    CSS_PATH = [SHARED_CSS, "sign_in.tcss"]
    DECISIONS = frozenset({"open_browser", "cancel"})
    TOPIC = "Sign-in"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_browser", "Open in browser"),
        Binding("c", "cancel", "Cancel sign-in"),
        Binding("escape", "cancel", "Cancel", show=False),
    ]

    content = getters.query_one("#content", Static)

    def __init__(self, request: SignInRequest, open_browser: OpenBrowser = webbrowser.open) -> None:
        super().__init__()
        self.request = request
        self.open_browser = open_browser

    def compose_body(self) -> ComposeResult:
        yield Static(id="content")

    def on_mount(self) -> None:
        request = self.request
        self.heading.update(
            Text.assemble(
                ("MCP server ", "bold"),
                one_line(request.server, style="bold"),
                (" needs you to sign in", "bold"),
            )
        )
        self.content.update(
            Text.assemble(
                ("Host  ", "dim"),
                one_line(request.host or "(none)", style="bold"),
                ("\nURL   ", "dim"),
                render_untrusted(request.url, newlines="visible"),
                ("\n\n", ""),
                "o opens it in your browser; once you have signed in there, the server connects. "
                "c cancels the sign-in."
                if request.url_allowed
                else Text(
                    "This address cannot be opened from here (not a plain http(s) URL): c cancels.",
                    style="bold",
                ),
            )
        )
        self.arm_later()
        self.call_after_refresh(self.body.focus)

    def offers(self, action: str) -> bool:
        """``o`` only for an address that may be opened."""
        return action != "open_browser" or self.request.url_allowed

    def action_open_browser(self) -> None:
        """Open the address in the system browser (only a plain http(s) URL, and only on this key)."""
        if self.request.url_allowed:
            opener = partial(self.open_browser, self.request.url)
            self.run_worker(opener, thread=True, group="browser", exit_on_error=False)
            self.notify("Opening your browser…", title=self.TOPIC, markup=False)

    def action_cancel(self) -> None:
        """Stop waiting for the browser: the sign-in fails and the server is not connected."""
        self._close(SignInAnswer())

    def expire(self, why: str) -> None:
        """Close once the request ended: signed in when the browser came back, else say why."""
        if self._answered:
            return
        if self.request.progress.outcome == "signed_in":
            self.notify(f"Signed in to {visible(self.request.server)}", title=self.TOPIC, markup=False)
            self._close(None)
            return
        super().expire(why)


__all__ = ["SignInModal"]
