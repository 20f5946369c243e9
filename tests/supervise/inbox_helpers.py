"""A test answerer for the inbox: it plays the person who resolves what the inbox asks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ditto_tui.supervise import Inbox

Answerer = Callable[[Any], Any]
"""What the person answers to one request."""


def answering(inbox: Inbox, answer: Answerer) -> list[Any]:
    """Resolve every request the inbox gets with ``answer(request)``, soon after it arrives; returns the
    requests seen so far."""
    loop = asyncio.get_running_loop()
    seen: list[Any] = []

    def arrived(request: Any) -> None:
        seen.append(request)
        loop.call_soon(inbox.resolve, request.request_id, answer(request))

    inbox.on_request(arrived)
    return seen
