"""A run host's waiting requests, asked in this process's inbox: the cross-run inbox of the app.

:class:`PendingMirror` polls :meth:`RunHost.pending` and asks each request that is not this process's own
in a local :class:`~ditto_tui.supervise.Inbox`, so the approval desk shows it as it shows a request of its
own run. The person's answer goes back through :meth:`RunHost.decide` (the host's checks: a stale or
mismatched decision is refused and said); a request that leaves the host's list (answered from another
terminal, timed out, its run ended) is withdrawn here, closing its view.

A request this process raised itself (its worker runs the node) is already in the inbox: it is told
apart by ``key`` (for a durable host, what binds a request to its call, so a request asked again after
a worker's restart is one request, not two).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ditto_tui.runs import DecisionRejected, PendingRequest, Resolution, RunHost
from ditto_tui.supervise.inbox import Inbox, InboxRequest

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
"""How often the host's waiting requests are read."""
_REMEMBERED = 10_000
"""How many ended requests are remembered, so a host listing one late does not ask it again."""


def _request_id(request: InboxRequest) -> str:
    return request.request_id


class PendingMirror:
    """Asks ``host``'s waiting requests in ``inbox`` and sends the answers back to the host.

    ``on_rejected(request, reason)`` hears a decision the host refused; ``on_decided(resolution)`` one it
    applied (queued or not); ``on_failed(error)`` a listing that failed (the next poll tries again).
    """

    def __init__(
        self,
        host: RunHost,
        inbox: Inbox,
        *,
        key: Callable[[InboxRequest], str] = _request_id,
        interval: float = POLL_SECONDS,
        on_rejected: Callable[[InboxRequest, str], object] | None = None,
        on_decided: Callable[[Resolution], object] | None = None,
        on_failed: Callable[[BaseException], object] | None = None,
    ) -> None:
        self.host, self.inbox, self.key, self.interval = host, inbox, key, interval
        self.on_rejected, self.on_decided, self.on_failed = on_rejected, on_decided, on_failed
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._stop = inbox.on_end(self._forget)
        self.failures = 0
        """How many polls in a row have failed (0 once one succeeds)."""

    @property
    def asking(self) -> int:
        """How many of the host's requests are asked here now."""
        return len(self._asking)

    def mirrored(self, request_id: str) -> bool:
        """Whether request ``request_id`` is one of the host's, asked here by this mirror now."""
        return request_id in self._asking

    async def run(self) -> None:
        """Poll until cancelled; a failed poll is reported once per failure and tried again."""
        try:
            while True:
                try:
                    await self.sync()
                    self.failures = 0
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.failures += 1
                    logger.warning("listing the run host's requests failed: %s", exc)
                    if self.on_failed is not None:
                        self.on_failed(exc)
                await asyncio.sleep(self.interval)
        finally:
            await self.close()

    async def sync(self) -> None:
        """Read the host's waiting requests once: ask the new ones here, withdraw the ended ones."""
        waiting = await self.host.pending()
        listed = {item.request_id for item in waiting}
        own = {self.key(request) for request in self.inbox.all_pending()}
        for item in waiting:
            rid = item.request_id
            if rid in self._asking or rid in self._ended or self.inbox.get(rid) is not None:
                continue
            if self.key(item.request) in own:  # this process asked it: it is answered here already
                continue
            self._asking[rid] = asyncio.ensure_future(self._ask(item))
        for rid, task in list(self._asking.items()):
            if rid not in listed and not task.done():
                self.inbox.withdraw(rid)  # answered elsewhere, timed out, or its run ended

    async def _ask(self, item: PendingRequest) -> None:
        rid = item.request_id
        try:
            answer: Any = await self.inbox.ask(item.request)
            if answer in ("timeout", "withdrawn"):
                return
            try:
                resolution = await self.host.decide(rid, answer, decided_by="human")
            except DecisionRejected as exc:
                if self.on_rejected is not None:
                    self.on_rejected(item.request, exc.reason)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # not sent: ask it again at the next poll
                logger.warning("decision on %s not sent: %s", rid, exc)
                self._ended.pop(rid, None)
                if self.on_failed is not None:
                    self.on_failed(exc)
                return
            if self.on_decided is not None:
                self.on_decided(resolution)
        finally:
            self._asking.pop(rid, None)

    def _forget(self, request: InboxRequest) -> None:
        """Remember that ``request`` ended here, so a listing that still shows it does not ask it again."""
        self._ended[request.request_id] = None
        while len(self._ended) > _REMEMBERED:
            self._ended.popitem(last=False)

    async def close(self) -> None:
        """Stop asking: the requests asked here are withdrawn here (they stay waiting on the host)."""
        self._stop()
        tasks = list(self._asking.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._asking.clear()


__all__ = ["POLL_SECONDS", "PendingMirror"]
