"""The Tools screen reads the live session: an "always" grant given or revoked after the screen was built
shows as it stands whenever the screen is shown."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.tui.screens.tools import ToolRow, ToolsScreen
from tests.tui.run_fixtures import (
    SIZE,
    app_for,
    approval_view,
    approve_always,
    keys_armed,
    outputs,
    wait_until,
    workspace,
)


def _always(app: object) -> dict[str, bool]:
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, ToolsScreen)
    return {row.definition.name: row.always for row in screen.rows if isinstance(row, ToolRow)}


async def test_the_tools_screen_shows_always_grants_of_the_live_session(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    app = app_for(root, "tests/data/graphs/two_writes.py")
    async with app.run_test(size=SIZE) as pilot:
        await approval_view(pilot)
        await approve_always(pilot)
        await outputs(pilot)
        await keys_armed(pilot)
        await pilot.press("f4")
        await wait_until(pilot, lambda: isinstance(app.screen, ToolsScreen))
        assert _always(app)["write_text"] is True
        assert app.bridge.revoke("write_text")
        await pilot.press("f2")
        await pilot.press("f4")
        await wait_until(
            pilot, lambda: isinstance(app.screen, ToolsScreen) and not _always(app)["write_text"]
        )
