"""The Replay screen is a run view over a journal: no bridge, no runtime, and no live-only keys."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.dom import DOMNode

from ditto_tui.home import ensure_dir, logs_dir, runs_dir, state_dir
from ditto_tui.supervise import read_journal
from ditto_tui.tui.bridge import RunBridge
from ditto_tui.tui.replay import ReplayApp
from ditto_tui.tui.screens.replay import ReplayScreen

DEMO = Path(__file__).resolve().parents[1] / "data" / "journal" / "react_agent.jsonl"
SIZE = (120, 36)
LIVE_ONLY = {"c": "cancel_run", "x": "cancel_call", "g": "grants"}


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its content."""
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def _nodes(app: App[Any]) -> Iterator[DOMNode]:
    """The app, every screen on its stack and every widget of each."""
    yield app
    for screen in app.screen_stack:
        yield from screen.walk_children(with_self=True)


def _shown(screen: ReplayScreen) -> tuple[object, ...]:
    """What the replay shows: its step, caption, detail and timeline length."""
    return (screen.position, screen.sub_title, screen.detail.text.plain, len(screen.model.entries))


async def test_a_replay_builds_no_bridge_and_no_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorded = ensure_dir(runs_dir(workspace)) / DEMO.name
    shutil.copy(DEMO, recorded)
    before = _files(state_dir())
    opened: list[object] = []
    for module in ("ditto_tui.session", "ditto_tui.headless", "ditto_tui.tui.bridge"):
        monkeypatch.setattr(f"{module}.open_runtime", lambda *args, **_: opened.append(args), raising=False)
    app = ReplayApp(read_journal(recorded))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("s", "n", "n", "b", "v", "f", "e")
        await app.workers.wait_for_complete()
        assert isinstance(app.screen, ReplayScreen) and app.screen.position == len(app.screen.events)
        holders = [node for node in _nodes(app) if any(isinstance(v, RunBridge) for v in vars(node).values())]
        assert holders == []
    assert opened == []
    # No MCP server started (its stderr log), no journal written, nothing logged: the state is untouched.
    assert _files(state_dir()) == before
    assert not logs_dir(workspace).exists()


async def test_the_live_only_keys_do_not_exist_in_a_replay() -> None:
    app = ReplayApp(read_journal(DEMO))
    notes: list[str] = []
    notify = app.notify

    def noted(message: str, **kwargs: Any) -> None:
        notes.append(message)
        notify(message, **kwargs)

    app.notify = noted  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        shown, stack = _shown(screen), list(app.screen_stack)
        assert not set(LIVE_ONLY) & set(screen.active_bindings)
        assert not any(hasattr(screen, f"action_{action}") for action in LIVE_ONLY.values())
        await pilot.press(*LIVE_ONLY)
        await pilot.pause()
        assert app.screen_stack == stack and _shown(screen) == shown
        assert notes == []
