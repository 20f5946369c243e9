"""The grants panel: tools approved "always" in this session, each of which can be revoked."""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.widgets.inline import one_line, visible


class Grants(Protocol):
    """Where the grants live: the run's approval gate, through the bridge."""

    def grants(self) -> list[str]:
        """Tools approved "always" in this session."""
        ...

    def revoke(self, tool: str) -> bool:
        """Withdraw the grant of ``tool``."""
        ...


class GrantsModal(Guarded, ModalScreen[None]):
    """Lists the session's "always" grants; ``r`` revokes the highlighted one, its next call asks again."""

    CSS_PATH = "grants.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "revoke", "Revoke"),
        Binding("delete", "revoke", "Revoke", show=False),
        Binding("escape", "close", "Close"),
        Binding("g", "close", "Close", show=False),
    ]

    grant_list = getters.query_one("#grants", OptionList)
    note = getters.query_one("#note", Static)

    def __init__(self, grants: Grants) -> None:
        super().__init__()
        self.source = grants

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Always-approved tools in this session", id="title", markup=False)
            yield OptionList(id="grants")
            yield Static(id="note", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._list()

    def _list(self) -> None:
        tools = self.source.grants()
        self.grant_list.clear_options()
        self.grant_list.add_options(Option(one_line(tool), id=tool) for tool in tools)
        self.grant_list.display = bool(tools)
        if tools:
            self.grant_list.highlighted = 0
            self.note.update(Text("r revokes the highlighted grant: its next call asks again."))
        else:
            self.note.update(
                Text("No tool is approved always. Choose “approve always” in an approval to add one.")
            )

    def action_revoke(self) -> None:
        """Revoke the highlighted grant."""
        index = self.grant_list.highlighted
        if index is None:
            return
        tool = self.grant_list.get_option_at_index(index).id
        if tool is not None and self.source.revoke(tool):
            self.notify(f"Revoked: {visible(tool)}", title="Grant revoked", markup=False)
        self._list()

    def action_close(self) -> None:
        """Close the panel."""
        self.dismiss(None)
