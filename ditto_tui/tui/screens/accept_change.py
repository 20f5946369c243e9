"""Accepting a changed MCP tool definition: the diff first, then a deliberate key (ADVERSARIAL U-09)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ditto_tui.interaction.mcp.drift import McpToolChange
from ditto_tui.tui import keys
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.text import render_untrusted
from ditto_tui.tui.widgets.diff import unified_diff_text
from ditto_tui.tui.widgets.footer import KeysFooter


class AcceptChangeModal(Guarded, ModalScreen[bool]):
    """Shows how ``server``'s tool changed since it was first seen; dismisses True only on ``y``.

    The key that opens it (``a`` in the browser) does nothing here, and neither do Enter and escape
    (escape keeps refusing the tool), so no stray or repeated key can pin a definition the person has
    not read. ``y`` works only :data:`~ditto_tui.tui.keys.ARM_SECONDS` after the view opens.
    """

    CSS_PATH = "accept_change.tcss"
    AUTO_FOCUS = "#accept-body"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "accept", "Accept the new definition"),
        Binding("n", "keep", "Keep refusing"),
        Binding("escape", "keep", "Keep refusing", show=False),
    ]

    heading = getters.query_one("#accept-heading", Static)

    def __init__(self, server: str, change: McpToolChange) -> None:
        super().__init__()
        self.server = server
        self.change = change
        self.armed = False

    def compose(self) -> ComposeResult:
        with Vertical(id="accept-dialog"):
            yield Static(id="accept-heading")
            yield Static(id="accept-facts")
            with VerticalScroll(id="accept-body"):
                yield Static(id="accept-diff")
            yield Static(id="accept-keys")
        yield KeysFooter()

    def on_mount(self) -> None:
        heading = Text("Accept the changed definition of ", style="bold")
        heading.append_text(render_untrusted(f"{self.server}:{self.change.name}", newlines="visible"))
        heading.append(" ?")
        self.heading.update(heading)
        self.query_one("#accept-facts", Static).update(self._facts())
        self.query_one("#accept-diff", Static).update(unified_diff_text(self.change.diff))
        self.query_one("#accept-keys", Static).update(
            Text("y  accept this definition    n / escape  keep refusing the tool", style="italic")
        )
        self.set_timer(keys.ARM_SECONDS, self.arm)

    def _facts(self) -> Text:
        change = self.change
        facts = Text(
            "The server changed this tool after it was first seen, so calls to it are refused. Accepting "
            "pins the definition below: calls run with it from now on.\n"
        )
        facts.append(f"Changed: {', '.join(change.fields)}\n", style="bold yellow")
        facts.append(f"Before sha256 {change.before_digest[:16]}…   after sha256 {change.after_digest[:16]}…")
        return facts

    def arm(self) -> None:
        """Enable the accept key (done a moment after the view opens, so type-ahead cannot accept)."""
        self.armed = True
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The accept key is greyed out until armed."""
        if action == "accept" and not self.armed:
            return None
        return True

    def action_accept(self) -> None:
        """Accept the definition shown."""
        self.dismiss(True)

    def action_keep(self) -> None:
        """Close without accepting: the tool stays refused."""
        self.dismiss(False)
