"""Workers: node handlers grouped under a type, and the context every handler receives."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ditto_tui.errors import ValidationError
from ditto_tui.signal import CancelSignal

if TYPE_CHECKING:
    from ditto_tui.config import RuntimeConfig
    from ditto_tui.runtime.approval import Approval
    from ditto_tui.runtime.events import ExecutionEvent
    from ditto_tui.sandbox import Sandbox

_TYPE_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$")


class InvokeFunction(Protocol):
    """``context.invoke``: call another node type within the same run, under the caller's signal.

    Nested calls report no events unless ``node_id`` names them: then the call is reported like a graph
    node (``node_started``, ``node_finished``/``node_failed``, the caller's loop iteration) under the id
    ``"<caller node id>/<node_id>"``, e.g. ``act/call-1``, and its handler sees that id as its own.
    A nested call takes no worker-concurrency slot: it is part of an entry call that holds one.
    """

    def __call__(
        self, node_type: str, input: Any, *, timeout: float | None = None, node_id: str | None = None
    ) -> Awaitable[Any]: ...


class EmitFunction(Protocol):
    """``context.emit``: report an event of a known kind or a named custom event.

    Returns the event as it was published, or ``None`` when nobody listens (events are then not built,
    except approval events, which a decision recorder needs whoever listens).
    """

    def __call__(self, kind: str, /, **fields: Any) -> ExecutionEvent | None: ...


def _no_resources(_node_type: str) -> Mapping[str, object]:
    return {}


@dataclass(frozen=True, kw_only=True, slots=True)
class Services:
    """What the runtime shares with every handler.

    ``resources_of(node_type)`` gives the resources of the worker that exposes ``node_type`` (empty when
    none does), e.g. the tool registry behind ``INTERACTION.ACT.TOOL``, for a handler that must describe
    those tools to a model.
    """

    sandbox: Sandbox
    config: RuntimeConfig | None = None
    providers: Mapping[str, object] = field(default_factory=dict)
    resources_of: Callable[[str], Mapping[str, object]] = _no_resources


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerContext:
    """The context a handler is called with: services, identity, nested calls, events and cancellation."""

    services: Services
    worker_type: str
    node_type: str
    execution_id: str
    invoke: InvokeFunction
    emit: EmitFunction
    signal: CancelSignal
    run_id: str
    node_id: str | None = None
    approval: Approval | None = None
    resources: Mapping[str, object] = field(default_factory=dict)


NodeHandler = Callable[[Any, WorkerContext], Awaitable[Any]]
"""``async def handler(input, context) -> output``."""


@dataclass(frozen=True, kw_only=True)
class WorkerDefinition:
    """A worker: its type, the node types it exposes, its resources and its dispose hook.

    ``outputs`` maps a node type to the type of its output (a pydantic model, a ``TypedDict``, a union),
    for the node types that declare one: an output given at a breakpoint for a skipped node must fit it.
    """

    type: str
    nodes: Mapping[str, NodeHandler]
    resources: Mapping[str, object] = field(default_factory=dict)
    dispose: Callable[[], object] | None = None
    concurrency: int | None = None
    outputs: Mapping[str, Any] = field(default_factory=dict)


def define_worker(
    *,
    type: str,
    nodes: Mapping[str, NodeHandler],
    resources: Mapping[str, object] | None = None,
    dispose: Callable[[], object] | None = None,
    concurrency: int | None = None,
    outputs: Mapping[str, Any] | None = None,
) -> WorkerDefinition:
    """Define a worker exposing ``nodes`` (node type → handler), each type prefixed by ``type + "."``.

    ``concurrency`` bounds how many entry calls of this worker run at once in one runtime: calls from
    ``runtime.invoke`` and graph or loop nodes; a handler's nested ``context.invoke`` takes no slot, so a
    worker with ``concurrency=1`` can still call its own node types. ``dispose`` (sync or async) runs
    once when the runtime closes. ``outputs`` declares the output type of some of the node types (see
    :class:`WorkerDefinition`).
    """
    if not isinstance(type, str) or not _TYPE_PATTERN.match(type):
        raise ValidationError(f"worker type {type!r} must be dotted identifiers such as 'INTERACTION'")
    if not nodes:
        raise ValidationError(f"worker {type!r} exposes no node types")
    for node_type, handler in nodes.items():
        if not isinstance(node_type, str) or not _TYPE_PATTERN.match(node_type):
            raise ValidationError(f"node type {node_type!r} of worker {type!r} is not a dotted name")
        if not node_type.startswith(type + "."):
            raise ValidationError(f"node type {node_type!r} must start with its worker type {type + '.'!r}")
        if not callable(handler):
            raise ValidationError(f"handler for {node_type!r} is not callable")
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)):
        raise ValidationError("concurrency must be a positive integer")
    if concurrency is not None and concurrency < 1:
        raise ValidationError("concurrency must be a positive integer")
    undeclared = sorted(set(outputs or {}) - set(nodes))
    if undeclared:
        raise ValidationError(f"outputs names {undeclared[0]!r}, which worker {type!r} does not expose")
    return WorkerDefinition(
        type=type,
        nodes=dict(nodes),
        resources=dict(resources or {}),
        dispose=dispose,
        concurrency=concurrency,
        outputs=dict(outputs or {}),
    )
