"""``ditto-tui serve`` in a real browser: Debian's Chromium, driven by Playwright (no browser download).

The test opens the printed address as a person would, sees the Run screen, starts the agent's task with
Enter, approves its write with the keyboard and sees the run finish and the note written. What the page
shows is read from the websocket frames the browser received (xterm.js draws on a canvas); screenshots
of each step are kept in ``test-artifacts/browser/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.runtime.events import ApprovalResolved
from ditto_tui.supervise import read_journal
from tests.journal.journal_fixtures import journals
from tests.serve.test_serve_door import start_serve, stop_serve

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
NOTE = Path(".ditto/notes/summary.md")
WAIT_SECONDS = 60.0


def chromium() -> str:
    """Debian's Chromium (``make test`` installs it when it is missing)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "Chromium is not installed: `make test` installs Debian's chromium (apt-get install chromium)"
        )
    return found


class Screen:
    """What the browser's websocket brought to the page, as text without escape sequences."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def add(self, payload: str | bytes) -> None:
        self.frames.append(payload if isinstance(payload, bytes) else payload.encode())

    def text(self, since: int = 0) -> str:
        data = b"".join(self.frames[since:]).decode("utf-8", "replace")
        return re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07]*\x07", "", data)


async def until(check: Callable[[], bool], what: str, every: Callable[[], object] | None = None) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        if every is not None:
            outcome = every()
            if asyncio.iscoroutine(outcome):
                await outcome
        await asyncio.sleep(0.25)


@contextlib.asynccontextmanager
async def tab(url: str, screen: Screen) -> AsyncIterator[Any]:
    """A 1280×800 page of Debian's Chromium on ``url``, its websocket frames going to ``screen``."""
    from playwright.async_api import async_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("websocket", lambda socket: socket.on("framereceived", screen.add))
            await page.goto(url)
            yield page
        finally:
            await browser.close()


async def approve_in_the_browser(url: str, workspace: Path) -> Screen:
    screen = Screen()
    async with tab(url, screen) as page:
        assert "token" not in page.url  # the token left the address bar for a cookie
        await until(lambda: "Enter runs the graph" in screen.text(), "the Run screen")
        await page.screenshot(path=ARTIFACTS / "1-run-screen.png")
        keys = page.locator(".xterm-helper-textarea")  # where xterm.js takes the keyboard
        await keys.focus()
        await page.keyboard.press("Enter")
        await until(lambda: "Approve write_text" in screen.text(), "the approval view")
        await page.screenshot(path=ARTIFACTS / "2-approval.png")
        assert not (workspace / NOTE).exists()  # nothing is written before the person says so
        asked = len(screen.frames)
        # The view ignores keys for a moment after it opens (U-09): press a until it takes.
        await until(
            lambda: "Approved" in screen.text(asked) or (workspace / NOTE).exists(),
            "the approval to be taken",
            every=lambda: page.keyboard.press("a"),
        )
        await until(lambda: " finished " in screen.text(asked), "the run to finish")
        await page.screenshot(path=ARTIFACTS / "3-finished.png")
    return screen


def test_in_a_browser_the_run_screen_approves_a_call_with_the_keyboard_and_the_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "README.md").write_text("# A project\n\nIt keeps notes.\n", encoding="utf-8")
    served = start_serve(workspace, tmp_path / "home")
    try:
        screen = asyncio.run(approve_in_the_browser(served.url, workspace))
    finally:
        stop_serve(served)
    assert (workspace / NOTE).is_file()
    assert "\u2713" in screen.text() and " finished " in screen.text()
    for shot in ("1-run-screen.png", "2-approval.png", "3-finished.png"):
        assert (ARTIFACTS / shot).stat().st_size > 10_000
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))  # serve's home: the tab's journal
    (journal,) = journals(workspace)
    events = read_journal(journal).events
    (resolved,) = [e for e in events if isinstance(e, ApprovalResolved) and e.tool == "write_text"]
    assert (resolved.decision, resolved.decided_by, resolved.via) == ("approve", "human", "browser")
