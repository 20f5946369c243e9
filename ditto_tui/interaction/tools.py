"""Registered tools and the tool registry behind ``INTERACTION.ACT.TOOL``."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pydantic

from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.digest import arguments_digest, canonical_json, tool_digest
from ditto_tui.errors import (
    ApprovalError,
    PathError,
    ToolValidationError,
    UnknownToolError,
    ValidationError,
)
from ditto_tui.interaction.results import parse_outcome, validation_summary
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sandbox.permissions import EFFECTS
from ditto_tui.sanitize import sanitize_public_message

if TYPE_CHECKING:
    from ditto_tui.interaction.gate import CallGate

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@runtime_checkable
class RegisteredTool(Protocol):
    """The application's tool port: a described capability with its own validation and execution."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def input_schema(self) -> Mapping[str, Any]: ...
    @property
    def effects(self) -> Sequence[str] | None:
        """What the tool says it does (read/write/execute/network); optional and descriptive only."""
        ...

    @property
    def requires_approval(self) -> bool: ...

    def validate(self, args: Mapping[str, Any]) -> None:
        """Raise to refuse ``args``; called before every execution."""

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        """Perform one action; return the result fields without ``call_id``/``source``."""


ValidateFunction = Callable[[Mapping[str, Any]], None]
ExecuteFunction = Callable[[Mapping[str, Any], WorkerContext], Awaitable[Any]]


def _accept_any(_args: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A ready :class:`RegisteredTool` built from plain functions.

    ``effects`` is optional and descriptive, as in the seed: ``None`` declares nothing, an empty list
    says the tool has no effects, and each listed one is read, write, execute or network. The sandbox
    refuses at the point of access (a read, a write, a spawn, a network origin), never because of a
    declaration. ``requires_approval`` asks the approval gate for a decision before every execution
    unless a policy rule decides.
    """

    name: str
    input_schema: Mapping[str, Any]
    execute_fn: ExecuteFunction
    effects: Sequence[str] | None = None
    description: str | None = None
    requires_approval: bool = False
    validate_fn: ValidateFunction = field(default=_accept_any)

    def validate(self, args: Mapping[str, Any]) -> None:
        """Run the tool's own argument validation."""
        self.validate_fn(args)

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> Any:
        """Run the tool once."""
        return await self.execute_fn(args, context)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolDefinition:
    """What callers and models see of a registered tool: no executable parts.

    ``effects`` holds the declared effects verbatim (empty when none were declared; a descriptor other
    than read, write, execute and network is refused at registration); ``effects_declared`` tells a tool
    that declared none (``effects`` absent or ``None``) from one that declared an empty list. Both only
    describe the tool: approval policies and screens read them, the sandbox does not.
    """

    name: str
    description: str | None
    input_schema: Mapping[str, Any]
    effects: tuple[str, ...]
    requires_approval: bool
    digest: str
    effects_declared: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedCall:
    """A call that passed every check before execution, with a private copy of its arguments."""

    call: ToolCall
    tool: RegisteredTool
    definition: ToolDefinition
    arguments: dict[str, Any]
    canonical_arguments: str
    arguments_digest: str


def _declared_effects(name: str, effects: object) -> tuple[str, ...]:
    """The declared effects as a tuple of strings, each one of the seed's four descriptors (V-11)."""
    if isinstance(effects, str | bytes) or not isinstance(effects, Iterable):
        raise ValidationError(f"tool {name!r} effects must be a list of strings")
    effect_list = tuple(effects)
    if not all(isinstance(effect, str) and effect for effect in effect_list):
        raise ValidationError(f"tool {name!r} effects must be a list of nonempty strings")
    unknown = next((effect for effect in effect_list if effect not in EFFECTS), None)
    if unknown is not None:
        known = ", ".join(sorted(EFFECTS))
        raise ValidationError(
            f"tool {name!r} declares unknown effect {unknown[:40]!r}; effects are {known}",
            code="unknown_effect",
        )
    return effect_list


def _definition(tool: RegisteredTool) -> ToolDefinition:
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise ValidationError(f"tool name {name!r} must be 1-64 letters, digits, underscores or hyphens")
    declared = getattr(tool, "effects", None)
    effect_list = () if declared is None else _declared_effects(name, declared)
    schema = getattr(tool, "input_schema", None)
    if not isinstance(schema, Mapping):
        raise ValidationError(f"tool {name!r} needs an input schema object")
    try:
        json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"tool {name!r} input schema is not JSON-compatible") from exc
    description = getattr(tool, "description", None)
    if description is not None and not isinstance(description, str):
        raise ValidationError(f"tool {name!r} description must be a string")
    for method in ("validate", "execute"):
        if not callable(getattr(tool, method, None)):
            raise ValidationError(f"tool {name!r} has no {method}() method")
    return ToolDefinition(
        name=name,
        description=description,
        input_schema=schema,
        effects=effect_list,
        requires_approval=bool(getattr(tool, "requires_approval", False)),
        digest=tool_digest(name=name, description=description, input_schema=schema, effects=effect_list),
        effects_declared=declared is not None,
    )


