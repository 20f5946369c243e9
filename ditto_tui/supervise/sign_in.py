"""Signing in to an MCP server as a request in the inbox: the person opens the URL, the browser comes back.

A server that asks for OAuth sends the person to its authorization server. :class:`InboxAuthorizer` is
the ``authorize`` of ``open_mcp_servers`` (API.md §7) in a session with a person: it listens on the
127.0.0.1 redirect URI the authorization URL names, puts a :class:`SignInRequest` in the inbox for a
screen to show, and when the browser comes back with the authorization URL's state it withdraws the
request and returns the URL the browser was sent to. The person may cancel instead, or the wait may
time out: then the sign-in fails with :class:`~ditto_tui.errors.McpError`. Each outcome goes on the
record with the server and the authorization server's host, never the redirected URL (it carries the
authorization code and the state) nor any token. With no person to ask, the MCP client's
``refuse_sign_in`` takes this one's place.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ditto_tui.errors import DittoError, McpError
from ditto_tui.interaction.mcp.loopback import SIGN_IN_SECONDS, await_redirect, redirect_uri_of, state_of
from ditto_tui.supervise.inbox import Inbox
from ditto_tui.supervise.mcp_requests import RequestRecorder, plain_host, url_host

logger = logging.getLogger(__name__)

Outcome = Literal["signed_in", "refused", "cancel", "timeout", "failed"]
"""How a sign-in ended: the browser came back with a code or with the authorization server's refusal, the
person cancelled, nobody came back in time, or the redirect could not be listened for."""

_ERROR_CODE = re.compile(r"[a-z_]{1,64}")


@dataclass(eq=False)
class SignInProgress:
    """How a sign-in ended, set before its request leaves the inbox, so the view can say so."""

    outcome: Outcome | None = None


@dataclass(frozen=True, kw_only=True)
class SignInRequest:
    """An MCP server needs the person to sign in at ``url`` (its authorization server's address).

    ``url`` is untrusted text. ``host`` is its host made plain (:func:`plain_host`) and ``url_allowed``
    whether it is a plain http(s) URL that may be opened in a browser (:func:`url_host`).
    ``redirect_uri`` is the 127.0.0.1 address the browser comes back to.
    """

    request_id: str
    server: str
    url: str
    host: str | None
    url_allowed: bool
    redirect_uri: str
    progress: SignInProgress = field(default_factory=SignInProgress)

    kind: ClassVar[Literal["sign_in"]] = "sign_in"


@dataclass(frozen=True, kw_only=True)
class SignInAnswer:
    """The person's answer to a sign-in request: cancel it (the browser coming back completes it)."""

    reason: str | None = None

    @property
    def approves(self) -> bool:
        """A cancellation lets nothing go ahead."""
        return False


def sign_in_request(request_id: str, server: str, url: str, redirect_uri: str) -> SignInRequest:
    """The request the inbox shows for a sign-in at ``url``."""
    _, allowed = url_host(url)
    return SignInRequest(
        request_id=request_id,
        server=server,
        url=url,
        host=plain_host(url),
        url_allowed=allowed,
        redirect_uri=redirect_uri,
    )


@dataclass(eq=False, kw_only=True)
class InboxAuthorizer:
    """The ``authorize(server, authorization_url)`` of a session with a person: the sign-in in the inbox.

    ``timeout`` bounds the wait for the browser (and for the person). Decisions go to ``recorder``; those
    made before it is attached (:meth:`attach`) are written when it is.
    """

    inbox: Inbox
    recorder: RequestRecorder | None = None
    timeout: float = SIGN_IN_SECONDS
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _unrecorded: list[Mapping[str, Any]] = field(default_factory=list)

    def attach(self, recorder: RequestRecorder | None) -> None:
        """Record from now on to ``recorder``, starting with the decisions made before it was there."""
        self.recorder = recorder
        if recorder is None:
            return
        waiting, self._unrecorded = self._unrecorded, []
        for entry in waiting:
            try:
                recorder.record_client_request(entry)
            except DittoError as exc:
                logger.warning("a sign-in decision could not be recorded: %s", exc.message)

    async def __call__(self, server: str, authorization_url: str) -> str:
        """Show the sign-in and wait for the browser; the URL it came back to, or :class:`McpError`."""
        redirect_uri, state = redirect_uri_of(authorization_url), state_of(authorization_url)
        request = sign_in_request(f"mcp-sign-in-{next(self._ids)}", server, authorization_url, redirect_uri)
        listening = asyncio.Event()
        came_back = asyncio.ensure_future(
            await_redirect(redirect_uri, state=state, timeout=self.timeout, listening=listening.set)
        )
        started = asyncio.ensure_future(listening.wait())
        asking: asyncio.Future[Any] | None = None
        try:
            await asyncio.wait({came_back, started}, return_when=asyncio.FIRST_COMPLETED)
            if not came_back.done():
                asking = asyncio.ensure_future(self.inbox.ask(request, timeout=self.timeout))
                await asyncio.wait({came_back, asking}, return_when=asyncio.FIRST_COMPLETED)
            if came_back.done():
                return self._came_back(request, came_back, listening=listening.is_set())
            assert asking is not None
            raise self._unanswered(request, asking.result())
        finally:
            await _stop(started, came_back, asking)

    def _came_back(self, request: SignInRequest, came_back: asyncio.Future[str], *, listening: bool) -> str:
        """The browser came back, or the listener gave up (out of time once it listened, else it could not
        listen): end the request and put it on the record."""
        try:
            redirected = came_back.result()
        except McpError:
            self._end(request, "timeout" if listening else "failed")
            raise
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(redirected).query)
        error = (query.get("error") or [""])[0]
        if error:
            self._end(request, "refused", error=error if _ERROR_CODE.fullmatch(error) else "other")
        else:
            self._end(request, "signed_in")
        return redirected

    def _unanswered(self, request: SignInRequest, answer: object) -> McpError:
        """The request ended before the browser came back: cancelled by the person, or out of time."""
        if isinstance(answer, SignInAnswer) or answer == "withdrawn":
            self._end(request, "cancel")
            return McpError("the sign-in was cancelled")
        self._end(request, "timeout")
        return McpError(f"the sign-in got no answer within {self.timeout:g} s")

    def _end(self, request: SignInRequest, outcome: Outcome, **fields: str) -> None:
        request.progress.outcome = outcome
        self.inbox.withdraw(request.request_id)
        by = "timeout" if outcome == "timeout" else "person"
        self._record(
            {"server": request.server, "request": "sign_in", "decision": outcome, "by": by}
            | {"host": request.host or "", **fields}
        )

    def _record(self, entry: Mapping[str, Any]) -> None:
        if self.recorder is None:
            self._unrecorded.append(entry)
            return
        try:
            self.recorder.record_client_request(entry)
        except DittoError as exc:
            raise McpError("the sign-in could not be recorded, so it was not completed") from exc


async def _stop(*futures: asyncio.Future[Any] | None) -> None:
    for future in futures:
        if future is not None and not future.done():
            future.cancel()
    for future in futures:
        if future is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await future


__all__ = [
    "InboxAuthorizer",
    "Outcome",
    "SignInAnswer",
    "SignInProgress",
    "SignInRequest",
    "plain_host",
    "sign_in_request",
]
