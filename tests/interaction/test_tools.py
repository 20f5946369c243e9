"""INTERACTION.ACT.TOOL and the tool registry: check order, results, permissions (S group)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import (
    InvalidResultError,
    PermissionDeniedError,
    ToolValidationError,
    UnknownToolError,
    ValidationError,
)
from ditto_tui.interaction import Tool, ToolRegistry, create_interaction_worker
from ditto_tui.runtime import WorkerContext, create_ditto


class Spy:
    """A tool whose validate and execute record every call."""

    def __init__(self, outcome: Any = None, *, effects: Sequence[str] | None = (), name: str = "spy") -> None:
        self.validated: list[Mapping[str, Any]] = []
        self.executed: list[Mapping[str, Any]] = []
        self.outcome = outcome if outcome is not None else {"status": "success", "content": "ok"}
        self.tool = Tool(
            name=name,
            input_schema={"type": "object"},
            effects=effects,
            validate_fn=self.validate,
            execute_fn=self.execute,
        )

    def validate(self, args: Mapping[str, Any]) -> None:
        self.validated.append(args)
        if "bad" in args:
            raise ValueError("bad is not allowed")

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        self.executed.append(args)
        return self.outcome


def call(name: str = "spy", arguments: Mapping[str, Any] | None = None, id: str = "c-1") -> dict[str, Any]:
    return {"call": {"id": id, "name": name, "arguments": dict(arguments or {})}}


async def invoke(
    tool: Spy | Tool, sandbox: Mapping[str, Any], payload: Any, tmp_path: Path
) -> ExternalResult:
    registered = tool.tool if isinstance(tool, Spy) else tool
    async with create_ditto(
        sandbox=sandbox, workspace=tmp_path, workers=[create_interaction_worker(tools=[registered])]
    ) as runtime:
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", payload)
        return result


def test_register_refuses_bad_and_duplicate_names_and_unregister_is_true_once() -> None:
    registry = ToolRegistry()
    unregister = registry.register(Spy().tool)
    with pytest.raises(ValidationError, match="already registered"):
        registry.register(Spy().tool)
    for bad in ("", "has space", "x" * 65, "dots.no"):
        with pytest.raises(ValidationError):
            registry.register(Spy(name=bad).tool)
    assert unregister() is True
    assert unregister() is False
    assert registry.names() == []


async def test_core_fills_call_id_and_source(tmp_path: Path) -> None:
    spy = Spy()
    result = await invoke(spy, {"tools": ["spy"]}, call(arguments={"a": 1}), tmp_path)
    assert (result.call_id, result.source, result.status, result.content) == ("c-1", "spy", "success", "ok")
    assert spy.executed == [{"a": 1}]


async def test_business_failure_is_a_result(tmp_path: Path) -> None:
    spy = Spy({"status": "failed", "error": {"code": "NOT_FOUND", "message": "No matching record"}})
    result = await invoke(spy, {"tools": ["spy"]}, call(), tmp_path)
    assert result.status == "failed" and result.error is not None and result.error.code == "NOT_FOUND"


async def test_empty_call_id_is_refused_before_anything(tmp_path: Path) -> None:
    spy = Spy()
    with pytest.raises(ValidationError):
        await invoke(spy, {"tools": ["spy"]}, call(id=""), tmp_path)
    assert spy.validated == [] and spy.executed == []


async def test_s01_tool_not_allowed_is_refused_before_validation_and_not_listed(tmp_path: Path) -> None:
    spy = Spy()
    with pytest.raises(PermissionDeniedError) as caught:
        await invoke(spy, {"tools": ["other"]}, call(arguments={"bad": 1}), tmp_path)
    assert caught.value.code == "tool_not_allowed"
    assert spy.validated == [] and spy.executed == []
    registry = ToolRegistry([spy.tool])
    async with create_ditto(sandbox={"tools": ["other"]}, workspace=tmp_path) as runtime:
        context = runtime.create_context()
        assert registry.list(context) == []


class Accessor:
    """A tool that touches what its arguments name, through the sandbox, whatever it declares."""

    def __init__(self, *, effects: Sequence[str] | None, name: str = "access") -> None:
        self.executed = 0
        self.tool = Tool(name=name, input_schema={"type": "object"}, effects=effects, execute_fn=self.execute)

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        self.executed += 1
        sandbox = context.services.sandbox
        match args["do"]:
            case "read":
                return {"status": "success", "content": sandbox.read_text("note.txt")}
            case "write":
                sandbox.write_text("out.txt", "x")
            case "execute":
                await sandbox.run("true", [])
            case "network":
                sandbox.check_network("https://api.search.brave.com")
        return {"status": "success", "content": "done"}


async def _access(
    accessor: Accessor, granted: Mapping[str, Any], do: str, tmp_path: Path
) -> ExternalResult | PermissionDeniedError:
    (tmp_path / "note.txt").write_text("hello", encoding="utf-8")
    sandbox = {"tools": [accessor.tool.name], **granted}
    try:
        return await invoke(accessor.tool, sandbox, call(accessor.tool.name, {"do": do}), tmp_path)
    except PermissionDeniedError as error:
        return error


@pytest.mark.parametrize(
    ("do", "code"),
    [
        ("read", "read_not_allowed"),
        ("write", "write_not_allowed"),
        ("execute", "execute_not_allowed"),
        ("network", "network_not_allowed"),
    ],
)
@pytest.mark.parametrize("declared", [None, (), ("read", "write", "execute", "network")])
async def test_s02_the_sandbox_refuses_at_the_point_of_access_whatever_is_declared(
    tmp_path: Path, do: str, code: str, declared: tuple[str, ...] | None
) -> None:
    accessor = Accessor(effects=declared)
    outcome = await _access(accessor, {}, do, tmp_path)
    assert isinstance(outcome, PermissionDeniedError) and outcome.code == code
    assert accessor.executed == 1  # reached execute: the refusal came at the access, not before


async def test_s02_declared_effects_beyond_the_grant_refuse_nothing(tmp_path: Path) -> None:
    """Revised S-02: ``read`` granted, the tool declares ``read+network``; it is listed and its read runs."""
    accessor = Accessor(effects=("read", "network"))
    outcome = await _access(accessor, {"read": True}, "read", tmp_path)
    assert isinstance(outcome, ExternalResult) and outcome.content == "hello"
    async with create_ditto(sandbox={"tools": ["access"], "read": True}, workspace=tmp_path) as runtime:
        listed = ToolRegistry([accessor.tool]).list(runtime.create_context())
    assert [definition.name for definition in listed] == ["access"]
    assert listed[0].effects == ("read", "network") and listed[0].effects_declared


@pytest.mark.parametrize("declared", [None, (), ("read", "write", "execute", "network")])
async def test_s03_missing_or_known_effects_are_registrable_listed_and_run(
    tmp_path: Path, declared: tuple[str, ...] | None
) -> None:
    accessor = Accessor(effects=declared)
    registry = ToolRegistry([accessor.tool])
    definition = registry.definition("access")
    assert definition is not None
    assert definition.effects == (declared or ()) and definition.effects_declared is (declared is not None)
    async with create_ditto(sandbox={"tools": ["access"]}, workspace=tmp_path) as runtime:
        assert registry.list(runtime.create_context()) == [definition]
    outcome = await _access(accessor, {}, "none", tmp_path)
    assert isinstance(outcome, ExternalResult) and outcome.status == "success"


def test_s03_a_tool_without_an_effects_attribute_is_registrable_as_declaring_none() -> None:
    """The seed's ``missingRecordTool`` declares no effects at all; the policy sees ``effects_declared``."""

    class MissingRecord:
        name = "lookup"
        description = None
        input_schema: Mapping[str, Any] = {"type": "object"}

        def validate(self, args: Mapping[str, Any]) -> None:
            return None

        async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
            return {"status": "failed", "error": {"code": "NOT_FOUND", "message": "No matching record"}}

    registry = ToolRegistry([MissingRecord()])  # type: ignore[list-item]
    definition = registry.definition("lookup")
    assert definition is not None and definition.effects == () and definition.effects_declared is False
    declared_none = ToolRegistry([Spy(effects=()).tool]).definition("spy")
    assert declared_none is not None and declared_none.effects_declared is True


