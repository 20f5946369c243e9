"""Webhook notifications (``notify:`` in ``ditto.yaml``): a request waiting, a request that timed out, a
run that finished, POSTed as ``json``, ``ntfy`` or ``slack``, with the request's decision link.

A notification never holds a run, the app or the exit: :meth:`Webhooks.send` only queues it (a bounded
queue; past :data:`QUEUE_LIMIT` the oldest is dropped and counted), and one background task POSTs them
in order, each within ``timeoutSeconds``, retried ``retries`` times with a growing pause. Failures are
counted and logged (the host only: a webhook URL is a secret), never raised. A request's arguments are
left out unless ``includeArguments`` says otherwise; every text is the request's summary as ditto-tui
shows it, with control characters escaped, and for Slack with its markup characters escaped too.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ditto_tui.sanitize import escape_unprintable

if TYPE_CHECKING:
    import httpx

    from ditto_tui.config import NotifyConfig

QUEUE_LIMIT = 1000
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0)
log = logging.getLogger("ditto_tui.webhooks")

TITLES = {
    "pending": "ditto-tui: a decision waits",
    "timed_out": "ditto-tui: a request timed out",
    "run_finished": "ditto-tui: a run finished",
}


@dataclass(frozen=True, kw_only=True)
class Notice:
    """One notification: its event, a one-line summary, and what it is about."""

    event: str
    summary: str
    run_id: str | None = None
    request_id: str | None = None
    link: str | None = None
    arguments: Mapping[str, Any] | None = None
    status: str | None = None
    at: float = field(default_factory=time.time)


def timed_out(summary: str, run_id: str | None, request_id: str) -> Notice:
    """The notice of a request that ended by its timeout (``summary``: the request's, as listed)."""
    return Notice(event="timed_out", summary=f"timed out: {summary}", run_id=run_id, request_id=request_id)


def _slack_text(text: str) -> str:
    """Text Slack shows as written: ``&``, ``<`` and ``>`` escaped (no mention, no link markup)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message(notice: Notice, form: str, include_arguments: bool) -> tuple[bytes, dict[str, str]]:
    """The POST body and headers of ``notice`` in ``form``."""
    summary = escape_unprintable(notice.summary)
    arguments = dict(notice.arguments) if include_arguments and notice.arguments is not None else None
    if form == "ntfy":
        lines = [summary]
        if arguments is not None:
            lines.append(escape_unprintable(json.dumps(arguments, ensure_ascii=False)))
        if notice.link:
            lines.append(notice.link)
        headers = {"Title": TITLES[notice.event], "Tags": "ditto-tui," + notice.event}
        if notice.link:
            headers["Click"] = notice.link
            headers["Actions"] = f"view, Decide, {notice.link}"
        return "\n".join(lines).encode(), headers
    if form == "slack":
        text = f"*{_slack_text(TITLES[notice.event])}*\n{_slack_text(summary)}"
        if arguments is not None:
            text += (
                "\n```" + _slack_text(escape_unprintable(json.dumps(arguments, ensure_ascii=False))) + "```"
            )
        if notice.link:
            text += f"\n<{notice.link}|Decide>"
        body = {"text": text, "unfurl_links": False, "unfurl_media": False}
        return json.dumps(body).encode(), {"Content-Type": "application/json"}
    item: dict[str, Any] = {"event": notice.event, "summary": summary, "at": notice.at}
    for name in ("run_id", "request_id", "link", "status"):
        if getattr(notice, name) is not None:
            item[name] = getattr(notice, name)
    if arguments is not None:
        item["arguments"] = arguments
    return json.dumps(item, ensure_ascii=False).encode(), {"Content-Type": "application/json"}


class Webhooks:
    """Sends :class:`Notice` s to the configured webhook in the background (see the module docstring)."""

    def __init__(self, config: NotifyConfig, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._client = client
        self._queue: collections.deque[Notice] = collections.deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._owned = False
        """Whether the HTTP client is this object's own (made on first use), to close with it."""
        self.sent = 0
        self.failed = 0
        self.dropped = 0

    @property
    def enabled(self) -> bool:
        return self.config.webhook is not None

    def wants(self, event: str) -> bool:
        return self.enabled and event in self.config.on

    def send(self, notice: Notice) -> None:
        """Queue ``notice`` (when its event is wanted) and return at once."""
        if not self.wants(notice.event):
            return
        if len(self._queue) >= QUEUE_LIMIT:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(notice)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._deliver())
        self._wake.set()

    async def drain(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the queue to empty (at exit), then stop."""
        deadline = time.monotonic() + seconds
        while self._queue and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await self.close()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._client is not None and self._owned:
            await self._client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
            self._owned = True
        return self._client

    async def _deliver(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            notice = self._queue[0]
            await self._post(notice)
            if self._queue and self._queue[0] is notice:
                self._queue.popleft()

    async def _post(self, notice: Notice) -> None:
        url = self.config.webhook
        assert url is not None
        body, headers = message(notice, self.config.format, self.config.include_arguments)
        where = urllib.parse.urlsplit(url).hostname
        for attempt in range(self.config.retries + 1):
            try:
                answer = await self._http().post(
                    url, content=body, headers=headers, timeout=self.config.timeout_seconds
                )
                if answer.status_code < 400:
                    self.sent += 1
                    return
                problem = f"HTTP {answer.status_code}"
                if 400 <= answer.status_code < 500 and answer.status_code not in (408, 429):
                    break  # the request itself is refused: sending it again changes nothing
            except Exception as exc:  # a dead, slow or odd webhook: never the caller's problem
                problem = type(exc).__name__
            if attempt < self.config.retries:
                await asyncio.sleep(BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)])
        self.failed += 1
        log.warning("webhook notification to %s failed (%s): %s", where, problem, notice.event)


class RunEvents:
    """A runtime subscriber that notifies what a run of this process asks and how it ends: a tool call
    waiting (``pending``), one that timed out (``timed_out``), a run of a graph or loop that finished
    (``run_finished``; a single invoke's run is not one). For the app's embedded runs: on a durable host
    ``ditto-tui serve`` notifies, with each request's decision link."""

    def __init__(self, webhooks: Webhooks) -> None:
        self.webhooks = webhooks
        self._runs: set[str] = set()

    def __call__(self, event: Any) -> None:
        kind = event.kind
        if kind == "run_started" and event.plan_kind != "invoke":
            self._runs.add(event.run_id)
        elif kind == "approval_requested":
            summary = f"approve {event.tool} ({event.call_id})"
            arguments = event.arguments if isinstance(event.arguments, Mapping) else None
            self.webhooks.send(
                Notice(
                    event="pending",
                    summary=summary,
                    run_id=event.run_id,
                    request_id=event.request_id,
                    arguments=arguments,
                )
            )
        elif kind == "approval_resolved" and event.decision == "timeout":
            summary = f"approve {event.tool} ({event.call_id})"
            self.webhooks.send(timed_out(summary, event.run_id, event.request_id))
        elif kind == "run_finished" and event.run_id in self._runs:
            self._runs.discard(event.run_id)
            summary = f"run {event.run_id} {event.status}"
            self.webhooks.send(
                Notice(event="run_finished", summary=summary, run_id=event.run_id, status=event.status)
            )
