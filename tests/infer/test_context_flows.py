"""CONTEXT.UPDATE and the two flows: act → observe → an explicit context update."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.context import (
    ContextStore,
    create_context_worker,
    run_mcp_flow,
    run_tool_call_flow,
)
from ditto_tui.demo.tools import read_text_tool
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import Runtime, WorkerContext, create_ditto
from ditto_tui.signal import CancelSignal


async def _lookup(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {"status": "failed", "error": {"code": "NOT_FOUND", "message": "No matching record"}}


lookup_tool = Tool(name="lookup", input_schema={"type": "object"}, effects=[], execute_fn=_lookup)


class NotesClient:
    """An in-process MCP client: one tool that fails for a missing note."""

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        return {"tools": [{"name": "get_note", "inputSchema": {"type": "object"}}]}

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        if arguments.get("name") != "todo":
            return {"isError": True, "content": [{"type": "text", "text": "no such note"}]}
        return {"content": [{"type": "text", "text": "buy milk"}]}


@pytest.fixture
def store() -> ContextStore:
    return ContextStore(max_items=3)


@pytest.fixture
async def runtime(tmp_path: Path, store: ContextStore) -> AsyncIterator[Runtime]:
    (tmp_path / "README.md").write_text("# Demo\n", encoding="utf-8")
    async with create_ditto(
        sandbox={"tools": ["read_text", "lookup"], "read": True, "mcp": ["notes"]},
        workspace=tmp_path,
        workers=[
            create_interaction_worker(tools=[read_text_tool, lookup_tool], mcp={"notes": NotesClient()}),
            create_context_worker(store=store),
        ],
    ) as running:
        yield running


async def test_a_successful_call_enters_the_working_set(runtime: Runtime, store: ContextStore) -> None:
    call = {"id": "r1", "name": "read_text", "arguments": {"path": "README.md"}}
    flow = await run_tool_call_flow(runtime, "session-1", call)
    assert flow.succeeded and flow.result.content == "# Demo\n"
    assert (
        flow.context is not None and flow.context.accepted == ("observation:r1",) and flow.context.size == 1
    )
    [item] = store.items("session-1")
    assert item.to_wire() == {
        "id": "observation:r1",
        "sourceNode": "INTERACTION.OBSERVE",
        "content": "# Demo\n",
        "metadata": {"callId": "r1", "source": "read_text", "status": "success"},
    }


async def test_a_failure_enters_only_when_asked(runtime: Runtime, store: ContextStore) -> None:
    call = {"id": "r2", "name": "lookup", "arguments": {}}
    skipped = await run_tool_call_flow(runtime, "s", call)
    assert not skipped.succeeded and skipped.context is None and store.items("s") == []
    kept = await run_tool_call_flow(runtime, "s", call, include_failures=True)
    assert kept.context is not None
    [item] = store.items("s")
    assert item.metadata == {"callId": "r2", "source": "lookup", "status": "failed", "errorCode": "NOT_FOUND"}
    assert item.content == "Call 'r2' to 'lookup' ended failed (NOT_FOUND): No matching record"


async def test_the_mcp_flow(runtime: Runtime, store: ContextStore) -> None:
    scope = {"session": "s", "agent": "a"}
    flow = await run_mcp_flow(
        runtime, scope, "notes", {"id": "m1", "name": "get_note", "arguments": {"name": "todo"}}
    )
    assert flow.succeeded and flow.observation.source == "notes:get_note"
    missing = await run_mcp_flow(
        runtime, scope, "notes", {"id": "m2", "name": "get_note", "arguments": {"name": "x"}}
    )
    assert missing.observation.status == "failed" and missing.context is None
    assert [item.id for item in store.items({"agent": "a", "session": "s"})] == ["observation:m1"]


async def test_scopes_are_separate_bounded_and_replace_by_id(runtime: Runtime, store: ContextStore) -> None:
    for index in range(5):
        await runtime.invoke(
            "CONTEXT.UPDATE",
            {"scope": "a", "ingress": [{"id": f"i{index}", "sourceNode": "X.Y", "content": index}]},
        )
    update = await runtime.invoke(
        "CONTEXT.UPDATE", {"scope": "a", "ingress": [{"id": "i3", "sourceNode": "X.Y", "content": "new"}]}
    )
    assert update.size == 3
    assert [(i.id, i.content) for i in store.items("a")] == [("i2", 2), ("i4", 4), ("i3", "new")]
    assert store.items("b") == []


@pytest.mark.parametrize(
    "update",
    [
        {"scope": "", "ingress": []},
        {"scope": "a", "ingress": [{"id": "", "sourceNode": "X", "content": 1}]},
        {"scope": "a", "ingress": [{"id": "i", "content": 1}]},
        {"scope": "a"},
    ],
)
async def test_invalid_updates_raise(runtime: Runtime, update: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        await runtime.invoke("CONTEXT.UPDATE", update)
