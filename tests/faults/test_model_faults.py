"""Fault injection, model endpoint: a loopback server that closes the socket in the middle of its answer.

The provider raises a typed ``INFER_CONNECT`` error without retrying; in an agent run the tool the
model asked for earlier ran exactly once, the run fails with that one-line error, and the app stays up.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.infer import InferError, InferMessage, react_loop
from ditto_tui.infer.openai import create_openai_compatible_provider
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import WorkerContext
from tests.faults.endpoint import Drop, dropping_endpoint
from tests.faults.fault_fixtures import (
    SIZE,
    app_for,
    finished_run,
    make_workspace,
    screen_text,
    settings,
    still_answers,
    wait_until,
)
from tests.infer.chat_server import completion, tool_call

KEY = "sk-proj-" + "K" * 40


async def test_a_connection_dropped_mid_response_is_a_typed_error_without_a_retry() -> None:
    async with dropping_endpoint(Drop(), completion("never sent")) as endpoint:
        provider = create_openai_compatible_provider(
            base_url=endpoint.base_url, model="m", api_key=KEY, timeout_s=5
        )
        with pytest.raises(InferError) as caught:
            await provider.sample([InferMessage(role="user", content="Hi")], [])
    error = caught.value
    assert error.code == "INFER_CONNECT" and error.retryable
    assert "cannot reach the model endpoint" in error.message and KEY not in error.message
    assert "\n" not in error.message
    assert len(endpoint.requests) == 1  # no hidden retry of the request


def _counting_tool(runs: list[dict[str, Any]]) -> Tool:
    async def execute(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        runs.append(dict(args))
        return {"status": "success", "content": "counted"}

    return Tool(
        name="count",
        description="Count one execution.",
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "additionalProperties": False,
        },
        effects=[],
        execute_fn=execute,
    )


async def test_the_ui_stays_up_when_the_model_endpoint_drops_and_nothing_runs_twice(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    runs: list[dict[str, Any]] = []
    first = completion("Counting.", [tool_call("call_1", "count", '{"n": 1}')])
    async with dropping_endpoint(first, Drop()) as endpoint:
        config = settings(
            {
                "sandbox": {"tools": ["count"]},
                "infer": {
                    "provider": "openai",
                    "baseUrl": endpoint.base_url,
                    "model": "m",
                    "timeoutSeconds": 5,
                },
            }
        )
        program = Program(
            name="dropping-model",
            description="An agent whose model endpoint drops its second answer.",
            plan=react_loop(tools=["count"], max_steps=4),
            initial={"prompt": "Count once.", "deliveryId": "dropping:1"},
            tools=(_counting_tool(runs),),
        )
        app = app_for(root, config, program)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            worker = await finished_run(pilot)
            assert worker.error is not None
            await wait_until(pilot, lambda: "Run failed" in screen_text(app))
            text = screen_text(app)
            # The toast says why; read from it, since where its text wraps depends on the message's length.
            toasts = " ".join(note.message for note in app._notifications)
            assert "INFER_CONNECT" in toasts or "cannot reach the model endpoint" in toasts
            assert KEY not in text and KEY not in toasts
            await still_answers(pilot)
    assert runs == [{"n": 1}]
    assert len(endpoint.requests) == 2