@pytest.mark.parametrize("effects", ["read", [None], [""], [1], 5])
def test_effects_that_are_not_a_list_of_names_are_not_registrable(effects: Any) -> None:
    with pytest.raises(ValidationError, match="effects"):
        ToolRegistry([Spy(effects=effects).tool])


@pytest.mark.parametrize("declared", [("exfiltrate",), ("read", "READ"), ("network", "delete")])
def test_v11_an_unknown_effect_is_refused_at_registration(declared: tuple[str, ...]) -> None:
    """The seed's descriptors are read, write, execute and network; any other one is not registrable."""
    registry = ToolRegistry()
    with pytest.raises(ValidationError, match="unknown effect") as raised:
        registry.register(Spy(effects=declared).tool)
    assert raised.value.code == "unknown_effect"
    assert raised.value.message.endswith("effects are execute, network, read, write")
    assert registry.definition("spy") is None
    with pytest.raises(ValidationError, match="unknown effect"):
        create_interaction_worker(tools=[Spy(effects=declared).tool])


async def test_unregistered_tool_raises_after_the_permission_check(tmp_path: Path) -> None:
    spy = Spy()
    with pytest.raises(UnknownToolError):
        await invoke(spy, {"tools": ["spy", "ghost"]}, call(name="ghost"), tmp_path)


async def test_validate_refusal_raises_and_prevents_execute(tmp_path: Path) -> None:
    spy = Spy()
    with pytest.raises(ToolValidationError, match="bad is not allowed"):
        await invoke(spy, {"tools": ["spy"]}, call(arguments={"bad": True}), tmp_path)
    assert spy.executed == []


@pytest.mark.parametrize(
    "outcome",
    [
        {"status": "success"},
        {"status": "failed"},
        {"status": "done", "content": "x"},
        {"status": "failed", "error": {"code": "E", "message": "line one\nline two"}},
        {"status": "failed", "error": {"code": "E", "message": "see /etc/shadow"}},
        {"status": "failed", "error": {"code": "E", "message": "boom at run (src/app.js:1:2)"}},
        {"status": "success", "content": float("nan")},
        {"status": "success", "content": "x", "callId": "someone-else"},
        {"status": "success", "content": "x", "unknown": 1},
        "just text",
    ],
)
async def test_invalid_results_raise(tmp_path: Path, outcome: Any) -> None:
    with pytest.raises(InvalidResultError):
        await invoke(Spy(outcome), {"tools": ["spy"]}, call(), tmp_path)


async def test_the_input_must_be_exactly_a_call(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        await invoke(Spy(), {"tools": ["spy"]}, {**call(), "extra": 1}, tmp_path)


async def test_the_tool_gets_a_private_copy_of_its_arguments(tmp_path: Path) -> None:
    arguments = {"nested": {"k": [1, 2]}}
    spy = Spy()
    await invoke(spy, {"tools": ["spy"]}, call(arguments=arguments), tmp_path)
    assert spy.executed[0] == arguments and spy.executed[0] is not arguments


def test_worker_exposes_mcp_and_output_only_when_given() -> None:
    assert set(create_interaction_worker().nodes) == {"INTERACTION.ACT.TOOL", "INTERACTION.OBSERVE"}