class ToolRegistry:
    """Tools by name. ``register`` returns an unregister function that is True once, then False."""

    def __init__(self, tools: Iterable[RegisteredTool] = ()) -> None:
        self._tools: dict[str, tuple[RegisteredTool, ToolDefinition]] = {}
        self._gate: CallGate | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: RegisteredTool) -> Callable[[], bool]:
        """Add ``tool``; an invalid or duplicate name raises at once."""
        definition = _definition(tool)
        if definition.name in self._tools:
            raise ValidationError(f"tool {definition.name!r} is already registered")
        entry = (tool, definition)
        self._tools[definition.name] = entry

        def unregister() -> bool:
            if self._tools.get(definition.name) is not entry:
                return False
            del self._tools[definition.name]
            return True

        return unregister

    def guard(self, gate: CallGate) -> None:
        """Route every :meth:`call` through ``gate`` from now on (one gate per registry)."""
        if self._gate is not None and self._gate is not gate:
            raise ValidationError("this tool registry is already guarded by another approval gate")
        self._gate = gate

    @property
    def gate(self) -> CallGate | None:
        """The approval gate every call goes through, once :meth:`guard` set one."""
        return self._gate

    def get(self, name: str) -> RegisteredTool | None:
        """The tool registered under ``name``, if any."""
        entry = self._tools.get(name)
        return None if entry is None else entry[0]

    def definition(self, name: str) -> ToolDefinition | None:
        """The definition of the tool registered under ``name``, if any."""
        entry = self._tools.get(name)
        return None if entry is None else entry[1]

    def names(self) -> list[str]:
        """Every registered name, permitted or not."""
        return list(self._tools)

    def list(self, context: WorkerContext) -> list[ToolDefinition]:
        """Definitions of the tools the sandbox grants by name, without functions.

        Declared effects do not hide a granted tool: the sandbox refuses at the point of access.
        """
        allows_tool = context.services.sandbox.allows_tool
        return [definition for _tool, definition in self._tools.values() if allows_tool(definition.name)]

    def prepare(self, call: ToolCall | Mapping[str, Any], context: WorkerContext) -> PreparedCall:
        """Check the call id, tool permission, registration and arguments, in the seed's order."""
        name = _checked_id_and_name(call)
        context.services.sandbox.check_tool(name)
        entry = self._tools.get(name)
        if entry is None:
            raise UnknownToolError(f"no tool named {name!r} is registered")
        tool, definition = entry
        parsed = _parse_call(call)
        canonical = canonical_json(parsed.arguments)
        arguments: dict[str, Any] = json.loads(canonical)
        self.validate_arguments(definition, tool, arguments)
        return PreparedCall(
            call=parsed,
            tool=tool,
            definition=definition,
            arguments=arguments,
            canonical_arguments=canonical,
            arguments_digest=arguments_digest(arguments),
        )

    @staticmethod
    def validate_arguments(
        definition: ToolDefinition, tool: RegisteredTool, arguments: Mapping[str, Any]
    ) -> None:
        """Run the tool's own ``validate``; a refusal raises :class:`ToolValidationError`, except that a
        path the sandbox's rules refuse keeps its :class:`PathError` (and its code, ``path_traversal``…)."""
        try:
            tool.validate(arguments)
        except PathError:
            raise
        except Exception as exc:
            message = sanitize_public_message(str(exc)) or "no reason given"
            raise ToolValidationError(f"tool {definition.name!r} refused its arguments: {message}") from exc

    async def execute(self, prepared: PreparedCall, context: WorkerContext) -> ExternalResult:
        """Execute a prepared call once and validate its result; ``context.approval`` must bind to it."""
        self._check_binding(prepared, context)
        context.services.sandbox.check_tool(prepared.definition.name)
        outcome = await prepared.tool.execute(json.loads(prepared.canonical_arguments), context)
        return parse_outcome(outcome, call_id=prepared.call.id, source=prepared.call.name, what="tool")

    def _check_binding(self, prepared: PreparedCall, context: WorkerContext) -> None:
        entry = self._tools.get(prepared.definition.name)
        if entry is None or entry[0] is not prepared.tool:
            raise ApprovalError(f"tool {prepared.definition.name!r} changed before it could execute")
        approval = context.approval
        if approval is None:
            if prepared.definition.requires_approval and self._gate is not None:
                raise ApprovalError(f"tool {prepared.definition.name!r} needs an approval to execute")
            return
        if (
            approval.call_id != prepared.call.id
            or approval.arguments_digest != prepared.arguments_digest
            or approval.tool_digest != entry[1].digest
        ):
            raise ApprovalError(f"the approval does not cover call {prepared.call.id!r} as it stands")

    async def call(self, call: ToolCall | Mapping[str, Any], context: WorkerContext) -> ExternalResult:
        """Check and execute one call; business failures come back as results, misuse raises."""
        if self._gate is not None:
            return await self._gate.call_tool(self, call, context)
        return await self.execute(self.prepare(call, context), context)


def _checked_id_and_name(call: ToolCall | Mapping[str, Any]) -> Any:
    """Check the call id and return the name as given, for the permission check that comes next."""
    if isinstance(call, ToolCall):
        return call.name
    if not isinstance(call, Mapping):
        raise ValidationError("call must be an object with id, name and arguments")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise ValidationError("invalid tool call: id must be a nonempty string")
    return call.get("name")


def _parse_call(call: ToolCall | Mapping[str, Any]) -> ToolCall:
    """The whole call, validated once its id, permission and registration are known to hold."""
    if isinstance(call, ToolCall):
        return call
    try:
        return ToolCall.model_validate(call)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid tool call: {validation_summary(exc)}") from None
