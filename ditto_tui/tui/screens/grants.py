"""The grants panel: what "approve always" wrote (this run, this session, N minutes, K uses, this
project), with what is left of each; one key revokes."""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ditto_tui.supervise.grants import Grant, GrantState, duration
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.widgets.footer import KeysFooter
from ditto_tui.tui.widgets.inline import one_line, visible


class Grants(Protocol):
    """Where the grants live: the session's grant store, through the bridge."""

    def grant_states(self) -> list[GrantState]:
        """The live grants with what is left of them."""
        ...

    def revoke_grant(self, grant_id: str) -> Grant | None:
        """End grant ``grant_id``; the grant ended, if any."""
        ...


class GrantsModal(Guarded, ModalScreen[None]):
    """Lists the session's grants (scope, lifetime, uses and time left, where each came from, whether its
    tool changed); ``r`` revokes the highlighted one, so the calls it covered ask again."""

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
            yield Static("Grants: calls approved without asking", id="title", markup=False)
            yield OptionList(id="grants")
            yield Static(id="note", markup=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        self._list()
        self.set_interval(1.0, self._refresh_left)

    def _refresh_left(self) -> None:
        if self.source.grant_states() != self._shown:
            self._list()

    def _list(self) -> None:
        states = self.source.grant_states()
        self._shown = states
        highlighted = self.grant_list.highlighted
        self.grant_list.clear_options()
        self.grant_list.add_options(Option(_grant_text(state), id=state.grant.id) for state in states)
        self.grant_list.display = bool(states)
        if states:
            self.grant_list.highlighted = min(highlighted or 0, len(states) - 1)
            self.note.update(Text("r revokes the highlighted grant: the calls it covered ask again."))
        else:
            self.note.update(Text("No grants. Choose “approve always” (s) in an approval to write one."))

    def action_revoke(self) -> None:
        """Revoke the highlighted grant."""
        index = self.grant_list.highlighted
        if index is None:
            return
        grant_id = self.grant_list.get_option_at_index(index).id
        revoked = self.source.revoke_grant(grant_id) if grant_id is not None else None
        if revoked is not None:
            self.notify(
                f"Revoked {revoked.id}: {visible(revoked.describe())}", title="Grant revoked", markup=False
            )
        self._list()

    def action_close(self) -> None:
        """Close the panel."""
        self.dismiss(None)


_LIFETIME_WORDS = {"run": "this run", "session": "this session", "project": "this project"}


def _grant_text(state: GrantState) -> Text:
    """Two lines: what the grant covers; its lifetime, what is left, where it came from."""
    grant = state.grant
    left = [_LIFETIME_WORDS.get(grant.lifetime, grant.lifetime)]
    if state.uses_left is not None:
        left.append(f"{state.uses_left} use{'s' if state.uses_left != 1 else ''} left")
    if state.seconds_left is not None:
        left.append(f"{duration(state.seconds_left)} left")
    if grant.origin:
        left.append(f"from {grant.origin}")
    head = Text.assemble((grant.id, "bold"), "  ", one_line(grant.describe()))
    if state.stale:
        head.append("  the tool's definition changed: no longer applies", style="bold red")
    return Text.assemble(head, "\n  ", one_line(" · ".join(left)), style="")
