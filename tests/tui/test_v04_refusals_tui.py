"""A server that floods the client with requests past its bounds (V-04): the person sees the count."""

from __future__ import annotations

import json
from pathlib import Path

from ditto_tui.config import parse_config_text
from ditto_tui.contracts import ToolCall
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.bridge import told_refusals
from tests.mcp.mcp_helpers import python_server, sandbox
from tests.tui.run_fixtures import SIZE, wait_until


def test_v04_the_person_is_told_of_the_first_refusal_and_of_every_tenfold_count() -> None:
    told = [count for count in range(1, 2_001) if told_refusals(count)]
    assert told == [1, 10, 100, 1_000]


async def test_v04_a_flooding_server_s_refusals_are_counted_on_screen(tmp_path: Path) -> None:
    entry = python_server("asking.py")
    text = (
        "sandbox:\n  mcp: [asking]\n"
        f"mcp:\n  servers:\n    asking:\n      command: {json.dumps(entry['command'])}\n"
        f"      args: {json.dumps(entry['args'])}\n"
    )
    settings = parse_config_text(text, {}, name="ditto.yaml", workspace=tmp_path)
    app = DittoApp(RunSpec(config=settings, workspace=tmp_path, program=None, journal=False))
    async with app.run_test(size=SIZE) as pilot:
        await app.bridge.opened()
        registry = app.bridge.mcp
        assert registry is not None
        await wait_until(pilot, lambda: registry.status("asking") is not None)
        flood = ToolCall(id="flood", name="flood", arguments={"count": 12, "size": 300 * 1024})
        result = await registry.invoke_unguarded("asking", flood, sandbox(tmp_path, "asking"))
        assert result.status == "success"
        await wait_until(pilot, lambda: len(app._notifications) == 2)
        first, tenth = (str(note.message) for note in app._notifications)
        assert first.startswith("MCP server asking: 1 request refused by its bounds")
        assert tenth.startswith("MCP server asking: 10 requests refused by its bounds")
