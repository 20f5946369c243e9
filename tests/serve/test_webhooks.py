"""Webhook notifications (``notify:``): their shapes, and a failing or slow webhook never holding anyone.

Every POST goes to a real loopback HTTP server started by the test (``receiver.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from ditto_tui.config import NotifyConfig, RuntimeConfig
from ditto_tui.webhooks import Notice, Webhooks
from tests.serve.receiver import Receiver, receiver

ARGUMENTS = {"path": "notes.md", "text": "the secret plan"}
PENDING = Notice(
    event="pending",
    summary="approve write_text <!channel> \x1b[31mred",
    run_id="run-1",
    request_id="approval-1",
    link="http://127.0.0.1:8765/decide/approval-1?exp=never&sig=abc",
    arguments=ARGUMENTS,
)


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as running:
        yield running


def notify(url: str, **settings: object) -> NotifyConfig:
    return RuntimeConfig.model_validate({"notify": {"webhook": url, **settings}}).notify


async def deliver(config: NotifyConfig, *notices: Notice, seconds: float = 10.0) -> Webhooks:
    webhooks = Webhooks(config)
    for notice in notices:
        webhooks.send(notice)
    await webhooks.drain(seconds)
    return webhooks


def test_json_carries_the_summary_escaped_and_the_link_but_not_the_arguments(hook: Receiver) -> None:
    sent = asyncio.run(deliver(notify(hook.url), PENDING))
    (post,) = hook.wait(1)
    item = json.loads(post.body)
    assert item["event"] == "pending" and item["link"] == PENDING.link and item["request_id"] == "approval-1"
    assert "\x1b" not in item["summary"] and "the secret plan" not in post.body.decode()
    assert "arguments" not in item and sent.sent == 1 and sent.failed == 0


def test_arguments_are_sent_only_when_asked_for(hook: Receiver) -> None:
    asyncio.run(deliver(notify(hook.url, includeArguments=True), PENDING))
    (post,) = hook.wait(1)
    assert json.loads(post.body)["arguments"] == ARGUMENTS


def test_ntfy_gets_a_title_a_click_action_and_plain_text(hook: Receiver) -> None:
    asyncio.run(deliver(notify(hook.url, format="ntfy"), PENDING))
    (post,) = hook.wait(1)
    assert post.headers["title"] == "ditto-tui: a decision waits"
    assert post.headers["click"] == PENDING.link
    text = post.body.decode()
    assert text.splitlines()[-1] == PENDING.link and "the secret plan" not in text and "\x1b" not in text


def test_slack_text_cannot_mention_or_link_and_the_link_is_a_button(hook: Receiver) -> None:
    asyncio.run(deliver(notify(hook.url, format="slack"), PENDING))
    (post,) = hook.wait(1)
    text = json.loads(post.body)["text"]
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert text.endswith(f"<{PENDING.link}|Decide>") and "the secret plan" not in text


def test_a_failing_webhook_is_retried_a_bounded_number_of_times(hook: Receiver) -> None:
    hook.statuses = [500, 503]
    sent = asyncio.run(deliver(notify(hook.url, retries=3), PENDING))
    assert len(hook.wait(3)) == 3 and sent.sent == 1 and sent.failed == 0
    hook.posts.clear()
    hook.statuses = [500] * 10
    failed = asyncio.run(deliver(notify(hook.url, retries=2), PENDING))
    assert len(hook.wait(3)) == 3 and failed.failed == 1  # the first try and two more, no more
    hook.posts.clear()
    hook.statuses = [404]
    refused = asyncio.run(deliver(notify(hook.url, retries=3), PENDING))
    assert len(hook.wait(1)) == 1 and refused.failed == 1  # refused as sent: not sent again


def test_a_dead_or_slow_webhook_never_holds_the_caller() -> None:
    async def measure(config: NotifyConfig) -> tuple[float, Webhooks]:
        webhooks = Webhooks(config)
        begin = time.perf_counter()
        for _ in range(100):
            webhooks.send(PENDING)
        queued = time.perf_counter() - begin
        await webhooks.drain(1.0)
        return queued, webhooks

    queued, dead = asyncio.run(measure(notify("http://127.0.0.1:9/hook", retries=1)))
    assert queued < 0.05 and dead.sent == 0 and dead.failed >= 1  # queued at once, failures counted
    with receiver() as slow:
        slow.delay = 5.0
        begin = time.perf_counter()
        queued, held = asyncio.run(measure(notify(slow.url, retries=0, timeoutSeconds=0.2)))
        assert queued < 0.05 and time.perf_counter() - begin < 2.5  # drain gives up: the exit is not held
        assert held.sent == 0 and held.failed >= 1


def test_a_webhook_must_be_an_http_url_and_is_a_secret() -> None:
    for bad in ("file:///etc/passwd", "ftp://host/x", "http://", "notaurl"):
        with pytest.raises(ValueError, match="notify.webhook must be an http"):
            notify(bad)
    config = RuntimeConfig.model_validate({"notify": {"webhook": "https://hooks.example/T000/B000/XYZ"}})
    assert "https://hooks.example/T000/B000/XYZ" in config.secret_values()
