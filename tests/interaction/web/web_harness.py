"""Running ``web_search`` through a runtime against a loopback server, with a key that must never leak."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import DittoError, ToolValidationError
from ditto_tui.interaction import (
    create_brave_web_search_provider,
    create_interaction_worker,
    create_web_search_tool,
)
from ditto_tui.runtime import create_ditto
from ditto_tui.signal import CancelSignal
from tests.interaction.web.loopback import LoopbackServer

KEY = "BSAq7/Tk+9z=Secret_Key-0123456789"
"""A key with characters that URL-encoding and base64 change, so every form is distinct."""

KEY_FORMS = (
    KEY,
    quote(KEY, safe=""),
    base64.b64encode(KEY.encode()).decode(),
    base64.b64encode(KEY.encode()).decode().rstrip("="),
    base64.urlsafe_b64encode(KEY.encode()).decode(),
)


async def web_search(
    server: LoopbackServer,
    arguments: Mapping[str, Any],
    *,
    permissions: Mapping[str, Any] | None = None,
    signal: CancelSignal | None = None,
    **provider_options: Any,
) -> ExternalResult:
    """One ``web_search`` call in a fresh runtime that grants the tool and the server's origin."""
    provider = create_brave_web_search_provider(api_key=KEY, base_url=server.base_url, **provider_options)
    tool = create_web_search_tool(provider=provider)
    granted = (
        permissions if permissions is not None else {"tools": ["web_search"], "network": [provider.origin]}
    )
    async with create_ditto(sandbox=granted, workers=[create_interaction_worker(tools=[tool])]) as runtime:
        call = {"id": "search-1", "name": "web_search", "arguments": dict(arguments)}
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call}, signal=signal)
        return result


def everything(result: ExternalResult) -> str:
    """Every field of a result as one string."""
    return json.dumps(result.model_dump(mode="json", by_alias=True), ensure_ascii=False)


def assert_no_key(text: str) -> None:
    """None of the key's forms (exact, URL-encoded, base64) occurs in ``text``."""
    for form in KEY_FORMS:
        assert form not in text


def reason(result: ExternalResult) -> str:
    """The failure reason of a failed search."""
    assert result.status == "failed" and result.error is not None and result.error.code == "WEB_SEARCH_FAILED"
    assert result.metadata is not None
    value = result.metadata["reason"]
    assert isinstance(value, str)
    return value


def rule(error: DittoError) -> str:
    """The stable code of a refusal, unwrapped from the registry's ``ToolValidationError``."""
    if isinstance(error, ToolValidationError) and isinstance(error.__cause__, DittoError):
        return error.__cause__.code
    return error.code
