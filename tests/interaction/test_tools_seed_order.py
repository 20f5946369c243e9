"""Seed fidelity of ``INTERACTION.ACT.TOOL``: "Execution checks ID, tools permission, registration, and
arguments before execute" — each point of that order, through the runtime, with and without a gate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ToolCall
from ditto_tui.errors import PermissionDeniedError, ToolValidationError, UnknownToolError, ValidationError
from ditto_tui.interaction import Tool, ToolRegistry, create_interaction_worker
from ditto_tui.runtime import WorkerContext, create_ditto
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy

NOT_AN_OBJECT = "not an object"
NOT_JSON = {"x": float("nan")}


class Recorder:
    """A registered tool ``spy`` that records every validate and execute."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.tool = Tool(
            name="spy",
            input_schema={"type": "object"},
            effects=(),  # declared: none (a tool that declares nothing would ask the gate)
            validate_fn=self.validate,
            execute_fn=self.execute,
        )

    def validate(self, args: Mapping[str, Any]) -> None:
        self.seen.append("validate")
        if "bad" in args:
            raise ValueError("bad is refused")

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        self.seen.append("execute")
        return {"status": "success", "content": "ok"}


def _call(*, id: Any = "c-1", name: Any = "spy", arguments: Any = None) -> dict[str, Any]:
    return {"id": id, "name": name, "arguments": {} if arguments is None else arguments}


@pytest.fixture(params=["plain", "gated"])
def gated(request: pytest.FixtureRequest) -> bool:
    """Every order point holds with the registry alone and behind an approval gate."""
    return bool(request.param == "gated")


async def _invoke(recorder: Recorder, granted: list[str], call: Any, tmp_path: Path, gated: bool) -> Any:
    gate = ApprovalGate(policy=ApprovalPolicy()) if gated else None
    worker = create_interaction_worker(tools=[recorder.tool], approval=gate)
    async with create_ditto(sandbox={"tools": granted}, workspace=tmp_path, workers=[worker]) as runtime:
        return await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})


@pytest.mark.parametrize("bad_id", ["", None, 7])
async def test_seed_check_order_call_id_before_permission(tmp_path: Path, gated: bool, bad_id: Any) -> None:
    recorder = Recorder()
    with pytest.raises(ValidationError, match="id") as caught:
        await _invoke(
            recorder, [], _call(id=bad_id, name="ungranted", arguments=NOT_AN_OBJECT), tmp_path, gated
        )
    assert not isinstance(caught.value, PermissionDeniedError)
    assert recorder.seen == []


async def test_seed_check_order_a_missing_call_id_is_refused_first(tmp_path: Path, gated: bool) -> None:
    recorder = Recorder()
    with pytest.raises(ValidationError, match="id"):
        await _invoke(recorder, [], {"name": "ungranted"}, tmp_path, gated)
    assert recorder.seen == []


async def test_seed_check_order_permission_before_registration(tmp_path: Path, gated: bool) -> None:
    recorder = Recorder()
    with pytest.raises(PermissionDeniedError) as caught:
        await _invoke(recorder, ["spy"], _call(name="ghost"), tmp_path, gated)
    assert caught.value.code == "tool_not_allowed"


@pytest.mark.parametrize("arguments", [NOT_AN_OBJECT, NOT_JSON, {"bad": True}])
async def test_seed_check_order_permission_before_arguments(
    tmp_path: Path, gated: bool, arguments: Any
) -> None:
    recorder = Recorder()
    with pytest.raises(PermissionDeniedError) as caught:
        await _invoke(recorder, [], _call(arguments=arguments), tmp_path, gated)
    assert caught.value.code == "tool_not_allowed"
    assert recorder.seen == []


@pytest.mark.parametrize("name", [None, 5, ""])
async def test_seed_check_order_a_name_that_is_no_granted_name_is_a_permission_denial(
    tmp_path: Path, gated: bool, name: Any
) -> None:
    recorder = Recorder()
    with pytest.raises(PermissionDeniedError) as caught:
        await _invoke(recorder, ["spy"], _call(name=name, arguments=NOT_AN_OBJECT), tmp_path, gated)
    assert caught.value.code == "tool_not_allowed"


@pytest.mark.parametrize("arguments", [NOT_AN_OBJECT, NOT_JSON, {"bad": True}])
async def test_seed_check_order_registration_before_arguments(
    tmp_path: Path, gated: bool, arguments: Any
) -> None:
    recorder = Recorder()
    with pytest.raises(UnknownToolError):
        await _invoke(recorder, ["spy", "ghost"], _call(name="ghost", arguments=arguments), tmp_path, gated)
    assert recorder.seen == []


@pytest.mark.parametrize("arguments", [NOT_AN_OBJECT, NOT_JSON])
async def test_seed_check_order_arguments_that_are_no_json_object_are_refused_before_validate(
    tmp_path: Path, gated: bool, arguments: Any
) -> None:
    recorder = Recorder()
    with pytest.raises(ValidationError) as caught:
        await _invoke(recorder, ["spy"], _call(arguments=arguments), tmp_path, gated)
    assert not isinstance(caught.value, PermissionDeniedError | UnknownToolError | ToolValidationError)
    assert recorder.seen == []


async def test_seed_check_order_validate_before_execute(tmp_path: Path, gated: bool) -> None:
    recorder = Recorder()
    with pytest.raises(ToolValidationError, match="bad is refused"):
        await _invoke(recorder, ["spy"], _call(arguments={"bad": True}), tmp_path, gated)
    assert recorder.seen == ["validate"]


async def test_seed_check_order_an_unknown_call_field_is_refused_with_the_arguments(
    tmp_path: Path, gated: bool
) -> None:
    recorder = Recorder()
    with pytest.raises(PermissionDeniedError):
        await _invoke(recorder, [], {**_call(), "extra": 1}, tmp_path, gated)
    with pytest.raises(ValidationError, match="invalid tool call"):
        await _invoke(recorder, ["spy"], {**_call(), "extra": 1}, tmp_path, gated)
    assert recorder.seen == []


async def test_seed_check_order_a_passing_call_validates_then_executes(tmp_path: Path, gated: bool) -> None:
    recorder = Recorder()
    result = await _invoke(recorder, ["spy"], _call(arguments={"a": 1}), tmp_path, gated)
    assert result.status == "success" and result.call_id == "c-1" and result.source == "spy"
    assert recorder.seen == ["validate", "execute"]


async def test_seed_check_order_holds_for_a_tool_call_model(tmp_path: Path) -> None:
    recorder = Recorder()
    registry = ToolRegistry([recorder.tool])
    async with create_ditto(sandbox={"tools": []}, workspace=tmp_path) as runtime:
        with pytest.raises(PermissionDeniedError):
            await registry.call(ToolCall(id="c", name="spy", arguments={"bad": 1}), runtime.create_context())
    assert recorder.seen == []
