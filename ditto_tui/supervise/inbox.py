"""The inbox of human decisions: the one table of requests waiting for an answer.

Everything that waits for a person is a request in an :class:`Inbox`: queued in arrival order, shown,
then answered, timed out, withdrawn or cancelled with the call that made it. The approval gate asks
through its inbox; the TUI reads the same inbox and answers it; a headless or library approver is an
answerer the inbox consults for each request. Nothing else keeps a list of pending requests.

A request has a ``kind`` (``tool_call`` today); a new kind is a request dataclass with ``request_id`` and
``kind`` (:class:`InboxRequest`), an answer with ``approves`` (:class:`InboxAnswer`: whether it lets
something go ahead), a screen that answers it and a journal record, and needs no change here. Readers
that handle one kind take their view of the table with :meth:`Inbox.pending_of`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from ditto_tui.errors import ValidationError
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest

logger = logging.getLogger(__name__)


class InboxRequest(Protocol):
    """What the inbox holds: any request with an id unique in the session and a kind."""

    @property
    def request_id(self) -> str:
        """Unique per request."""
        ...

    @property
    def kind(self) -> str:
        """What is asked (``tool_call``, ``sampling``, ``breakpoint`` …)."""
        ...


class InboxAnswer(Protocol):
    """What answers a request: at least whether it lets the thing asked about go ahead."""

    @property
    def approves(self) -> bool:
        """False for a refusal; a refusal that arrives with an approval wins."""
        ...


RequestT = TypeVar("RequestT")

Ended = Literal["timeout", "withdrawn"]
"""How a request ends without an answer: its deadline passed, or it was withdrawn or its call cancelled."""

Answer = ApprovalDecision | Ended
RequestListener = Callable[[Any], object]
ArgumentsCheck = Callable[[Mapping[str, Any]], None]


@runtime_checkable
class Approver(Protocol):
    """Answers requests: ``async decide(request) -> decision`` (a person's screen, a policy, a test).

    Every kind of request reaches it (``request.kind``: ``tool_call`` → :class:`ApprovalDecision`,
    ``result_review`` → ``ReviewDecision``, ``sampling``/``sampling_result`` → their answers,
    ``elicitation`` → ``ElicitationAnswer``, ``sign_in`` → ``SignInAnswer``), unless it names the kinds it
    answers in a ``request_kinds`` attribute (a set or frozenset of kind names): a request of another kind
    then waits for a person, as if there were no approver.
    """

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """The decision on ``request``."""
        ...


def answers(approver: object, kind: str) -> bool:
    """Whether ``approver`` answers requests of ``kind``: all of them, unless it names its
    ``request_kinds`` (an attribute of another type names nothing)."""
    kinds = getattr(approver, "request_kinds", None)
    return not isinstance(kinds, set | frozenset) or kind in kinds


def approver_name(approver: object) -> str:
    """How the record names a library approver: its ``name`` attribute, else its class."""
    name = getattr(approver, "name", None)
    return name if isinstance(name, str) and name else type(approver).__name__


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """What an answerer that failed, or answered a request with the wrong kind of answer, amounts to: a
    refusal (fail closed)."""

    reason: str

    @property
    def approves(self) -> bool:
        return False


@dataclass(eq=False)
class _Entry:
    request: InboxRequest
    answered: asyncio.Future[None]
    withdrawn: asyncio.Future[None]
    check: ArgumentsCheck | None = None
    decisions: list[Any] = field(default_factory=list)
    timeout: float | None = None
    ended: Ended = "withdrawn"


class Inbox:
    """Pending requests in arrival order, each answered once by :meth:`resolve` with its request id.

    With an ``answerer`` (an :class:`Approver`: ``--approve`` in headless runs, a library's own), every
    request is also handed to it and its decision resolves the request; an answerer that fails or
    answers nonsense denies (fail closed). An unknown, stale or late request id is refused
    (``resolve`` returns False); a second approval of the same request is ignored; a denial that
    arrives in the same instant as an approval wins.
    """

    def __init__(self, answerer: Approver | None = None) -> None:
        self.answerer = answerer
        self.timed_elsewhere: Callable[[InboxRequest], bool] | None = None
        """Which requests :meth:`ask` does not time out itself: a durable run host keeps their deadline in
        a timer that outlives this process, reads it with :meth:`timeout_of` and ends the request with
        :meth:`expire` when it passes."""
        self._entries: dict[str, _Entry] = {}
        self._added: list[RequestListener] = []
        self._ended: list[RequestListener] = []

    # -- the table ------------------------------------------------------------------------------------

    def pending(self) -> list[ApprovalRequest]:
        """Tool-call requests still waiting, oldest first (:meth:`pending_of` for any other kind)."""
        return self.pending_of(ApprovalRequest)

    def pending_of(self, kind: type[RequestT]) -> list[RequestT]:
        """Requests of the class ``kind`` still waiting, oldest first."""
        return [
            entry.request
            for entry in self._entries.values()
            if isinstance(entry.request, kind) and not entry.answered.done()
        ]

    def all_pending(self) -> list[InboxRequest]:
        """Every request still waiting, of every kind, oldest first."""
        return [entry.request for entry in self._entries.values() if not entry.answered.done()]

    def get(self, request_id: str) -> InboxRequest | None:
        """The pending request ``request_id``, or None."""
        entry = self._entries.get(request_id)
        return entry.request if entry is not None else None

    def on_request(self, listener: RequestListener) -> Callable[[], None]:
        """Call ``listener(request)`` for each new request; returns a function that stops it."""
        return _listen(self._added, listener)

    def on_end(self, listener: RequestListener) -> Callable[[], None]:
        """Call ``listener(request)`` when a request leaves the inbox, however it ended."""
        return _listen(self._ended, listener)

    # -- answering ------------------------------------------------------------------------------------

    def resolve(self, request_id: str, decision: InboxAnswer) -> bool:
        """Answer a pending request; False when the id is unknown, stale or already approved."""
        entry = self._entries.get(request_id)
        if entry is None:
            logger.info("decision for unknown or expired request %r refused", request_id)
            return False
        if entry.decisions and decision.approves:
            logger.info("duplicate decision for request %r ignored", request_id)
            return False
        entry.decisions.append(decision)
        if not entry.answered.done():
            entry.answered.set_result(None)
        return True

    def withdraw(self, request_id: str) -> bool:
        """End a pending request unanswered (its call ends ``cancelled``); False if it is not pending."""
        entry = self._entries.get(request_id)
        if entry is None or entry.withdrawn.done() or entry.answered.done():
            return False
        entry.withdrawn.set_result(None)
        return True

    def expire(self, request_id: str) -> bool:
        """End a pending request as timed out (the asker sees ``"timeout"``); False if it is not pending."""
        entry = self._entries.get(request_id)
        if entry is None or not self.withdraw(request_id):
            return False
        entry.ended = "timeout"
        return True

    def timeout_of(self, request_id: str) -> float | None:
        """How long the pending request ``request_id`` may wait, as its asker said (None: no limit)."""
        entry = self._entries.get(request_id)
        return entry.timeout if entry is not None else None

    def check_arguments(self, request_id: str, arguments: Mapping[str, Any]) -> None:
        """Check edited arguments for a pending request as approving them would; raises saying why not."""
        entry = self._entries.get(request_id)
        if entry is None:
            raise ValidationError(f"request {request_id!r} is not pending")
        if entry.check is not None:
            entry.check(arguments)

    # -- asking ---------------------------------------------------------------------------------------

    async def ask(
        self,
        request: InboxRequest,
        *,
        timeout: float | None = None,
        signal: CancelSignal | None = None,
        check: ArgumentsCheck | None = None,
    ) -> Any:
        """Queue ``request`` and wait for its answer, at most ``timeout`` seconds.

        Returns the answer (for a tool call an :class:`ApprovalDecision`), ``"timeout"``, or ``"withdrawn"``
        (withdrawn, or ``signal`` cancelled). The answerer is consulted for every kind it answers
        (:func:`answers`); one that fails, or gives a tool call anything but an :class:`ApprovalDecision`,
        or another kind an answer without ``approves``, refuses (:class:`Refusal`; a tool call: a deny).
        ``check`` validates edited arguments for :meth:`check_arguments`. The request leaves the inbox
        however the wait ends, cancellation of the asking task included.
        """
        loop = asyncio.get_running_loop()
        entry = _Entry(request, loop.create_future(), loop.create_future(), check, timeout=timeout)
        self._entries[request.request_id] = entry
        if self.timed_elsewhere is not None and self.timed_elsewhere(request):
            timeout = None
        _notify(self._added, request)
        consult = self.answerer is not None and answers(self.answerer, request.kind)
        answering = asyncio.ensure_future(self._consult(entry)) if consult else None
        watching = asyncio.ensure_future(signal.wait()) if signal is not None else None
        waits = {entry.answered, entry.withdrawn} | ({watching} if watching is not None else set())
        try:
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if entry.answered in done:
                await asyncio.sleep(0)  # a denial sent in the same instant as an approval still counts
        finally:
            del self._entries[request.request_id]
            for future in (entry.answered, entry.withdrawn, watching, answering):
                if future is not None and not future.done():
                    future.cancel()
            if answering is not None:
                await asyncio.gather(answering, return_exceptions=True)
            _notify(self._ended, request)
        if entry.answered in done and entry.decisions:
            denials = [decision for decision in entry.decisions if not decision.approves]
            return denials[0] if denials else entry.decisions[0]
        return "timeout" if not done else entry.ended

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """The :class:`Approver` face of an inbox: wait with no deadline; unanswered means denied."""
        answer: Answer = await self.ask(request)
        if isinstance(answer, ApprovalDecision):
            return answer
        return ApprovalDecision(kind="deny", reason="The request ended without a decision")

    async def _consult(self, entry: _Entry) -> None:
        assert self.answerer is not None
        request = entry.request
        try:
            decision: Any = await self.answerer.decide(request)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("the approver failed on request %r", request.request_id)
            decision = _refused(request, "The approver failed to decide")
        tool_call = isinstance(request, ApprovalRequest)
        if (tool_call and not isinstance(decision, ApprovalDecision)) or not isinstance(
            getattr(decision, "approves", None), bool
        ):
            decision = _refused(request, "The approver gave an invalid decision")
        self.resolve(request.request_id, decision)


def _refused(request: InboxRequest, reason: str) -> ApprovalDecision | Refusal:
    if isinstance(request, ApprovalRequest):
        return ApprovalDecision(kind="deny", reason=reason)
    return Refusal(reason=reason)


def _listen(listeners: list[RequestListener], listener: RequestListener) -> Callable[[], None]:
    listeners.append(listener)
    return lambda: listeners.remove(listener) if listener in listeners else None


def _notify(listeners: list[RequestListener], request: InboxRequest) -> None:
    for listener in tuple(listeners):
        try:
            listener(request)
        except Exception:  # a failing listener must not lose the request
            logger.exception("inbox listener %r failed", listener)


__all__ = [
    "Answer",
    "Approver",
    "Ended",
    "Inbox",
    "InboxAnswer",
    "InboxRequest",
    "Refusal",
    "answers",
    "approver_name",
]
