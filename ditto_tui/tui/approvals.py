"""The approval desk: pending requests shown one at a time over whatever screen is open, oldest first.

Tool calls open the approval view; an MCP server's sampling request, the model's answer to it, an
elicitation and a sign-in open their own views; all come from the one inbox, in the order they arrived.
While none is open, the desk tells the app how many wait (the pending badge on every screen shows it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from textual.app import App
from textual.worker import Worker

from ditto_tui.runtime import ApprovalResolved, ExecutionEvent
from ditto_tui.supervise import ApprovalRequest, InboxRequest
from ditto_tui.tui.bridge import FRAME_SECONDS, RunBridge
from ditto_tui.tui.screens.approval import ApprovalModal
from ditto_tui.tui.screens.confirm import ConfirmModal
from ditto_tui.tui.widgets.inline import visible as one_line_text

_GRANT_WAIT_SECONDS = 2.0
"""How long the desk waits for the grant an "approve always" writes before it offers it to the queue."""

_ELSEWHERE_SECONDS = 0.5
"""How long an approval view whose request ended waits for the event that says how, before it closes."""

_EXPIRED = {"timeout": "no decision in time (APPROVAL_TIMEOUT)", "cancelled": "the call was cancelled"}


class ApprovalDesk:
    """Opens the approval view for each request the bridge queues and hands the decision back.

    A request that ends without a decision from the view (timeout, cancelled call) closes its view;
    the next one opens. One the user sets aside ("later") stays pending and is shown again by
    :meth:`reopen`. The open view always shows the whole queue.

    ``on_waiting(count)`` hears :meth:`waiting` at most once a frame, after a request arrived or ended
    or a view opened or closed.
    """

    def __init__(
        self, app: App[Any], bridge: RunBridge, on_waiting: Callable[[int], object] | None = None
    ) -> None:
        self.app = app
        self.bridge = bridge
        self.open: ApprovalModal | None = None
        self.asking: Any = None
        self.deferred: set[str] = set()
        self.on_waiting = on_waiting
        self._worker: Worker[None] | None = None
        self._telling = False
        bridge.approver.on_end(self._ended)

    def _ended(self, request: InboxRequest) -> None:
        self._changed()
        view = self.asking
        if view is not None and view.request.request_id == request.request_id:
            view.expire("the request ended (timed out or withdrawn)")
        if self.open is not None and self.open.request.request_id == request.request_id:
            # its event says how it ended (timeout, cancelled) within a frame or two; a decision made
            # elsewhere (another terminal, on a durable host) has no word for this view: close it then
            self.app.set_timer(_ELSEWHERE_SECONDS, lambda: self._ended_elsewhere(request.request_id))

    def _ended_elsewhere(self, request_id: str) -> None:
        view = self.open
        if view is not None and view.request.request_id == request_id:
            view.expire("it was answered elsewhere, or ended")

    def waiting(self) -> int:
        """How many requests wait with no view showing them: set aside, or with no view on its way."""
        if self.open is not None or self.asking is not None:
            return 0
        showing = self._worker is not None and not self._worker.is_finished
        if showing and self._next() is not None:
            return 0
        return len(self.bridge.approver.all_pending())

    def _changed(self) -> None:
        """Tell ``on_waiting`` one frame from now (whatever else changes meanwhile rides along)."""
        if self.on_waiting is None or self._telling:
            return
        self._telling = True
        self.app.set_timer(FRAME_SECONDS, self._tell, name="decisions waiting")

    def _tell(self) -> None:
        self._telling = False
        if self.on_waiting is not None:
            self.on_waiting(self.waiting())

    def reopen(self) -> None:
        """Show the requests the user set aside with "later" again, oldest first."""
        self.deferred.clear()
        self.request_queued()

    def request_queued(self) -> None:
        """A request arrived: open the view, or add it to the queue the open view shows."""
        self._changed()
        if self.open is not None:
            self.open.update_queue(self.bridge.pending())
        if self._worker is None or self._worker.is_finished:
            self._worker = self.app.run_worker(
                self._answer(), name="approvals", group="approvals", exit_on_error=False
            )

    def events_arrived(self, events: Iterable[ExecutionEvent]) -> None:
        """Close the open view if its request ended elsewhere; otherwise refresh its queue."""
        view = self.open
        if view is None:
            return
        for event in events:
            if isinstance(event, ApprovalResolved) and event.request_id == view.request.request_id:
                if event.decision in _EXPIRED:
                    view.expire(_EXPIRED[event.decision])
                else:  # decided while the view showed it: in another terminal, or by a grant
                    view.expire(f"it was decided elsewhere ({event.decision}, by {event.decided_by})")
                return
        view.update_queue(self.bridge.pending())

    def _next(self) -> InboxRequest | None:
        pending = self.bridge.approver.all_pending()
        return next((r for r in pending if r.request_id not in self.deferred), None)

    async def _answer(self) -> None:
        while (request := self._next()) is not None:
            if not isinstance(request, ApprovalRequest):
                await self._answer_server(request)
                continue
            self.open = ApprovalModal(request, self.bridge)
            self._changed()
            try:
                decision = await self.app.push_screen_wait(self.open)
            finally:
                self.open = None
                self._changed()
            if decision is None:
                if any(r.request_id == request.request_id for r in self.bridge.pending()):
                    self.deferred.add(request.request_id)
            elif not self.bridge.resolve(request.request_id, decision):
                self.app.notify("The decision came too late: the request had already ended.", markup=False)
            elif decision.kind == "approve_always":
                await self._offer_batch(request)
            self.app.refresh_bindings()

    async def _offer_batch(self, request: ApprovalRequest) -> None:
        """Once the grant the decision wrote is saved, offer to apply it to the pending calls it covers."""
        gate = self.bridge.gate
        if gate is None:
            return
        grant = await gate.written_grant(request.request_id, _GRANT_WAIT_SECONDS)
        covered = gate.covered(grant) if grant is not None else []
        if grant is None or not covered:
            return
        shown = "\n".join(f"  {one_line_text(r.tool)} {_arguments_line(r)}" for r in covered[:5])
        more = f"\n  … and {len(covered) - 5} more" if len(covered) > 5 else ""
        question = (
            f"Grant {grant.id} ({one_line_text(grant.describe())}) also covers {len(covered)} pending "
            f"request{'s' if len(covered) != 1 else ''}:\n{shown}{more}\nApprove them now?"
        )
        confirmed = await self.app.push_screen_wait(ConfirmModal("Apply the grant to the queue", question))
        if confirmed:
            approved = gate.apply_grant(grant.id)
            self.app.notify(
                f"Grant {grant.id} approved {approved} pending request{'s' if approved != 1 else ''}.",
                markup=False,
            )

    async def _answer_server(self, request: InboxRequest) -> None:
        """A request of an MCP server (sampling, its answer, elicitation, sign-in) in its own view."""
        view = _server_view(request, self.bridge)
        self.asking = view
        self._changed()
        try:
            answer = await self.app.push_screen_wait(view)
        finally:
            self.asking = None
            self._changed()
        inbox = self.bridge.approver
        if answer is None:
            if inbox.get(request.request_id) is not None:
                self.deferred.add(request.request_id)
        elif not inbox.resolve(request.request_id, answer):
            self.app.notify("The answer came too late: the request had already ended.", markup=False)
        self.app.refresh_bindings()


def _server_view(request: InboxRequest, bridge: RunBridge) -> Any:
    """The view that answers ``request`` (its modules load only when a server asks)."""
    from ditto_tui.runtime.breakpoints import BreakpointRequest
    from ditto_tui.supervise.mcp_requests import ElicitationRequest, SamplingRequest, SamplingResultReview
    from ditto_tui.supervise.requests import ReviewRequest
    from ditto_tui.supervise.sign_in import SignInRequest

    if isinstance(request, SignInRequest):
        from ditto_tui.tui.screens.sign_in import SignInModal

        return SignInModal(request)

    def check(value: Mapping[str, Any]) -> None:
        bridge.approver.check_arguments(request.request_id, value)

    if isinstance(request, BreakpointRequest):
        from ditto_tui.tui.screens.breakpoint import BreakpointModal

        return BreakpointModal(request, check)
    if isinstance(request, ReviewRequest):
        from ditto_tui.tui.screens.review import ReviewModal

        return ReviewModal(request, check)
    if isinstance(request, ElicitationRequest):
        from ditto_tui.tui.screens.elicitation import ElicitationModal

        return ElicitationModal(request, check)
    from ditto_tui.tui.screens.sampling import SamplingModal

    if not isinstance(request, SamplingRequest | SamplingResultReview):
        raise TypeError(f"no view answers a {request.kind!r} request")
    return SamplingModal(request, check)


def _arguments_line(request: ApprovalRequest, limit: int = 50) -> str:
    text = json.dumps(dict(request.call.arguments or {}), ensure_ascii=False, sort_keys=True)
    return one_line_text(text if len(text) <= limit else text[: limit - 1] + "…")
