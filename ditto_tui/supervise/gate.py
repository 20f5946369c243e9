"""The approval gate: no call that needs approval executes without a decision bound to it."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic

from ditto_tui.contracts import ExternalResult, McpCapability, ToolCall, ensure_json
from ditto_tui.digest import arguments_digest, canonical_json, sha256_hex, tool_digest
from ditto_tui.errors import ValidationError
from ditto_tui.infer.proposal import current_proposal
from ditto_tui.interaction.mcp.drift import definition_digest
from ditto_tui.interaction.mcp.registry import McpRegistry
from ditto_tui.interaction.tools import PreparedCall, ToolRegistry
from ditto_tui.runtime.approval import APPROVING, DENIED, NO_APPROVER, TIMED_OUT, Approval, DecidedBy, Via
from ditto_tui.runtime.client import short_run_id
from ditto_tui.runtime.events import (
    ApprovalRequested,
    ApprovalResolved,
    ExecutionEvent,
    ReviewRequested,
    ReviewResolved,
    checked_fields,
)
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.schema import check_against_schema
from ditto_tui.supervise.approvers import StaticApprover
from ditto_tui.supervise.grants import Grant, GrantStore
from ditto_tui.supervise.inbox import Answer, Approver, Inbox, answers, approver_name
from ditto_tui.supervise.matching import Call
from ditto_tui.supervise.modes import MODE_DENIED, ModeSwitch, apply_mode, reads_only
from ditto_tui.supervise.modes import describe as describe_mode
from ditto_tui.supervise.policy import VERDICT_EVENT, ApprovalPolicy, ReviewToggles, Verdict, verdict_data
from ditto_tui.supervise.protected import ControlFiles, protected_notice
from ditto_tui.supervise.record import DecisionRecorder
from ditto_tui.supervise.requests import (
    ApprovalDecision,
    ApprovalRequest,
    ReviewDecision,
    ReviewRequest,
    redacted_result,
)
from ditto_tui.supervise.review import result_text, suspicious_spans

if TYPE_CHECKING:
    from ditto_tui.config import ApprovalConfig as ApprovalSettings
    from ditto_tui.sandbox import Sandbox
    from ditto_tui.signal import CancelSignal

MAX_FRESH_REQUESTS = 3
_WRITTEN_KEPT = 64

RESULT_REJECTED = "RESULT_REJECTED"
"""The result code of a call whose result a reviewer failed (or nobody reviewed in time, ``onTimeout:
deny``): it executed, but its result never reached a node or model."""
REVIEW_NO_REVIEWER = "REVIEW_NO_REVIEWER"
"""The result code of a call whose result needs review when no person answers the inbox (no approver,
or one that answers by itself, such as headless ``--approve``): the result is held back."""
REVIEW_CANCELLED = "REVIEW_CANCELLED"
"""The result code of a call cancelled (or whose review was withdrawn) while its result waited."""
REVIEW_EDIT_INVALID = "REVIEW_EDIT_INVALID"
"""The result code of a call whose redacted result was refused: the original is held back too."""


@dataclass(frozen=True, kw_only=True)
class _Subject:
    """One call as the gate sees it, tool or MCP, before a decision."""

    call: ToolCall
    label: str
    server: str | None
    description: str | None
    effects: tuple[str, ...]
    input_schema: Mapping[str, Any] | None
    tool_digest: str
    canonical_arguments: str
    arguments_digest: str
    revalidate: Callable[[Mapping[str, Any]], None]
    verdict: Callable[[Mapping[str, Any]], Verdict]
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    pin: str = ""
    """The digest grants are pinned to: the whole definition (annotations and title included)."""
    protected: tuple[str, ...] = ()
    """The control files the call names (:mod:`ditto_tui.supervise.protected`): asked, never granted."""

    @property
    def grant_pin(self) -> str:
        return self.pin or self.tool_digest


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    """Either an approval (and the arguments it covers) or a result that ends the call unexecuted."""

    approval: Approval | None = None
    canonical_arguments: str = ""
    result: ExternalResult | None = None


def _failed(subject: _Subject, status: str, code: str, message: str) -> ExternalResult:
    return ExternalResult.model_validate(
        {
            "call_id": subject.call.id,
            "source": subject.label,
            "status": status,
            "error": {"code": code, "message": message},
        }
    )


def _ended(subject: _Subject, status: str, code: str, message: str) -> _Outcome:
    return _Outcome(result=_failed(subject, status, code, message))


def _title(annotations: Mapping[str, Any] | None) -> str | None:
    title = annotations.get("title") if annotations else None
    return title if isinstance(title, str) and title else None


class ApprovalGate:
    """Sits in front of the tool and MCP registries (``create_interaction_worker(..., approval=gate)``).

    The policy sees the call's arguments. A call it allows runs; one it denies ends
    ``failed``/``APPROVAL_DENIED``; one it asks about waits for ``approver.decide`` (no approver: ``failed``/
    ``APPROVAL_NO_APPROVER``). The decision binds to the call id, the sha256 of the exact arguments and
    the tool definition digest; edited arguments are validated again, and put to the policy again (a rule
    that denies them wins over the approval). ``timeout`` (seconds; the deciding rules' own
    ``timeout_seconds`` wins) ends an unanswered request as their ``onTimeout`` says: ``timeout``/
    ``APPROVAL_TIMEOUT`` (deny, the default), or approved (allow); a request withdrawn with
    :meth:`withdraw`, or whose call is cancelled, never executes. With a ``recorder`` (the run journal)
    every decision is put on the record before the call it approves executes, and nothing is asked or
    executed in a run whose record has failed (``ditto_tui.supervise.record``).

    A call whose rules say ``review: results``, or whose tool is in :attr:`reviews` (the session's live
    toggles), has its result held in the inbox after it executes (a :class:`ReviewRequest`, with what
    :func:`~ditto_tui.supervise.review.suspicious_spans` marks): ``pass`` lets it go on, ``redact``
    replaces it (a valid ``ExternalResult`` of the same call), ``fail`` ends the call ``failed``/
    ``RESULT_REJECTED``; unanswered in time, the reviewing rules' ``onTimeout`` decides (deny, the
    default: ``timeout``/``RESULT_REJECTED``). Only a person reviews: with no approver, or one that
    answers by itself, the result is held back (``REVIEW_NO_REVIEWER``). A cancelled call withdraws
    its review (``REVIEW_CANCELLED``). Nothing unreviewed is returned, and a review that lets a result
    through is on the record first.
    """

    def __init__(
        self,
        *,
        policy: ApprovalPolicy | None = None,
        approver: Approver | None = None,
        timeout: float | None = None,
        recorder: DecisionRecorder | None = None,
        grants: GrantStore | None = None,
        mode: ModeSwitch | None = None,
        control_files: ControlFiles | None = None,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValidationError("approval timeout must be a positive number of seconds")
        self.policy = policy or ApprovalPolicy()
        self.approver = approver
        self.timeout = timeout
        self.recorder = recorder
        # An inbox given as the approver (the TUI's) is the table a person answers; any other approver
        # is consulted by an inbox of the gate's own. Either way the inbox is the one pending table.
        self.inbox = approver if isinstance(approver, Inbox) else Inbox(approver)
        self.grants = grants or GrantStore()
        self.mode = mode or ModeSwitch()
        self.reviews = ReviewToggles()
        self._written: dict[str, asyncio.Future[Grant | None]] = {}
        """By request id, the future of the grant an ``approve_always`` writes (its result None: it could
        not be written), until the screen that asked takes it with :meth:`written_grant`."""
        self._ids = itertools.count(1)
        self._session = uuid.uuid4().hex[:8]
        self.control_files = control_files
        """Where the control files are (None: those of each call's sandbox workspace and of the user)."""
        self._controls: dict[Path, ControlFiles] = {}

    @classmethod
    def from_config(cls, approval: ApprovalSettings, approver: Approver | None) -> ApprovalGate:
        """The gate of a ``ditto.yaml`` ``approval`` section (rules, per-rule and default timeouts)."""
        return cls(
            policy=ApprovalPolicy.from_config(approval), approver=approver, timeout=approval.timeout_seconds
        )

    # -- what the UI sees -----------------------------------------------------------------------------

    def pending(self) -> list[ApprovalRequest]:
        """Requests waiting for a decision, oldest first (those of :attr:`inbox`)."""
        return self.inbox.pending()

    def withdraw(self, request_id: str) -> bool:
        """End a pending request as ``cancelled`` without executing it; False if it is not pending."""
        return self.inbox.withdraw(request_id)

    def always_approved(self) -> list[str]:
        """Tools some live grant covers (in part or in whole)."""
        return sorted({grant.tool for grant in self.grants.grants()})

    def revoke(self, tool: str) -> bool:
        """Withdraw every grant of ``tool``: its next call asks again. False if it had none."""
        return self.grants.revoke_tool(tool)

    async def written_grant(self, request_id: str, timeout: float) -> Grant | None:
        """The grant ``request_id``'s "approve always" wrote, once it is written (the decision goes on the
        record first); None when it could not be written, or is not within ``timeout`` seconds."""
        future = self._written_future(request_id)
        # Waited for without awaiting it directly, so a waiter that gives up never cancels the grant
        # another is waiting for; a grant written later stays until someone takes it (or it is pruned).
        done, _pending = await asyncio.wait({future}, timeout=timeout)
        if not done:
            return None
        self._written.pop(request_id, None)
        return future.result()

    def _written_future(self, request_id: str) -> asyncio.Future[Grant | None]:
        future = self._written.get(request_id)
        if future is None:
            future = self._written[request_id] = asyncio.get_running_loop().create_future()
            while len(self._written) > _WRITTEN_KEPT:  # nobody asked for the oldest (a library approver)
                self._written.pop(next(iter(self._written)))
        return future

    def covered(self, grant: Grant) -> list[ApprovalRequest]:
        """The pending tool calls ``grant`` would approve, oldest first: none once it has ended, as many as
        it has uses left, of the same tool definition (a run grant: of its run)."""
        state = next((state for state in self.grants.states() if state.grant.id == grant.id), None)
        if state is None:
            return []
        covered = [
            request
            for request in self.inbox.pending()
            if (grant.lifetime != "run" or grant.run_id == request.run_id)
            and not request.protected
            and request.grant_pin == grant.tool_digest
            and grant.covers(_request_call(request), request.arguments_digest)
        ]
        return covered if state.uses_left is None else covered[: state.uses_left]

    def apply_grant(self, grant_id: str) -> int:
        """Approve the pending calls grant ``grant_id`` covers (a person chose to), each counted as a use
        of it; returns how many were approved."""
        grant = next((g for g in self.grants.grants() if g.id == grant_id), None)
        if grant is None:
            return 0
        approved = 0
        for request in self.covered(grant):
            if not self.grants.use(grant):
                break
            decision = ApprovalDecision(kind="approve", reason=f"grant {grant.id} applied to the queue")
            approved += self.inbox.resolve(request.request_id, decision)
        return approved

    def check_arguments(self, request_id: str, arguments: Mapping[str, Any]) -> None:
        """Check edited arguments for a pending request as approving them would: JSON, then the tool's
        own ``validate``. Raises :class:`ValidationError` saying why they would be refused."""
        if self.inbox.get(request_id) is None:
            raise ValidationError(f"approval request {request_id!r} is not pending")
        self.inbox.check_arguments(request_id, arguments)

    # -- registered tools -----------------------------------------------------------------------------

    async def call_tool(
        self, registry: ToolRegistry, call: ToolCall | Mapping[str, Any], context: WorkerContext
    ) -> ExternalResult:
        """Prepare the call (every registry check), decide, then execute it at most once."""
        prepared = registry.prepare(call, context)
        definition = prepared.definition
        declared = definition.effects if definition.effects_declared else None
        subject = _Subject(
            call=prepared.call,
            label=definition.name,
            server=None,
            description=definition.description,
            effects=definition.effects,
            input_schema=definition.input_schema,
            tool_digest=definition.digest,
            canonical_arguments=prepared.canonical_arguments,
            arguments_digest=prepared.arguments_digest,
            revalidate=_schema_then(
                definition.input_schema,
                lambda arguments: registry.validate_arguments(definition, prepared.tool, arguments),
            ),
            verdict=lambda arguments: self.policy.for_tool(
                definition.name, definition.requires_approval, declared, arguments
            ),
            protected=self._protected(prepared.arguments, context.services.sandbox, declared),
        )
        verdict = _asked_if_protected(subject, subject.verdict(prepared.arguments))
        review = verdict.review or definition.name in self.reviews
        moded = self._moded(subject, verdict, declared, context)
        if moded is None and verdict.decision == "allow" and not definition.requires_approval:
            self._ruled(subject, verdict, context)
            result = await registry.execute(prepared, context)
            return await self._reviewed(subject, verdict, result, context) if review else result
        outcome = moded or await self._authorize(subject, verdict, context)
        if outcome.result is not None:
            return outcome.result
        assert outcome.approval is not None
        approved = _with_arguments(prepared, outcome.canonical_arguments)
        result = await registry.execute(approved, dataclasses.replace(context, approval=outcome.approval))
        reviewing = verdict if review else _edited_into_review(subject, outcome)
        if reviewing is not None:
            return await self._reviewed(subject, reviewing, result, context)
        return result

    # -- MCP tools ------------------------------------------------------------------------------------

    async def invoke_mcp(
        self,
        registry: McpRegistry,
        server: str,
        call: ToolCall,
        sandbox: Sandbox,
        signal: CancelSignal | None,
        context: WorkerContext | None,
    ) -> ExternalResult:
        """Check one MCP call as the registry would (sandbox, definition drift, support), decide on it,
        then invoke it at most once."""
        refused = await registry.refusal(server, call, sandbox)
        if refused is not None:
            return refused
        capability = registry.known_capability(server, call.name)
        label = f"{server}:{call.name}"
        description = capability.description if capability else None
        schema = capability.input_schema if capability else None
        annotations = capability.annotations if capability else None
        canonical = canonical_json(call.arguments)
        subject = _Subject(
            call=call,
            label=label,
            server=server,
            description=description,
            effects=(),
            input_schema=schema,
            tool_digest=tool_digest(name=label, description=description, input_schema=schema, effects=()),
            pin=_definition_pin(label, capability),
            canonical_arguments=canonical,
            arguments_digest=arguments_digest(json.loads(canonical)),
            revalidate=_schema_then(schema),
            verdict=lambda arguments: self.policy.for_mcp(server, call.name, annotations, arguments),
            title=_title(annotations),
            annotations=annotations,
            protected=self._protected(call.arguments, sandbox, None),
        )
        verdict = _asked_if_protected(subject, subject.verdict(json.loads(canonical)))
        if context is not None:  # on the record: the annotations the rules judged, and what they said
            fields = {"call_id": call.id, "tool": label, "server": server, "annotations": annotations}
            context.emit(VERDICT_EVENT, data={**fields, **verdict_data(verdict)})
        review = verdict.review or label in self.reviews
        moded = self._moded(subject, verdict, None, context)
        if moded is None and verdict.decision == "allow":
            self._ruled(subject, verdict, context)
            result = await registry.invoke_unguarded(server, call, sandbox, signal, context=context)
            return await self._reviewed(subject, verdict, result, context, signal) if review else result
        outcome = moded or await self._authorize(subject, verdict, context, signal)
        if outcome.result is not None:
            return outcome.result
        edited = call.model_copy(update={"arguments": json.loads(outcome.canonical_arguments)})
        result = await registry.invoke_unguarded(
            server, edited, sandbox, signal, decided_on=capability, context=context
        )
        reviewing = verdict if review else _edited_into_review(subject, outcome)
        if reviewing is not None:
            return await self._reviewed(subject, reviewing, result, context, signal)
        return result

    # -- the decision ---------------------------------------------------------------------------------

    def _protected(
        self, arguments: Mapping[str, Any] | None, sandbox: Sandbox, effects: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        """The control files a call that may write names (a registered tool declared to only read
        writes nothing; an MCP tool's hints are the server's claims, so every MCP call is looked at)."""
        if effects is not None and reads_only(effects=effects):
            return ()
        return self._control_files(sandbox).named_by(arguments)

    def _protected_again(self, subject: _Subject, canonical: str) -> tuple[str, ...]:
        if subject.protected:
            return subject.protected
        files = self.control_files or next(iter(self._controls.values()), None) or ControlFiles.of(None)
        return files.named_by(json.loads(canonical))

    def _control_files(self, sandbox: Sandbox) -> ControlFiles:
        if self.control_files is not None:
            return self.control_files
        files = self._controls.get(sandbox.workspace)
        if files is None:
            files = self._controls[sandbox.workspace] = ControlFiles.of(sandbox.workspace)
        return files

    def _ruled(self, subject: _Subject, verdict: Verdict, context: WorkerContext | None) -> None:
        """Put the policy's own decision on the record before the call runs (or ends unrun): allowed or
        denied by its rules (``decided_by`` rule, with each rule's file and line) or by its default."""
        if context is None:
            return
        allowed = verdict.decision == "allow"
        _emit(
            context,
            ApprovalResolved,
            request_id=f"policy-{self._session}-{next(self._ids)}",
            call_id=subject.call.id,
            tool=subject.label,
            decision="approve" if allowed else "deny",
            reason=_policy_reason(subject.label, verdict),
            arguments_digest=subject.arguments_digest,
            decided_by=verdict.decided_by,
            rules=verdict.rules,
        )

    def _moded(
        self,
        subject: _Subject,
        verdict: Verdict,
        effects: tuple[str, ...] | None,
        context: WorkerContext | None = None,
    ) -> _Outcome | None:
        """What the session's mode makes of the call (``None``: the rules' verdict stands); the decision
        is reported (``decided_by`` mode) and, when it lets the call run, on the record first."""
        mode = self.mode.mode
        if mode == "ask":
            return None
        moded = apply_mode(
            mode,
            verdict.decision,
            label=subject.label,
            effects=effects,
            mcp=subject.server is not None,
            annotations=subject.annotations,
        )
        if moded is None or (subject.protected and moded.decision != "deny"):
            return None  # no mode lets a control file be written without a person
        message = moded.message or f"denied in {mode} mode"
        event = _emit(
            context,
            ApprovalResolved,
            request_id=f"mode-{self._session}-{next(self._ids)}",
            call_id=subject.call.id,
            tool=subject.label,
            decision="deny" if moded.decision == "deny" else "approve",
            reason=f"{mode} mode: {message if moded.decision == 'deny' else describe_mode(mode)}",
            arguments_digest=subject.arguments_digest,
            decided_by="mode",
        )
        if moded.decision == "deny":
            return _ended(subject, "failed", MODE_DENIED, message)
        if self.recorder is not None and isinstance(event, ApprovalResolved):
            self.recorder.record(event)  # raises: an approval that is not on the record does not execute
        return self._approval(
            subject, "approve", verdict.rule, subject.canonical_arguments, decided_by="mode"
        )

    def _granted(self, subject: _Subject, context: WorkerContext | None) -> Grant | None:
        """The grant that approves the call, used once (``None``: none covers it)."""
        arguments = json.loads(subject.canonical_arguments)
        call = _rule_call(subject.label, subject.server, subject.effects, subject.annotations, arguments)
        run_id = context.run_id if context is not None else None
        grant = self.grants.find(call, subject.grant_pin, subject.arguments_digest, run_id)
        if grant is None or not self.grants.use(grant):
            return None
        _emit(
            context,
            ApprovalResolved,
            request_id=f"grant-{grant.id}-{subject.call.id}",
            call_id=subject.call.id,
            tool=subject.label,
            decision="approve_always",
            reason=f"grant {grant.id}: {grant.describe()}",
            arguments_digest=subject.arguments_digest,
            decided_by="grant",
            grant=grant.id,
        )
        return grant

    async def _authorize(
        self,
        subject: _Subject,
        verdict: Verdict,
        context: WorkerContext | None,
        signal: CancelSignal | None = None,
    ) -> _Outcome:
        if verdict.decision == "deny":
            self._ruled(subject, verdict, context)
            return _ended(subject, "failed", DENIED, _policy_denies(subject.label, verdict))
        if verdict.decision == "allow":
            self._ruled(subject, verdict, context)
            return self._approval(
                subject, "approve", verdict.rule, subject.canonical_arguments, decided_by=verdict.decided_by
            )
        if self.recorder is not None and context is not None:
            self.recorder.ready(context.run_id)  # raises: a decision that cannot be recorded is not asked
        if not subject.protected and self._granted(subject, context) is not None:
            return self._approval(
                subject, "approve_always", verdict.rule, subject.canonical_arguments, decided_by="grant"
            )
        if self.approver is None:
            return _ended(subject, "failed", NO_APPROVER, "No approver is available to approve this call")
        for _attempt in range(MAX_FRESH_REQUESTS):
            outcome = await self._ask(
                subject, verdict, context, signal or (context.signal if context else None)
            )
            if outcome is not None:
                return outcome
        return _ended(subject, "failed", "APPROVAL_MISMATCH", "The approved arguments kept changing")

    def _approval(
        self,
        subject: _Subject,
        kind: str,
        rule: str | None,
        canonical: str,
        request_id: str | None = None,
        *,
        decided_by: DecidedBy,
    ) -> _Outcome:
        approval = Approval(
            call_id=subject.call.id,
            arguments_digest=arguments_digest(json.loads(canonical)),
            tool_digest=subject.tool_digest,
            decision=kind,  # type: ignore[arg-type]
            decided_at=time.time(),
            request_id=request_id,
            rule=rule,
            decided_by=decided_by,
        )
        return _Outcome(approval=approval, canonical_arguments=canonical)

    def _request(self, subject: _Subject, verdict: Verdict, context: WorkerContext | None) -> ApprovalRequest:
        return ApprovalRequest(
            request_id=f"approval-{self._session}-{next(self._ids)}",
            call=ToolCall(
                id=subject.call.id, name=subject.call.name, arguments=json.loads(subject.canonical_arguments)
            ),
            tool=subject.label,
            server=subject.server,
            description=subject.description,
            effects=subject.effects,
            input_schema=subject.input_schema,
            tool_digest=subject.tool_digest,
            arguments_digest=subject.arguments_digest,
            rule=verdict.rule,
            run_id=context.run_id if context else None,
            node_id=context.node_id if context else None,
            requested_at=time.time(),
            timeout_seconds=_waits(verdict.on_timeout, verdict.timeout, self.timeout),
            title=subject.title,
            annotations=subject.annotations,
            proposal=current_proposal(),
            definition_digest=subject.pin or None,
            protected=subject.protected,
        )

    async def _ask(
        self, subject: _Subject, verdict: Verdict, context: WorkerContext | None, signal: CancelSignal | None
    ) -> _Outcome | None:
        request = self._request(subject, verdict, context)
        _emit(
            context,
            ApprovalRequested,
            request_id=request.request_id,
            call_id=subject.call.id,
            tool=subject.label,
            server=subject.server,
            node_id=request.node_id,
            arguments=request.call.arguments,
            arguments_digest=subject.arguments_digest,
            tool_digest=subject.tool_digest,
            rule=verdict.rule,
        )
        try:
            answer = await self._wait(request, signal, subject.revalidate)
        except asyncio.CancelledError:
            self._resolved(context, request, verdict, "cancelled", "the call was cancelled")
            raise
        if not isinstance(answer, ApprovalDecision) and answer == "timeout":
            return self._timed_out(subject, verdict, context, request)
        if not isinstance(answer, ApprovalDecision):
            self._resolved(context, request, verdict, "cancelled", "the request was withdrawn")
            return _ended(
                subject, "cancelled", "APPROVAL_CANCELLED", "The call was cancelled before approval"
            )
        if arguments_digest(request.call.arguments) != subject.arguments_digest:
            self._resolved(
                context, request, verdict, "cancelled", "the arguments changed after they were shown"
            )
            return None
        return self._apply(subject, verdict, context, request, answer)

    def _timed_out(
        self, subject: _Subject, verdict: Verdict, context: WorkerContext | None, request: ApprovalRequest
    ) -> _Outcome:
        """Nobody decided in time: the deciding rules' ``onTimeout`` says whether the call runs."""
        if verdict.on_timeout == "allow":
            reason = "no decision in time; the rule allows the call on timeout"
            self._resolved(context, request, verdict, "approve", reason, decided_by="timeout")
            return self._approval(
                subject,
                "approve",
                verdict.rule,
                subject.canonical_arguments,
                request.request_id,
                decided_by="timeout",
            )
        self._resolved(context, request, verdict, "timeout", "no decision in time", decided_by="timeout")
        return _ended(subject, "timeout", TIMED_OUT, "No decision was made in time")

    async def _wait(
        self,
        request: ApprovalRequest,
        signal: CancelSignal | None,
        revalidate: Callable[[Mapping[str, Any]], None],
    ) -> ApprovalDecision | str:
        def check(arguments: Mapping[str, Any]) -> None:
            _edited_arguments(arguments, revalidate)

        answer: Answer = await self.inbox.ask(
            request, timeout=request.timeout_seconds, signal=signal, check=check
        )
        if signal is not None and signal.cancelled:
            return "withdrawn"
        return answer

    def _apply(
        self,
        subject: _Subject,
        verdict: Verdict,
        context: WorkerContext | None,
        request: ApprovalRequest,
        decision: ApprovalDecision,
    ) -> _Outcome:
        by = "human" if decision.via is not None else self._answered_by()
        if decision.approves and subject.protected and by != "human":
            refusal = f"{protected_notice(subject.protected)}: only a person approves it"
            self._resolved(context, request, verdict, "deny", refusal, decided_by=by, via=decision.via)
            return _ended(subject, "failed", DENIED, refusal)
        if not decision.approves:
            reason = sanitize_public_message(decision.reason or "The call was denied")
            self._resolved(context, request, verdict, "deny", reason, decided_by=by, via=decision.via)
            return _ended(subject, "failed", DENIED, reason or "The call was denied")
        canonical = subject.canonical_arguments
        if decision.arguments is not None:
            try:
                canonical = _edited_arguments(decision.arguments, subject.revalidate)
            except (ValidationError, pydantic.ValidationError) as exc:
                message = sanitize_public_message(getattr(exc, "message", None) or str(exc))
                refused = f"edited arguments refused: {message}"
                self._resolved(context, request, verdict, "deny", refused, decided_by=by, via=decision.via)
                return _ended(
                    subject, "failed", "APPROVAL_EDIT_INVALID", message or "The edited arguments are invalid"
                )
        edited = canonical != subject.canonical_arguments
        if edited:
            again = subject.verdict(json.loads(canonical))
            if again.decision == "deny":  # an edit cannot carry a call past a rule that denies it
                message = _policy_denies(subject.label, again) + " with the edited arguments"
                self._resolved(context, request, again, "deny", message, decided_by="rule")
                return _ended(subject, "failed", DENIED, message)
            if _protected_edit(subject, self._protected_again(subject, canonical)) and by != "human":
                refused = "the edit names a control file: only a person approves it"
                self._resolved(context, request, verdict, "deny", refused, decided_by=by, via=decision.via)
                return _ended(subject, "failed", DENIED, refused)
        kind, said = decision.kind, decision.reason
        if kind == "approve_always" and subject.protected:  # approved this once; no grant covers it
            kind, said = "approve", _joined(said, "approved once: no grant covers a control file")
        self._resolved(
            context, request, verdict, kind, said, canonical, edited, decided_by=by, via=decision.via
        )
        if kind == "approve_always":  # only once the decision is on the record
            self._grant(subject, request, decision, canonical)
        elif decision.kind == "approve_always":
            self._no_grant(request)
        return self._approval(subject, kind, verdict.rule, canonical, request.request_id, decided_by=by)

    def _answered_by(self) -> DecidedBy:
        """Who gave an approver's answer: a person (``human``), or, when the inbox consults an answerer
        (headless ``--approve``, a library's approver), that answerer by itself, a setting of the session
        like the mode (``mode``; its reason names it): no person was asked, as for result reviews."""
        answerer = self.inbox.answerer
        if answerer is None:
            return "human"
        return "mode" if isinstance(answerer, StaticApprover) else "approver"

    def _approver_named(self, decided_by: DecidedBy | None) -> str | None:
        """The library approver's name, for a decision it made (None: someone else decided)."""
        return approver_name(self.inbox.answerer) if decided_by == "approver" else None

    def _grant(
        self, subject: _Subject, request: ApprovalRequest, decision: ApprovalDecision, canonical: str
    ) -> None:
        """Write the grant an ``approve_always`` chose (pinned to this tool definition)."""
        run = request.run_id
        origin = (
            f"run {short_run_id(run)}, request {request.request_id}"
            if run
            else f"request {request.request_id}"
        )
        grant: Grant | None
        try:
            grant = self._write_grant(subject, decision, canonical, run, origin)
        except ValidationError:
            grant = None  # the approval of this one call stands alone
        self._no_grant(request, grant)

    def _no_grant(self, request: ApprovalRequest, grant: Grant | None = None) -> None:
        """Tell whoever waits for the grant of ``request``'s "approve always" what was written (None:
        nothing)."""
        written = self._written_future(request.request_id)
        if not written.done():
            written.set_result(grant)

    def _write_grant(
        self, subject: _Subject, decision: ApprovalDecision, canonical: str, run: str | None, origin: str
    ) -> Grant:
        return self.grants.add(
            tool=subject.label,
            tool_digest=subject.grant_pin,
            scope=decision.scope,
            mcp=subject.server is not None,
            arguments_digest=arguments_digest(json.loads(canonical)),
            match=decision.match,
            lifetime=decision.lifetime if run or decision.lifetime != "run" else "session",
            run_id=run,
            expires=decision.expires,
            uses=decision.uses,
            origin=origin,
        )

    def _resolved(
        self,
        context: WorkerContext | None,
        request: ApprovalRequest,
        verdict: Verdict,
        decision: str,
        reason: str | None,
        canonical: str | None = None,
        edited: bool = False,
        *,
        decided_by: DecidedBy | None = "human",
        via: Via | None = None,
    ) -> None:
        digest = (
            arguments_digest(json.loads(canonical)) if canonical is not None else request.arguments_digest
        )
        event = _emit(
            context,
            ApprovalResolved,
            request_id=request.request_id,
            call_id=request.call.id,
            tool=request.tool,
            decision=decision,
            reason=None if reason is None else sanitize_public_message(reason),
            arguments_digest=digest,
            edited=edited,
            arguments=json.loads(canonical) if edited and canonical is not None else None,
            decided_by=None if decision == "cancelled" else decided_by,
            rules=verdict.rules,
            approver=self._approver_named(decided_by),
            via=via if decided_by == "human" else None,
        )
        if decision in APPROVING and self.recorder is not None and isinstance(event, ApprovalResolved):
            self.recorder.record(event)  # raises: an approval that is not on the record does not execute

    # -- the result review -----------------------------------------------------------------------------

    async def _reviewed(
        self,
        subject: _Subject,
        verdict: Verdict,
        result: ExternalResult,
        context: WorkerContext | None,
        signal: CancelSignal | None = None,
    ) -> ExternalResult:
        """``result`` once a person let it through (or the redaction they made), else a failed result."""
        if result.status == "cancelled":  # nothing came back for a model to read
            return result
        if self.approver is None or not answers(self.inbox.answerer, "result_review"):
            message = "No one can review this call's result, so it was held back"
            return _failed(subject, "failed", REVIEW_NO_REVIEWER, message)
        if self.recorder is not None and context is not None:
            self.recorder.ready(context.run_id)  # raises: a review that cannot be recorded is not asked
        request = self._review_request(subject, verdict, result, context)
        _emit(
            context,
            ReviewRequested,
            request_id=request.request_id,
            call_id=result.call_id,
            tool=request.tool,
            server=request.server,
            node_id=request.node_id,
            result=result.to_wire(),
            spans=[{"start": span.start, "end": span.end, "label": span.label} for span in request.spans],
            rule=request.rule,
            asked_by=request.asked_by,
        )
        signal = signal or (context.signal if context else None)

        def check(value: Mapping[str, Any]) -> None:
            redacted_result(value, result)

        try:
            answer = await self.inbox.ask(
                request, timeout=request.timeout_seconds, signal=signal, check=check
            )
        except asyncio.CancelledError:
            self._review_resolved(context, request, "cancelled", "the call was cancelled")
            raise
        if signal is not None and signal.cancelled:
            answer = "withdrawn"
        return self._review_answered(subject, verdict, request, answer, context)

    def _review_request(
        self, subject: _Subject, verdict: Verdict, result: ExternalResult, context: WorkerContext | None
    ) -> ReviewRequest:
        text = result_text(result)
        timeout = verdict.review_timeout if verdict.review else None
        return ReviewRequest(
            request_id=f"review-{self._session}-{next(self._ids)}",
            call=subject.call,
            tool=subject.label,
            result=result,
            run_id=context.run_id if context else None,
            text=text,
            spans=suspicious_spans(text),
            server=subject.server,
            node_id=context.node_id if context else None,
            rule=verdict.review_rule,
            requested_at=time.time(),
            timeout_seconds=_waits(
                verdict.review_on_timeout if verdict.review else "deny", timeout, self.timeout
            ),
            asked_by="rule" if verdict.review else self.reviews.cause(subject.label) or "person",
        )

    def _review_answered(
        self,
        subject: _Subject,
        verdict: Verdict,
        request: ReviewRequest,
        answer: object,
        context: WorkerContext | None,
    ) -> ExternalResult:
        original = request.result
        if answer == "timeout":
            if verdict.review and verdict.review_on_timeout == "allow":
                reason = "no review in time; the rule lets the result through on timeout"
                self._review_resolved(context, request, "timeout", reason, original, decided_by="timeout")
                return original
            self._review_resolved(context, request, "timeout", "no review in time", decided_by="timeout")
            return _failed(subject, "timeout", RESULT_REJECTED, "No one reviewed the result in time")
        if not isinstance(answer, ReviewDecision):
            why = "the review was withdrawn" if answer == "withdrawn" else "the review got no decision"
            self._review_resolved(context, request, "cancelled", why)
            return _failed(
                subject, "cancelled", REVIEW_CANCELLED, "The call was cancelled while its result was reviewed"
            )
        if answer.action == "pass":
            self._review_resolved(context, request, "pass", answer.reason, original)
            return original
        if answer.action == "fail":
            reason = sanitize_public_message(answer.reason or "") or "The result was rejected in review"
            self._review_resolved(context, request, "fail", reason)
            return _failed(subject, "failed", RESULT_REJECTED, reason)
        try:
            redacted = redacted_result(answer.redaction or {}, original)
        except ValidationError as exc:
            message = sanitize_public_message(exc.message) or "The redacted result is invalid"
            self._review_resolved(context, request, "fail", f"redacted result refused: {message}")
            return _failed(subject, "failed", REVIEW_EDIT_INVALID, message)
        self._review_resolved(context, request, "redact", answer.reason, redacted)
        return redacted

    def _review_resolved(
        self,
        context: WorkerContext | None,
        request: ReviewRequest,
        action: str,
        reason: str | None,
        released: ExternalResult | None = None,
        *,
        decided_by: DecidedBy | None = None,
    ) -> None:
        """Report how a review ended; one that lets a result through is on the record before it does."""
        redacted = released is not None and released is not request.result
        decided_by = decided_by or self._answered_by()
        event = _emit(
            context,
            ReviewResolved,
            request_id=request.request_id,
            call_id=request.result.call_id,
            tool=request.tool,
            action=action,
            reason=None if reason is None else sanitize_public_message(reason),
            decided_by=None if action == "cancelled" else decided_by,
            approver=self._approver_named(decided_by),
            original=request.result.to_wire(),
            redacted=released.to_wire() if redacted and released is not None else None,
            released=released is not None,
        )
        if released is not None and self.recorder is not None and isinstance(event, ReviewResolved):
            self.recorder.record(event)  # raises: a result whose review is not on the record is held back


def _rule_call(
    label: str,
    server: str | None,
    effects: tuple[str, ...] | None,
    annotations: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
) -> Call:
    """A call as rules and grants see it."""
    if server is not None:
        return Call(mcp=label, annotations=annotations, arguments=arguments)
    return Call(tool=label, effects=effects, arguments=arguments)


def _request_call(request: ApprovalRequest) -> Call:
    return _rule_call(
        request.tool, request.server, request.effects, request.annotations, dict(request.call.arguments or {})
    )


def _edited_into_review(subject: _Subject, outcome: _Outcome) -> Verdict | None:
    """The verdict on arguments edited in the approval view when they bring the call under a rule that
    reviews results (that rule asks for the review), else None."""
    if outcome.canonical_arguments == subject.canonical_arguments:
        return None
    again = subject.verdict(json.loads(outcome.canonical_arguments))
    return again if again.review else None


def _definition_pin(label: str, capability: McpCapability | None) -> str:
    """The digest an MCP tool's grants are pinned to: its whole definition, annotations and title included
    (drift's digest), with the server's name; "" when the tool was never listed."""
    return sha256_hex(f"{label}\n{definition_digest(capability)}") if capability is not None else ""


def _asked_if_protected(subject: _Subject, verdict: Verdict) -> Verdict:
    """``verdict``, asking instead of allowing when the call names a control file (a deny stands)."""
    if not subject.protected or verdict.decision != "allow":
        return verdict
    return dataclasses.replace(verdict, decision="ask", rule=verdict.rule or "control file")


def _protected_edit(subject: _Subject, named: tuple[str, ...]) -> bool:
    return bool(named) and not subject.protected


def _joined(reason: str | None, note: str) -> str:
    return f"{reason}; {note}" if reason else note


def _policy_reason(label: str, verdict: Verdict) -> str:
    """Why the policy decided by itself, in words: the deciding rules with their file and line."""
    said = "allows" if verdict.decision == "allow" else "denies"
    if not verdict.rules:
        return f"the policy's default {said} {label!r} (no rule matched)"
    where = "; ".join(
        f"{ref.rule} ({ref.file}:{ref.line})" if ref.file and ref.line else ref.rule for ref in verdict.rules
    )
    return f"rule {said} {label!r}: {where}"


def _policy_denies(label: str, verdict: Verdict) -> str:
    why = f"rule {verdict.rule}" if verdict.rule is not None else "its default"
    return f"The approval policy denies {label!r} ({why})"


def _schema_then(
    schema: Mapping[str, Any] | None, validate: Callable[[Mapping[str, Any]], None] | None = None
) -> Callable[[Mapping[str, Any]], None]:
    """Edited arguments are checked against the input schema first (the same compiled validator the
    forms use), then by the tool's own ``validate``: a headless or library approver's edit gets the same
    checks as one made in the approval view, and an MCP edit is checked against the server's schema."""

    def check(arguments: Mapping[str, Any]) -> None:
        problems = check_against_schema(schema, arguments)
        if problems:
            raise ValidationError(
                "the edited arguments do not match the input schema: " + "; ".join(problems)
            )
        if validate is not None:
            validate(arguments)

    return check


def _edited_arguments(arguments: Mapping[str, Any], revalidate: Callable[[Mapping[str, Any]], None]) -> str:
    checked = ensure_json(dict(arguments), where="arguments")
    canonical = canonical_json(checked)
    revalidate(json.loads(canonical))
    return canonical


def _with_arguments(prepared: PreparedCall, canonical: str) -> PreparedCall:
    if canonical == prepared.canonical_arguments:
        return prepared
    arguments = json.loads(canonical)
    return dataclasses.replace(
        prepared,
        call=prepared.call.model_copy(update={"arguments": arguments}),
        arguments=arguments,
        canonical_arguments=canonical,
        arguments_digest=arguments_digest(arguments),
    )


def _emit(
    context: WorkerContext | None, event_type: type[ExecutionEvent], **fields: Any
) -> ExecutionEvent | None:
    """Emit an ``event_type`` event whose fields are checked against its class first."""
    if context is None:
        return None
    kind, checked = checked_fields(event_type, **fields)
    return context.emit(kind, **checked)


__all__ = [
    "RESULT_REJECTED",
    "REVIEW_CANCELLED",
    "REVIEW_EDIT_INVALID",
    "REVIEW_NO_REVIEWER",
    "ApprovalGate",
    "Approver",
]


def _waits(on_timeout: str, timeout: float | None, default: float | None) -> float | None:
    """How long a request may wait: none at all under ``onTimeout: wait``, else the rule's timeout or the
    gate's."""
    if on_timeout == "wait":
        return None
    return timeout if timeout is not None else default
