"""The detail pane's text view: wrapped to the width it has, also when a scroll bar comes or goes."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from ditto_tui.tui.widgets.detail import TextView
from tests.tui.run_fixtures import wait_until

WORDS = "Select an event in the timeline or a node in the graph to see all of it here. "


class Pane(App[None]):
    CSS = "TextView { height: 6; width: 40; }"

    def compose(self) -> ComposeResult:
        yield TextView(id="view")


async def test_short_text_after_long_text_is_wrapped_to_the_width_without_the_scroll_bar() -> None:
    """A long text brings the scroll bar; the short text shown next is wrapped to the whole width once the
    bar goes (the pane keeps its size, so no resize tells the view)."""
    app = Pane()
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(TextView)
        view.show(Text(WORDS * 20))
        await wait_until(pilot, lambda: view.show_vertical_scrollbar)
        view.show(Text(WORDS))
        await wait_until(pilot, lambda: not view.show_vertical_scrollbar)
        width = view.scrollable_content_region.width
        console = app.console
        wrapped = console.render_lines(Text(WORDS), console.options.update_width(width), pad=False)
        expected = ["".join(segment.text for segment in line).rstrip() for line in wrapped]

        def shown() -> list[str]:
            return [view.render_line(y).text.rstrip() for y in range(len(expected))]

        await wait_until(pilot, lambda: shown() == expected)
        assert width == 40 and len(expected) == 2
