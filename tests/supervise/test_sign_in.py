"""Sign-in as a request in the inbox: the browser coming back on the loopback, a cancel, a timeout.

The browser is played by an HTTP client that GETs the redirect URI with the code and state an
authorization server would have added; the decisions go to a real run journal.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest

from ditto_tui.errors import McpError
from ditto_tui.interaction.mcp.loopback import free_redirect_uri
from ditto_tui.supervise import Inbox, QueueApprover
from ditto_tui.supervise.journal import RunJournal, read_journal
from ditto_tui.supervise.sign_in import InboxAuthorizer, SignInAnswer, SignInRequest, sign_in_request

CODE = "code-Zx81-never-recorded"
STATE = "state-Qw52-never-recorded"


def authorization_url(redirect_uri: str, host: str = "auth.example.com", **extra: str) -> str:
    query = {
        "response_type": "code",
        "client_id": "ditto",
        "redirect_uri": redirect_uri,
        "state": STATE,
        "code_challenge": "abc",
        **extra,
    }
    return f"https://{host}/authorize?{urllib.parse.urlencode(query)}"


def decisions(journal: RunJournal) -> list[dict[str, Any]]:
    files = sorted(journal.directory.glob("*.jsonl"))
    if not files:
        return []
    return [dict(entry) for entry in read_journal(files[0]).client_requests()]


def journal_text(journal: RunJournal) -> str:
    return "".join(path.read_text(encoding="utf-8") for path in journal.directory.glob("*.jsonl"))


async def next_request(inbox: Inbox) -> SignInRequest:
    """The sign-in request once it is in the inbox (the listener is up by then)."""
    for _ in range(500):
        pending = inbox.pending_of(SignInRequest)
        if pending:
            return pending[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no sign-in request arrived")


async def browser_returns(request: SignInRequest, **query: str) -> httpx.Response:
    """What the browser does once the authorization server redirects it: GET the redirect URI."""
    async with httpx.AsyncClient() as client:
        return await client.get(f"{request.redirect_uri}?{urllib.parse.urlencode(query)}")


@pytest.fixture
def journal(tmp_path: Path) -> RunJournal:
    return RunJournal(tmp_path / "runs")


async def test_the_browser_coming_back_completes_the_sign_in_and_withdraws_the_request(
    journal: RunJournal,
) -> None:
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, recorder=journal)
    redirect = free_redirect_uri()
    task = asyncio.ensure_future(sign_in("notes", authorization_url(redirect)))
    request = await next_request(inbox)
    assert (request.server, request.host, request.url_allowed) == ("notes", "auth.example.com", True)
    assert request.redirect_uri == redirect and request.kind == "sign_in"
    page = await browser_returns(request, code=CODE, state=STATE)
    assert page.status_code == 200 and "Signed in" in page.text
    redirected = await asyncio.wait_for(task, 10)
    assert redirected == f"{redirect}?code={CODE}&state={STATE}"
    assert inbox.all_pending() == [] and request.progress.outcome == "signed_in"
    assert decisions(journal) == [
        {
            "server": "notes",
            "request": "sign_in",
            "decision": "signed_in",
            "by": "person",
            "host": "auth.example.com",
        }
    ]


async def test_a_cancel_fails_the_sign_in_and_stops_listening(journal: RunJournal) -> None:
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, recorder=journal)
    task = asyncio.ensure_future(sign_in("notes", authorization_url(free_redirect_uri())))
    request = await next_request(inbox)
    assert inbox.resolve(request.request_id, SignInAnswer())
    with pytest.raises(McpError, match="the sign-in was cancelled"):
        await asyncio.wait_for(task, 10)
    assert request.progress.outcome == "cancel"
    assert [(d["decision"], d["by"]) for d in decisions(journal)] == [("cancel", "person")]
    with pytest.raises(httpx.ConnectError):
        await browser_returns(request, code=CODE, state=STATE)


async def test_no_browser_in_time_is_a_timeout(journal: RunJournal) -> None:
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, recorder=journal, timeout=0.3)
    with pytest.raises(McpError, match=r"0\.3 s"):
        await sign_in("notes", authorization_url(free_redirect_uri()))
    assert inbox.all_pending() == []
    assert [(d["decision"], d["by"]) for d in decisions(journal)] == [("timeout", "timeout")]


async def test_a_refusal_from_the_authorization_server_is_returned_and_recorded(journal: RunJournal) -> None:
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, recorder=journal)
    task = asyncio.ensure_future(sign_in("notes", authorization_url(free_redirect_uri())))
    request = await next_request(inbox)
    await browser_returns(request, error="access_denied", state=STATE)
    assert "error=access_denied" in await asyncio.wait_for(task, 10)
    assert [(d["decision"], d["error"]) for d in decisions(journal)] == [("refused", "access_denied")]


async def test_a_redirect_uri_that_is_not_on_the_loopback_is_refused_before_asking() -> None:
    inbox = QueueApprover()
    seen: list[Any] = []
    inbox.on_request(seen.append)
    url = authorization_url("https://evil.example/callback")
    with pytest.raises(McpError, match="not a 127.0.0.1 loopback address"):
        await InboxAuthorizer(inbox=inbox)("notes", url)
    assert seen == []


async def test_decisions_made_before_the_journal_is_attached_are_written_when_it_is(
    journal: RunJournal,
) -> None:
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, timeout=0.2)
    with pytest.raises(McpError):
        await sign_in("notes", authorization_url(free_redirect_uri()))
    assert decisions(journal) == []
    sign_in.attach(journal)
    assert [d["decision"] for d in decisions(journal)] == ["timeout"]


async def test_a_port_already_taken_fails_the_sign_in_at_once(journal: RunJournal) -> None:
    redirect = free_redirect_uri()
    port = urllib.parse.urlsplit(redirect).port
    holder = await asyncio.start_server(lambda r, w: None, "127.0.0.1", port)
    try:
        inbox = QueueApprover()
        with pytest.raises(McpError, match="cannot listen"):
            await InboxAuthorizer(inbox=inbox, recorder=journal)("notes", authorization_url(redirect))
    finally:
        holder.close()
        await holder.wait_closed()
    assert [d["decision"] for d in decisions(journal)] == ["failed"]


def test_a_look_alike_host_is_shown_in_punycode_and_a_hostile_url_is_not_offered() -> None:
    redirect = "http://127.0.0.1:9/callback"
    look_alike = sign_in_request(
        "r1", "notes", authorization_url(redirect, host="аuth.example.com"), redirect
    )
    assert look_alike.host == "xn--uth-5cd.example.com" and look_alike.url_allowed is False
    hostile = authorization_url(redirect) + "&x=\x1b]52;c;Zm9v\x07\u202e"
    request = sign_in_request("r2", "notes", hostile, redirect)
    assert request.host == "auth.example.com" and request.url_allowed is False


async def test_e03_no_code_or_state_reaches_the_journal(journal: RunJournal) -> None:
    """ADVERSARIAL E-03: the redirected URL carries the code and state; the record keeps neither."""
    inbox = QueueApprover()
    sign_in = InboxAuthorizer(inbox=inbox, recorder=journal)
    task = asyncio.ensure_future(sign_in("notes", authorization_url(free_redirect_uri())))
    await browser_returns(await next_request(inbox), code=CODE, state=STATE)
    await asyncio.wait_for(task, 10)
    text = journal_text(journal)
    assert "sign_in" in text and CODE not in text and STATE not in text
    assert "redirect_uri" not in json.dumps(decisions(journal))
