"""The approval view at 80×24 and 160×45: the model's message, the diff of an overwrite first, room for
the arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from ditto_tui.contracts import ToolCall
from ditto_tui.errors import PathError
from ditto_tui.supervise import ApprovalRequest
from ditto_tui.tui.screens.approval import ApprovalModal
from tests.tui.browser_fixtures import screen_text
from tests.tui.run_fixtures import wait_until

T0 = 1_750_000_000.0
SMALL = (80, 24)
LARGE = (160, 45)
PROPOSAL = (
    "The note is out of date, so I will replace it with the [bold]x[/] summary \x1b[31mnow\x1b[0m.\n"
    + "\n".join(f"Step {n}: check the section {n} of the note against the new facts." for n in range(1, 9))
)
NEW_TEXT = "".join(f"new line {n}\n" for n in range(1, 7))


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The countdown reads a fixed wall time."""
    monkeypatch.setattr("ditto_tui.tui.clock.now", lambda: T0 + 4.2)


class Backend:
    """A 30 s timeout, one pending request, and ``notes/todo.md`` as the only file (or none)."""

    timeout = 30.0

    def __init__(self, request: ApprovalRequest, *, exists: bool = True) -> None:
        self.request = request
        self.exists = exists

    def pending(self) -> list[ApprovalRequest]:
        return [self.request]

    def check_arguments(self, request_id: str, arguments: Mapping[str, Any]) -> None:
        return None

    def read_text(self, path: str) -> str:
        if not self.exists:
            raise PathError("file does not exist", code="not_found")
        return "old line 1\nold line 2\nnew line 3\n"

    def write_targets(self, server: str | None, path: str) -> list[str]:
        return [path]

    def withdraw(self, request_id: str) -> bool:
        return True

    def other_run(self, request: ApprovalRequest) -> bool:
        return False


def write_request(proposal: str | None = PROPOSAL) -> ApprovalRequest:
    """An agent's ``write_text`` call that replaces ``notes/todo.md``, proposed by ``proposal``."""
    arguments = {"path": "notes/todo.md", "text": NEW_TEXT}
    return ApprovalRequest(
        request_id="approval-write-1",
        call=ToolCall(id="write-1", name="write_text", arguments=arguments),
        tool="write_text",
        server=None,
        description="Write (create or replace) a UTF-8 text file of the workspace.",
        effects=("write",),
        input_schema={"type": "object"},
        tool_digest="1" * 64,
        arguments_digest="3f2a" + "0" * 60,
        rule="tool:write_* → ask",
        run_id="run-1",
        node_id="agent",
        requested_at=T0 + 2.0,
        proposal=proposal,
    )


class Host(App[None]):
    """Opens one approval view over an empty screen."""

    def __init__(self, view: ApprovalModal) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(self.view)


def host(request: ApprovalRequest | None = None, *, exists: bool = True) -> Host:
    request = request or write_request()
    return Host(ApprovalModal(request, Backend(request, exists=exists)))


async def opened(pilot: Pilot[Any]) -> ApprovalModal:
    app = pilot.app
    assert isinstance(app, Host)
    view = app.view
    await wait_until(pilot, lambda: view.armed)
    await pilot.pause()
    return view


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x45"])
def test_snapshot_approval_view_with_the_models_message_and_an_overwrite(
    snap_compare: Any, size: tuple[int, int]
) -> None:
    async def open_the_view(pilot: Pilot[Any]) -> None:
        await opened(pilot)

    assert snap_compare(host(), terminal_size=size, run_before=open_the_view)


async def test_at_80x24_the_arguments_keep_half_the_screen_and_every_key_shows() -> None:
    app = host()
    async with app.run_test(size=SMALL) as pilot:
        view = await opened(pilot)
        assert view.body.region.height >= SMALL[1] // 2
        text = screen_text(app)
        assert "Times out in 28 s" in text and "Read the arguments" in text
        assert "Cancel call" in text and "esc Later" in text
        await pilot.press("m")
        await pilot.pause()
        assert view.body.region.height >= SMALL[1] // 2


async def test_the_models_message_is_shown_literally_and_folded_until_m() -> None:
    app = host()
    async with app.run_test(size=LARGE) as pilot:
        view = await opened(pilot)
        text = screen_text(app)
        assert "The model said (m shows all of it): The note is out of date" in text
        assert "the [bold]x[/] summary ⟨ESC⟩[31mnow⟨ESC⟩[0m." in text  # never markup, ESC as a marker
        assert "\x1b" not in str(view.proposal_view.visual)
        assert "Step 8" not in text
        await pilot.press("m")
        await pilot.pause()
        text = screen_text(app)
        assert "The model said (m folds it)" in text and "Step 8: check the section 8" in text


async def test_without_a_message_there_is_no_place_for_it_and_no_m() -> None:
    app = host(write_request(proposal=None))
    async with app.run_test(size=SMALL) as pilot:
        view = await opened(pilot)
        assert not view.proposal_box.display and "The model said" not in screen_text(app)
        assert view.check_action("toggle_proposal", ()) is False


async def test_an_overwrite_shows_its_diff_above_the_arguments() -> None:
    app = host()
    async with app.run_test(size=SMALL) as pilot:
        view = await opened(pilot)
        assert view.diff_view.region.y < view.arguments_view.region.y
        assert view.diff_text.startswith("Diff against the current notes/todo.md")


async def test_a_new_file_shows_its_arguments_first() -> None:
    app = host(exists=False)
    async with app.run_test(size=SMALL) as pilot:
        view = await opened(pilot)
        assert view.arguments_view.region.y < view.diff_view.region.y
        assert "does not exist yet: the whole file is new" in view.diff_text


@pytest.mark.parametrize(
    ("server", "rule", "asked"),
    [
        ("demo", None, "no rule allows this tool (an MCP tool asks unless a rule allows it)"),
        (None, None, "the tool requires approval"),
        ("demo", "mcp:demo:* → ask", "rule mcp:demo:* → ask"),
    ],
)
async def test_asked_by_names_why_the_call_asks(server: str | None, rule: str | None, asked: str) -> None:
    request = dataclasses.replace(write_request(None), server=server, rule=rule)
    app = host(request)
    async with app.run_test(size=LARGE) as pilot:
        await opened(pilot)
        assert f"Asked by     {asked}" in screen_text(app)


async def test_v01_a_write_of_a_control_file_is_marked_and_offers_no_grant() -> None:
    arguments = {"path": "graphs/react_agent.py", "text": "import os\n"}
    request = dataclasses.replace(
        write_request(None),
        call=ToolCall(id="write-1", name="write_text", arguments=arguments),
        protected=("graphs/react_agent.py",),
    )
    app = host(request)
    async with app.run_test(size=LARGE) as pilot:
        view = await opened(pilot)
        text = screen_text(app)
        assert "⚠ Control file: writes 'graphs/react_agent.py'" in text
        words = " ".join(text.replace("█", " ").split())
        assert "changes what ditto-tui itself runs" in words and "no mode, rule or grant approves it" in words
        assert view.check_action("approve_always", ()) is False and "Approve always" not in text
        assert view.check_action("approve", ()) is True


async def test_an_ordinary_write_still_offers_a_grant() -> None:
    app = host()
    async with app.run_test(size=LARGE) as pilot:
        view = await opened(pilot)
        assert view.check_action("approve_always", ()) is True and "Control file" not in screen_text(app)
