"""Seed fidelity of ``web_search``: the provider port ``search(input, signal=None)`` and the query limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import DittoError
from ditto_tui.interaction import (
    create_brave_web_search_provider,
    create_interaction_worker,
    create_web_search_tool,
)
from ditto_tui.interaction.web_search import WebSearchError, WebSearchInput
from ditto_tui.runtime import create_ditto
from ditto_tui.signal import CancelSignal
from tests.interaction.web.loopback import LoopbackServer, brave_json, hit
from tests.interaction.web.web_harness import KEY, rule, web_search


class SeedShapedProvider:
    """Written as the seed writes one: ``search(input, options)`` with the signal second, positionally."""

    origin = "https://search.example"

    def __init__(self) -> None:
        self.asked: list[tuple[Any, Any]] = []

    async def search(self, input, signal=None):  # type: ignore[no-untyped-def]
        self.asked.append((input, signal))
        return [{"title": f"hit for {input['query']}", "url": "https://a.example/", "snippet": "s"}]


async def _invoke(provider: Any, arguments: dict[str, Any]) -> ExternalResult:
    tool = create_web_search_tool(provider=provider)
    async with create_ditto(
        sandbox={"tools": ["web_search"], "network": [provider.origin]},
        workers=[create_interaction_worker(tools=[tool])],
    ) as runtime:
        call = {"id": "s-1", "name": "web_search", "arguments": arguments}
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        return result


async def test_seed_a_provider_written_to_search_input_signal_works() -> None:
    provider = SeedShapedProvider()
    result = await _invoke(provider, {"query": "ditto", "limit": 3})
    assert result.status == "success", result
    structured: Any = result.structured_content
    assert [item["title"] for item in structured["results"]] == ["hit for ditto"]
    ((asked, signal),) = provider.asked
    assert asked == {"query": "ditto", "limit": 3}
    assert isinstance(signal, CancelSignal) and not signal.cancelled


async def test_seed_the_provider_gets_the_default_limit_and_a_fresh_input_each_call() -> None:
    provider = SeedShapedProvider()
    await _invoke(provider, {"query": "one"})
    await _invoke(provider, {"query": "two"})
    (first, _), (second, _) = provider.asked
    assert first == {"query": "one", "limit": 5} and second == {"query": "two", "limit": 5}
    assert first is not second


async def test_seed_the_provider_sees_the_calls_cancellation_through_its_signal() -> None:
    seen: list[CancelSignal] = []

    class Waiting:
        origin = "https://search.example"

        async def search(self, input: WebSearchInput, signal: CancelSignal | None = None) -> list[Any]:
            assert signal is not None
            seen.append(signal)
            await signal.wait()
            raise WebSearchError("stopped", reason="cancelled")

    tool = create_web_search_tool(provider=Waiting())
    async with create_ditto(
        sandbox={"tools": ["web_search"], "network": ["https://search.example"]},
        workers=[create_interaction_worker(tools=[tool])],
    ) as runtime:
        parent = CancelSignal()
        call = {"id": "s-1", "name": "web_search", "arguments": {"query": "slow"}}
        task = asyncio.create_task(runtime.invoke("INTERACTION.ACT.TOOL", {"call": call}, signal=parent))
        while not seen:
            await asyncio.sleep(0)
        parent.cancel()
        result: ExternalResult = await task
    assert seen[0].cancelled
    assert result.status == "cancelled" and result.error is not None
    assert result.error.code == "WEB_SEARCH_CANCELLED"


async def test_seed_brave_is_called_with_the_seed_input_and_a_positional_signal() -> None:
    async with LoopbackServer(lambda _: brave_json([hit("T", "https://a.example/")])) as server:
        provider = create_brave_web_search_provider(api_key=KEY, base_url=server.base_url)
        hits = await provider.search({"query": "ditto runtime", "limit": 2}, CancelSignal())
    assert [found.title for found in hits] == ["T"]
    assert server.requests[0].query["q"] == ["ditto runtime"] and server.requests[0].query["count"] == ["2"]


@pytest.mark.parametrize(
    "query",
    [" " + "x" * 599 + " ", "  " + "x" * 599, "x" * 599 + "  ", " " * 300 + "x" + " " * 300],
)
async def test_seed_a_query_of_601_characters_is_refused_even_when_surrounded_by_spaces(query: str) -> None:
    assert len(query) == 601
    async with LoopbackServer(lambda _: brave_json([])) as server:
        with pytest.raises(DittoError) as info:
            await web_search(server, {"query": query})
    assert rule(info.value) == "too_long"
    assert server.requests == []


async def test_seed_a_query_of_600_characters_with_surrounding_spaces_is_sent_trimmed() -> None:
    query = " " + "x" * 598 + " "
    async with LoopbackServer(lambda _: brave_json([])) as server:
        result = await web_search(server, {"query": query})
    assert result.status == "success"
    assert server.requests[0].query["q"] == ["x" * 598]


async def test_seed_a_trailing_line_break_makes_a_second_line() -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        with pytest.raises(DittoError) as info:
            await web_search(server, {"query": "ditto\n"})
    assert rule(info.value) == "control_character"
    assert server.requests == []
