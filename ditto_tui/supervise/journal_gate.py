"""An approval gate that executes nothing whose approval the run journal could not record."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.runtime.worker import EmitFunction, WorkerContext
from ditto_tui.supervise.gate import ApprovalGate
from ditto_tui.supervise.journal import JournalError, RunJournal

if TYPE_CHECKING:
    from ditto_tui.interaction.mcp.registry import McpRegistry
    from ditto_tui.interaction.tools import ToolRegistry
    from ditto_tui.sandbox import Sandbox
    from ditto_tui.signal import CancelSignal

APPROVING = frozenset({"approve", "approve_always"})


class JournaledGate:
    """Wraps an :class:`ApprovalGate` (pass it as ``create_interaction_worker(approval=...)``).

    The gate reports each decision with ``context.emit("approval_resolved", ...)`` and only then executes
    the call; the journal writes and fsyncs the decision inside that emit. This wrapper checks, right
    after the emit returns, that the decision reached the journal: when the run's journal has failed,
    the call raises :class:`JournalError` instead of executing (the run fails closed) and an
    "approve always" grant that could not be recorded is withdrawn. Once a run's journal has failed, a
    call that would need an approval (the policy asks, or the tool requires one) is refused the same
    way before anyone is asked; calls that need none go on.
    """

    def __init__(self, gate: ApprovalGate, journal: RunJournal) -> None:
        self.gate = gate
        self.journal = journal

    async def call_tool(
        self, registry: ToolRegistry, call: ToolCall | Mapping[str, Any], context: WorkerContext
    ) -> ExternalResult:
        """Decide and execute one registered tool call, as the wrapped gate does."""
        name = call.name if isinstance(call, ToolCall) else call.get("name")
        if isinstance(name, str) and self.journal.failure(context.run_id) is not None:
            definition = registry.definition(name)
            needed = definition is not None and definition.requires_approval
            self._refuse(name, needed or self.gate.policy.for_tool(name, needed).decision == "ask", context)
        return await self.gate.call_tool(registry, call, self._checked(context))

    async def invoke_mcp(
        self,
        registry: McpRegistry,
        server: str,
        call: ToolCall,
        sandbox: Sandbox,
        signal: CancelSignal | None,
        context: WorkerContext | None,
    ) -> ExternalResult:
        """Decide and invoke one MCP call, as the wrapped gate does."""
        if context is not None:
            if self.journal.failure(context.run_id) is not None:
                asks = self.gate.policy.for_mcp(server, call.name).decision == "ask"
                self._refuse(f"{server}:{call.name}", asks, context)
            context = self._checked(context)
        return await self.gate.invoke_mcp(registry, server, call, sandbox, signal, context)

    def _refuse(self, label: str, needs_approval: bool, context: WorkerContext) -> None:
        failure = self.journal.failure(context.run_id)
        if failure is not None and needs_approval:
            raise JournalError(
                f"{label!r} was not executed: its approval cannot be recorded: {failure.message}"
            )

    def _checked(self, context: WorkerContext) -> WorkerContext:
        return dataclasses.replace(context, emit=self._checked_emit(context.emit, context.run_id))

    def _checked_emit(self, emit: EmitFunction, run_id: str) -> EmitFunction:
        def checked(kind: str, /, **fields: Any) -> None:
            emit(kind, **fields)
            if kind != "approval_resolved" or fields.get("decision") not in APPROVING:
                return
            failure = self.journal.failure(run_id)
            if failure is None:
                return
            tool = str(fields.get("tool"))
            if fields.get("decision") == "approve_always":
                self.gate.revoke(tool)
            raise JournalError(
                f"call {fields.get('call_id')!r} ({tool}) was approved but not executed: the decision could "
                f"not be recorded: {failure.message}"
            )

        return checked
