"""Decision links (ADVERSARIAL X-08 … X-12): with ``ditto-tui serve`` on a durable host, each waiting tool
call gets a signed page that answers it through ``RunHost.decide``, as a person's decision.

A real local run server, a detached run of the write-note graph and a worker (each its own process, as a
user runs them), and a real ``ditto-tui serve`` printing each request's link. The phone is Debian's
Chromium at 390×844, without JavaScript.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import select
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from ditto_tui.links import decision_path, link_key, signature
from ditto_tui.runtime.events import ApprovalResolved
from ditto_tui.serve import request_page, write_diff
from ditto_tui.supervise import read_journal
from tests.journal.journal_fixtures import journals
from tests.runs.workspace import NOTE, Workspace
from tests.serve.receiver import Receiver, receiver
from tests.serve.test_serve_browser import ARTIFACTS, chromium
from tests.serve.test_serve_door import Served, start_serve, stop_serve

LINK_SECONDS = 60.0


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    folder = tmp_path_factory.mktemp("links")
    root = folder / "project"
    root.mkdir()
    given = Workspace(root, folder / "home")
    yield given
    given.close()


TIMED = "approval:\n  rules:\n    - tool: write_text\n      decision: ask\n      timeoutSeconds: 3\n"
"""A policy (a worker's ``--policy``) whose approvals of the write time out in 3 s."""


@pytest.fixture(scope="module")
def hook() -> Iterator[Receiver]:
    with receiver() as running:
        yield running


@pytest.fixture(scope="module")
def served(workspace: Workspace, hook: Receiver) -> Iterator[Served]:
    """serve on the workspace's config with a webhook (``--config``: the trusted file plus ``notify:``)."""
    config = workspace.root.parent / "with-webhook.yaml"
    notify = f"notify:\n  webhook: {hook.url}\n"
    config.write_text((workspace.root / "ditto.yaml").read_text() + notify)
    (workspace.root.parent / "timed.yaml").write_text(TIMED)
    running = start_serve(workspace.root, workspace.home, "--config", str(config))
    assert running.process.stdout is not None
    running.process.stdout.readline()  # "Ctrl+C here, or ..."
    yield running
    stop_serve(running)


@pytest.fixture(autouse=True)
def fresh(workspace: Workspace) -> Iterator[None]:
    yield
    workspace.stop_workers()
    (workspace.root / NOTE).unlink(missing_ok=True)


def next_link(served: Served) -> tuple[str, str]:
    """The next ``waiting: SUMMARY: URL`` line serve prints: (summary, path with query)."""
    stream = served.process.stdout
    assert stream is not None
    deadline = time.monotonic() + LINK_SECONDS
    while time.monotonic() < deadline:
        readable, _, _ = select.select([stream], [], [], 0.5)
        if readable:
            line = stream.readline()
            found = re.match(r"waiting: (.+): (http://\S+)$", line.strip())
            if found:
                return found.group(1), found.group(2)[len(served.origin) :]
    pytest.fail("serve printed no decision link")


def waiting_run(workspace: Workspace, served: Served) -> tuple[str, str, str]:
    """A detached run waiting for its write's approval: (run id, request id, link path)."""
    run_id = workspace.cli("run", "graphs/write_note.py", "--detach").stdout.strip()
    workspace.worker()
    (waiting,) = workspace.waiting(run_id=run_id)
    summary, path = next_link(served)
    assert summary == waiting["summary"]
    assert path.startswith(f"/decide/{urllib.parse.quote(str(waiting['request_id']), safe='')}?")
    return run_id, str(waiting["request_id"]), path


def post(served: Served, path: str, form: dict[str, str]) -> httpx.Response:
    """The form's POST as the page sends it: from the served origin, no cookie."""
    with httpx.Client(base_url=served.origin) as client:
        return client.post(path, data=form, headers={"Origin": served.origin})


def key(workspace: Workspace) -> bytes:
    with workspace.home_env():
        from ditto_tui.runs.temporal.codec import load_key

        return link_key(load_key())


def test_a_link_approves_its_request_and_a_replay_decides_nothing(
    workspace: Workspace, served: Served, hook: Receiver
) -> None:
    run_id, request_id, path = waiting_run(workspace, served)
    shown = httpx.get(served.origin + path)  # no cookie: the link is the credential
    assert shown.status_code == 200 and "Approve write_text?" in shown.text
    assert "hello.md" in shown.text and "<form method='post'" in shown.text and "<script" not in shown.text
    assert "does not exist yet: the whole file is new" in shown.text  # the approval view's diff
    assert "<span class='add'>+# Hello</span>" in shown.text
    approved = post(served, path, {"decision": "approve"})
    assert approved.status_code == 200 and "Approved" in approved.text
    assert workspace.run_status(run_id) == "succeeded"
    assert (workspace.root / NOTE).read_text().startswith("# Hello")
    notices = [json.loads(post.body) for post in hook.posts]
    assert {"event": "pending", "request_id": request_id, "link": served.origin + path}.items() <= next(
        notice for notice in notices if notice.get("request_id") == request_id
    ).items()
    finished = wait_for(hook, lambda notice: notice["event"] == "run_finished" and notice["run_id"] == run_id)
    assert finished["status"] == "succeeded"
    with workspace.home_env():  # on the record as a person's decision, made from the link
        (part,) = [path for path in journals(workspace.root) if path.name.startswith(run_id)]
    events = read_journal(part).events
    (resolved,) = [e for e in events if isinstance(e, ApprovalResolved) and e.request_id == request_id]
    assert (resolved.decision, resolved.decided_by, resolved.via) == ("approve", "human", "link")
    audit = workspace.cli("audit", run_id).stdout
    assert "approve by" in audit and "via link" in audit
    # the same link again, to read or to answer: nothing left to decide, nothing decided
    assert httpx.get(served.origin + path).status_code == 410
    again = post(served, path, {"decision": "deny", "reason": "late"})
    assert again.status_code == 410 and "answered already" in again.text
    assert workspace.waiting(count=0) == []


def test_x08_x09_x10_x11_a_link_that_is_not_this_requests_valid_one_decides_nothing(
    workspace: Workspace, served: Served
) -> None:
    run_id, request_id, path = waiting_run(workspace, served)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    sig, exp = query["sig"][0], query["exp"][0]
    quoted = urllib.parse.quote(request_id, safe="")
    signing = key(workspace)
    past = str(int(time.time()) - 5)
    forged = {
        "cut": f"/decide/{quoted}?exp={exp}&sig={sig[:-3]}",
        "missing": f"/decide/{quoted}?exp={exp}",
        "other request": f"/decide/approval-forged-1?exp={exp}&sig={sig}",
        "moved expiry": f"/decide/{quoted}?exp={past}&sig={sig}",  # the expiry is signed
    }
    for name, forged_path in forged.items():
        for answer in (
            httpx.get(served.origin + forged_path),
            post(served, forged_path, {"decision": "approve"}),
        ):
            assert answer.status_code == 403, name
            assert "Traceback" not in answer.text
    expired = f"/decide/{quoted}?exp={past}&sig={signature(signing, request_id, past)}"
    for answer in (httpx.get(served.origin + expired), post(served, expired, {"decision": "approve"})):
        assert answer.status_code == 410 and "expired" in answer.text
    other_requests_link = decision_path(signing, "approval-other-2", None)  # valid, for another id
    mixed = other_requests_link.replace("approval-other-2", quoted)
    assert post(served, mixed, {"decision": "approve"}).status_code == 403
    foreign = httpx.post(
        served.origin + path, data={"decision": "approve"}, headers={"Origin": "http://attacker.example"}
    )
    assert foreign.status_code == 403  # a form on another site cannot answer, even with the link
    assert not (workspace.root / NOTE).exists()
    (still,) = workspace.waiting(run_id=run_id)
    assert still["request_id"] == request_id  # nothing was decided
    assert post(served, path, {"decision": "deny_with_reason", "reason": ""}).status_code == 400
    assert post(served, path, {"decision": "deny", "reason": "cleaning up"}).status_code == 200
    assert workspace.run_status(run_id) != "running"


def test_on_a_phone_a_link_denies_with_a_reason_without_javascript(
    workspace: Workspace, served: Served
) -> None:
    run_id, request_id, path = waiting_run(workspace, served)

    async def deny() -> str:
        from playwright.async_api import async_playwright

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            try:
                phone = await browser.new_context(
                    viewport={"width": 390, "height": 844}, java_script_enabled=False, is_mobile=True
                )
                page = await phone.new_page()
                await page.goto(served.origin + path)
                assert await page.locator("h1").inner_text() == "Approve write_text?"
                width = await page.evaluate("document.documentElement.scrollWidth")
                assert width <= 390  # nothing wider than the phone: no sideways scrolling
                await page.screenshot(path=ARTIFACTS / "4-phone-request.png", full_page=True)
                await page.fill("#reason", "not this file, please")
                await page.click("button[value=deny_with_reason]")
                await page.screenshot(path=ARTIFACTS / "5-phone-denied.png")
                return await page.locator("body").inner_text()
            finally:
                await browser.close()

    said = asyncio.run(deny())
    assert said.startswith("Denied") and "write_text" in said
    assert workspace.run_status(run_id) != "running"
    assert not (workspace.root / NOTE).exists()
    assert workspace.waiting(count=0) == []
    assert (ARTIFACTS / "4-phone-request.png").stat().st_size > 5_000


def test_x12_a_decision_page_shows_hostile_text_inert() -> None:
    request = SimpleNamespace(
        tool="write_text<script>alert(1)</script>",
        server="srv\x1b[31m",
        title="<img src=x onerror=alert(1)>",
        rule=None,
        protected=(".ditto/ditto.yaml",),
        effects=("write",),
        annotations={"readOnlyHint": "</pre><b>"},
        proposal="trust me \u202e gnp.exe",
        arguments={"path": "a.md", "text": "\x1b]8;;http://evil\x07click\x1b]8;;\x07 <b>bold</b>"},
    )
    pending = SimpleNamespace(request=request, run_id="run-1", created_at=0.0, expires_at=None)
    shown = request_page(pending, "/decide/x?exp=never&sig=y")
    for raw in ("<script>", "<img", "<b>", "\x1b", "\u202e", "</pre><b>"):
        assert raw not in shown, raw
    assert "&lt;script&gt;" in shown and "control files" in shown
    assert "\\u001b]8;;http://evil" in shown and "\\u202e gnp.exe" in shown  # shown, not acted on


def test_the_phone_page_has_no_script_and_loads_nothing(workspace: Workspace, served: Served) -> None:
    run_id, request_id, path = waiting_run(workspace, served)
    shown = httpx.get(served.origin + path)
    assert "<script" not in shown.text and "src=" not in shown.text and "href=" not in shown.text
    assert shown.headers["cache-control"] == "no-store" and shown.headers["referrer-policy"] == "same-origin"
    assert post(served, path, {"decision": "deny", "reason": "done"}).status_code == 200
    assert workspace.run_status(run_id) != "running"


def test_the_diff_is_against_the_current_file_and_never_reads_out_of_the_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "secret.txt"
    workspace.mkdir()
    (workspace / "notes.md").write_text("old line\nkept\n")
    outside.write_text("the secret\n")
    (workspace / "link.md").symlink_to(outside)

    def call(path: str, server: str | None = None) -> SimpleNamespace:
        arguments = {"path": path, "text": "new line\nkept\n"}
        return SimpleNamespace(server=server, effects=("write",), arguments=arguments)

    diff = write_diff(workspace, call("notes.md"))
    assert diff is not None and "Diff against the current notes.md" in diff
    assert "<span class='del'>-old line</span>" in diff and "<span class='add'>+new line</span>" in diff
    for escaping in ("../secret.txt", str(outside), "link.md"):
        refused = write_diff(workspace, call(escaping))
        assert refused is not None and "does not map to a file of the workspace" in refused
        assert "the secret" not in refused
    assert write_diff(workspace, call("notes.md", server="files")) is None  # the server decides where


def wait_for(hook: Receiver, wanted: Callable[[dict[str, Any]], bool], seconds: float = 30) -> dict[str, Any]:
    """The first notification the webhook received that is ``wanted``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for post in list(hook.posts):
            notice = json.loads(post.body)
            if wanted(notice):
                return dict(notice)
        time.sleep(0.1)
    pytest.fail(f"the webhook received no such notification: {[json.loads(p.body) for p in hook.posts]}")


def test_a_request_that_times_out_is_notified_with_its_run(
    workspace: Workspace, served: Served, hook: Receiver
) -> None:
    timed = ("--policy", str(workspace.root.parent / "timed.yaml"))
    run_id = workspace.cli(*timed, "run", "graphs/write_note.py", "--detach").stdout.strip()
    workspace.worker(*timed)
    (waiting,) = workspace.waiting(run_id=run_id)
    assert isinstance(waiting["expires_at"], float)
    summary, path = next_link(served)
    assert f"exp={math.ceil(waiting['expires_at'])}&" in path  # the link expires with its request
    timed_out = wait_for(hook, lambda notice: notice["event"] == "timed_out" and notice["run_id"] == run_id)
    assert timed_out["request_id"] == waiting["request_id"] and "arguments" not in timed_out
    assert wait_for(hook, lambda notice: notice["event"] == "run_finished" and notice["run_id"] == run_id)
    assert not (workspace.root / NOTE).exists()
