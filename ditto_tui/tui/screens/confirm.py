"""A yes/no question in a modal: ``y`` confirms, ``n`` or ``escape`` declines."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.widgets.footer import KeysFooter


class ConfirmModal(Guarded, ModalScreen[bool]):
    """Ask ``question``; dismisses with True only on the explicit confirm key."""

    CSS_PATH = "confirm.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No", show=False),
    ]

    def __init__(self, title: str, question: str) -> None:
        super().__init__()
        self.title_text = title
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.title_text, id="title", markup=False)
            yield Static(self.question, id="question", markup=False)
            yield Static("y  yes    n  no", id="keys", markup=False)
        yield KeysFooter()

    def action_answer(self, answer: bool) -> None:
        """Close with ``answer``."""
        self.dismiss(answer)
