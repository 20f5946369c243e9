"""The keys line is rebuilt when the keys it shows change, and only then."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from ditto_tui.tui.widgets.footer import KeysFooter
from tests.tui.run_fixtures import wait_until

SHOWN = {"x": True, "y": False}
"""The footer's keys once ``x`` is disabled: key and whether it is shown disabled."""


def shown(footer: KeysFooter) -> dict[str, bool]:
    return {key.key: key.has_class("-disabled") for key in footer.query(FooterKey)}


class Keys(App[None]):
    BINDINGS = [Binding("x", "act", "Act"), Binding("y", "other", "Other")]

    ENABLE_COMMAND_PALETTE = False

    def __init__(self) -> None:
        super().__init__()
        self.can_act = True

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "act" and not self.can_act else True

    def action_act(self) -> None: ...

    def action_other(self) -> None: ...


async def test_a_refresh_that_changes_no_key_keeps_the_footer_and_a_changed_key_rebuilds_it() -> None:
    app = Keys()
    async with app.run_test(size=(60, 6)) as pilot:
        footer = app.query_one(KeysFooter)
        await wait_until(pilot, lambda: len(footer.children) == 2)
        first = list(footer.children)
        for _ in range(5):
            app.refresh_bindings()
            await pilot.pause()
        assert list(footer.children) == first, "the same keys: the same key widgets"
        app.can_act = False
        app.refresh_bindings()
        await wait_until(pilot, lambda: shown(footer) == SHOWN)
        assert not set(first) & set(footer.children)
