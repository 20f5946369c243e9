"""The dialog every decision view shares: one request, its keys armed after a moment, answered once.

The approval, sampling and elicitation views are :class:`DecisionModal` screens: a heading, what they
add above the body, a scrolling body, what they add below it, and the footer (looks in
``decision_modal.tcss``). Each opens with its decision keys greyed out and arms them
:data:`ARM_SECONDS` later, shows only the keys of its current mode, and dismisses once, with its answer or
with ``None`` when the request ended elsewhere or was set aside.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import ClassVar, TypeVar

from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ditto_tui.tui import keys
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.keys import ARM_SECONDS
from ditto_tui.tui.widgets.footer import KeysFooter

AnswerT = TypeVar("AnswerT")

SHARED_CSS = Path(__file__).with_name("decision_modal.tcss")
"""The dialog's looks; a subclass lists it first in its ``CSS_PATH``, then its own file."""


class DecisionModal(Guarded, ModalScreen[AnswerT | None]):
    """A modal that asks for one decision; subclasses fill the dialog and name their keys.

    ``MODES`` maps each mode to the actions it offers (an action of another mode is hidden); with no
    modes every action is offered. ``DECISIONS`` are greyed out until :meth:`arm`. ``TOPIC`` names the
    view in the notice shown when its request ends without an answer from it.
    """

    CSS_PATH: ClassVar[list[str | PurePath]] = [SHARED_CSS]
    BINDINGS: ClassVar[list[BindingType]] = [
        # A modal cuts the app's own bindings off, and q quits on every screen (the app asks first
        # while a decision is pending, so this cannot answer the request).
        Binding("q", "app.quit", "Quit", show=False),
    ]
    MODES: ClassVar[Mapping[str, frozenset[str]]] = {}
    DECISIONS: ClassVar[frozenset[str]] = frozenset()
    TOPIC: ClassVar[str] = "Request"

    heading = getters.query_one("#heading", Static)
    body = getters.query_one("#body", VerticalScroll)

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.mode = "review"
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(id="heading")
            yield from self.compose_above()
            with VerticalScroll(id="body"):
                yield from self.compose_body()
            yield from self.compose_below()
        yield KeysFooter()

    def compose_above(self) -> ComposeResult:
        """What stands between the heading and the body."""
        yield from ()

    def compose_body(self) -> ComposeResult:
        """What the body scrolls."""
        yield from ()

    def compose_below(self) -> ComposeResult:
        """What stands below the body: editors, reasons, hints."""
        yield from ()

    def arm_later(self) -> None:
        """Arm the decision keys :data:`ARM_SECONDS` from now (read now, not when this module loaded)."""
        self.set_timer(keys.ARM_SECONDS, self.arm)

    def arm(self) -> None:
        """Enable the decision keys (subclasses call it :data:`ARM_SECONDS` after the view opens)."""
        self.armed = True
        self.refresh_bindings()

    def offers(self, action: str) -> bool:
        """Whether ``action`` belongs to the current mode (or to none of the modes)."""
        modes = self.MODES
        if action in modes.get(self.mode, ()):
            return True
        return not any(action in actions for actions in modes.values())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys of another mode are hidden; decision keys are greyed out until armed."""
        if not self.offers(action):
            return False
        if action in self.DECISIONS and not self.armed:
            return None
        return True

    def _close(self, answer: AnswerT | None) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(answer)

    def expire(self, why: str) -> None:
        """The request ended without a decision from here (timeout, cancellation): close."""
        if not self._answered:
            self.notify(f"{self.TOPIC} closed: {why}", title=self.TOPIC, severity="warning", markup=False)
            self._close(None)


__all__ = ["ARM_SECONDS", "SHARED_CSS", "DecisionModal"]
