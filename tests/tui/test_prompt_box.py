"""The task box on its own: an empty Enter runs the graph's task when it has one, else says what to do."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult

from ditto_tui.tui.widgets.prompt_box import PromptBox, PromptHistory
from tests.tui.browser_fixtures import screen_text
from tests.tui.run_fixtures import wait_until


class BoxApp(App[None]):
    def __init__(self, workspace: Path, default: str | None) -> None:
        super().__init__()
        self.workspace = workspace
        self.default = default
        self.submitted: list[str] = []

    def compose(self) -> ComposeResult:
        yield PromptBox(PromptHistory(self.workspace), id="prompt")

    def on_mount(self) -> None:
        self.query_one(PromptBox).ask(
            "New task", "Enter starts a new run with this task", default=self.default
        )

    def on_prompt_box_submitted(self, event: PromptBox.Submitted) -> None:
        self.submitted.append(event.text)


async def test_an_empty_enter_without_a_default_says_to_type_the_task(tmp_path: Path) -> None:
    app = BoxApp(tmp_path, None)
    async with app.run_test(size=(100, 20), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Type the task first" in screen_text(app))
        assert app.submitted == []
        await pilot.press(*"hello", "enter")
        await wait_until(pilot, lambda: bool(app.submitted))
    assert app.submitted == ["hello"]


async def test_an_empty_enter_with_a_default_runs_the_graphs_task(tmp_path: Path) -> None:
    app = BoxApp(tmp_path, "the graph's task")
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.submitted))
    assert app.submitted == ["the graph's task"]
