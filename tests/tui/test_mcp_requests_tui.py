"""An MCP server's sampling and elicitation requests answered in the TUI (the real everything server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input

from ditto_tui.config import parse_config_text
from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.supervise.mcp_requests import SamplingRequest
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.elicitation import ElicitationModal
from ditto_tui.tui.screens.sampling import SamplingModal
from tests.mcp.mcp_helpers import node_server, sandbox
from tests.tui.run_fixtures import SIZE, keys_armed, screen_text, wait_until

HOSTILE = "[bold]x \x1b]52;c;SGVsbG8=\x07 \u202eevil\u202c"


def app_for(root: Path, *, model: bool = True) -> DittoApp:
    """The app with the everything server, and a scripted model unless ``model`` is False."""
    command = json.dumps(node_server("mcp-server-everything")["command"])
    text = (
        "sandbox:\n  mcp: [everything]\n"
        f"mcp:\n  servers:\n    everything:\n      command: {command}\n      args: [stdio]\n"
    )
    if model:
        text += "infer:\n  script: model.yaml\n"
    (root / "model.yaml").write_text("turns:\n  - content: Paris is the capital.\n", encoding="utf-8")
    settings = parse_config_text(text, {}, name="ditto.yaml", workspace=root)
    return DittoApp(RunSpec(config=settings, workspace=root, program=None, journal=False))


async def call(pilot: Pilot[Any], root: Path, name: str, **arguments: Any) -> asyncio.Task[ExternalResult]:
    """Start a call of the server's tool ``name`` once the server lists it."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await app.bridge.opened()
    registry = app.bridge.mcp
    assert registry is not None
    box = sandbox(root, "everything")
    listed: list[str] = []

    async def list_tools() -> None:
        listed[:] = [c.name for c in await registry.discover("everything", box)]

    await wait_until(pilot, lambda: registry.status("everything") is not None, timeout=20)
    for _ in range(100):
        await list_tools()
        if name in listed:
            break
        await pilot.pause(0.1)
    tool_call = ToolCall(id=f"tui-{name}", name=name, arguments=arguments)
    return asyncio.ensure_future(registry.invoke_unguarded("everything", tool_call, box))


def text_of(result: ExternalResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True)["content"])


async def open_view(pilot: Pilot[Any], kind: type[Any]) -> Any:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, kind), timeout=20)
    view: Any = app.screen
    await wait_until(pilot, lambda: view.armed)
    await keys_armed(pilot)
    return view


async def test_sampling_is_approved_then_its_answer_is_approved(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = await call(pilot, tmp_path, "trigger-sampling-request", prompt="capital of France?")
        view = await open_view(pilot, SamplingModal)
        assert not view.reviewing and "capital of France?" in screen_text(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, SamplingModal) and app.screen is not view)
        review = await open_view(pilot, SamplingModal)
        assert review.reviewing and "Paris is the capital." in screen_text(app)
        await pilot.press("a")
        result = await asyncio.wait_for(task, 20)
    assert "Paris is the capital." in text_of(result)


async def test_m09_hostile_sampling_text_is_shown_literally(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = await call(pilot, tmp_path, "trigger-sampling-request", prompt=HOSTILE)
        await open_view(pilot, SamplingModal)
        shown = screen_text(app)
        assert "[bold]x" in shown
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "52;c;SGVsbG8=" in shown
        await pilot.press("r")
        result = await asyncio.wait_for(task, 20)
    assert "Paris" not in text_of(result)


async def test_an_elicitation_form_is_filled_and_accepted(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = await call(pilot, tmp_path, "trigger-elicitation-request")
        view = await open_view(pilot, ElicitationModal)
        assert view.request.mode == "form"
        assert "Please provide inputs" in screen_text(app)
        await wait_until(pilot, lambda: isinstance(app.focused, Input))  # the form's first field
        field = app.focused
        assert isinstance(field, Input)
        await pilot.press(*"Ada")
        await wait_until(pilot, lambda: field.value == "Ada")  # typed, then sent
        await pilot.press("ctrl+s")
        result = await asyncio.wait_for(task, 20)
    text = text_of(result)
    assert "- Name: Ada" in text and "Favorite Integer: 42" in text, text


async def test_with_no_model_the_person_writes_the_reply_and_the_server_gets_it(tmp_path: Path) -> None:
    app = app_for(tmp_path, model=False)
    async with app.run_test(size=SIZE) as pilot:
        task = await call(pilot, tmp_path, "trigger-sampling-request", prompt="capital of France?")
        view: SamplingModal = await open_view(pilot, SamplingModal)
        await wait_until(pilot, lambda: "Write the reply…" in screen_text(app))  # the footer, once armed
        shown = screen_text(app)
        assert "No model is configured: answer MCP server everything yourself?" in shown
        assert "w  write the assistant's reply yourself" in shown and "capital of France?" in shown
        assert "Approve" not in shown
        await pilot.press("a", "e")  # nothing to approve or edit for a model that is not there
        await pilot.pause()
        assert app.screen is view and view.mode == "review"
        await pilot.press("w")
        await pilot.press("ctrl+s")
        assert app.screen is view and "Write the reply first" in screen_text(app)
        await pilot.press(*"Paris", "space", *"by", "space", *"hand")
        await pilot.press("ctrl+s")
        result = await asyncio.wait_for(task, 20)
    (content,) = json.loads(text_of(result))
    assert '"text": "Paris by hand"' in content["text"] and '"model": "person"' in content["text"]


async def test_an_edit_the_core_refuses_stays_in_the_editor_with_the_reason(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        task = await call(pilot, tmp_path, "trigger-sampling-request", prompt="capital?", maxTokens=42)
        view: SamplingModal = await open_view(pilot, SamplingModal)
        await pilot.press("e")
        edited = json.loads(view.editor.text)
        view.editor.load_text(json.dumps({**edited, "maxTokens": 1000}))
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is view and view.mode == "edit"
        assert "maxTokens may be lowered, not raised above the server's 42" in screen_text(app)
        await pilot.press("escape", "r")
        result = await asyncio.wait_for(task, 20)
    assert "rejected" in json.dumps(result.model_dump(mode="json")) and "Paris" not in text_of(result)


class Host(App[None]):
    """Shows one view, nothing else."""

    def __init__(self, view: SamplingModal) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(self.view)


def test_snapshot_sampling_with_no_model_offers_to_write_and_shows_hostile_text_literally(
    snap_compare: Any,
) -> None:
    message = {"role": "user", "content": {"type": "text", "text": HOSTILE}}
    request = SamplingRequest(
        request_id="mcp-sampling-1",
        server="every[b]thing",
        messages=(message,),
        system_prompt="You are [i]helpful[/i].",
        model_preferences=None,
        max_tokens=100,
        params={"messages": [message], "systemPrompt": "You are [i]helpful[/i].", "maxTokens": 100},
        requested_at=0.0,
        has_model=False,
    )
    view = SamplingModal(request)

    async def armed(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: view.armed)

    assert snap_compare(Host(view), terminal_size=SIZE, run_before=armed)
