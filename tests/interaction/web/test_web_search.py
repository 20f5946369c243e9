"""The ``web_search`` tool against a real loopback server: arguments, permissions, safe results (W-01..06,
W-13, W-14), cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import DittoError, PermissionDeniedError, ValidationError
from ditto_tui.interaction import (
    WebSearchError,
    WebSearchResult,
    create_brave_web_search_provider,
    create_interaction_worker,
    create_web_search_tool,
)
from ditto_tui.interaction.web_search import WebSearchInput
from ditto_tui.runtime import create_ditto
from ditto_tui.signal import CancelSignal
from tests.interaction.web.loopback import LoopbackServer, Reply, brave_json, hit, trickle
from tests.interaction.web.web_harness import KEY, assert_no_key, everything, reason, rule, web_search
from tests.typed import structured

GOOD = "https://good.example/page?id=1"


def _results(result: ExternalResult) -> list[dict[str, str]]:
    found: list[dict[str, str]] = structured(result)["results"]
    return found


async def test_request_shape_and_normalised_results() -> None:
    async with LoopbackServer(
        lambda _: brave_json([hit("Title", GOOD, "A <strong>snippet</strong>")])
    ) as server:
        result = await web_search(server, {"query": "  ditto tui  "})
    request = server.requests[0]
    assert (request.method, request.path) == ("GET", "/res/v1/web/search")
    assert request.query == {"q": ["ditto tui"], "count": ["5"]}
    assert request.headers["x-subscription-token"] == KEY
    assert "gzip" in request.headers["accept-encoding"]
    assert result.status == "success"
    assert _results(result) == [{"title": "Title", "url": GOOD, "snippet": "A snippet"}]
    assert [reference.uri for reference in result.references or ()] == [GOOD]
    assert result.structured_content == {
        "query": "ditto tui",
        "results": _results(result),
        "truncated": False,
        "dropped": 0,
    }


async def test_limit_is_sent_and_bounds_the_results() -> None:
    many = [hit(f"T{index}", f"https://site.example/{index}") for index in range(7)]
    async with LoopbackServer(lambda _: brave_json(many)) as server:
        result = await web_search(server, {"query": "q", "limit": 2})
        widest = await web_search(server, {"query": "q", "limit": 20})
    assert server.requests[0].query["count"] == ["2"] and server.requests[1].query["count"] == ["20"]
    assert [item["title"] for item in _results(result)] == ["T0", "T1"]
    assert len(_results(widest)) == 7


async def test_no_results_is_an_empty_success() -> None:
    async with LoopbackServer(lambda _: Reply(body=b'{"type": "search"}')) as server:
        result = await web_search(server, {"query": "nothing at all"})
    assert result.status == "success" and _results(result) == [] and result.references == ()


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({}, "invalid_type"),
        ({"query": ""}, "invalid_type"),
        ({"query": "   "}, "invalid_type"),
        ({"query": 5}, "invalid_type"),
        ({"query": "two\nlines"}, "control_character"),
        ({"query": "a\rb"}, "control_character"),
        ({"query": "tab\there"}, "control_character"),
        ({"query": "hidden\u202etext"}, "control_character"),
        ({"query": "x" * 601}, "too_long"),
        ({"query": " ".join(["w"] * 76)}, "too_long"),
        ({"query": "q", "limit": 0}, "out_of_range"),
        ({"query": "q", "limit": 21}, "out_of_range"),
        ({"query": "q", "limit": True}, "out_of_range"),
        ({"query": "q", "limit": 5.0}, "out_of_range"),
        ({"query": "q", "limit": "5"}, "out_of_range"),
        ({"query": "q", "count": 5}, "unknown_field"),
        ({"query": "q", "apiKey": "x"}, "unknown_field"),
    ],
)
async def test_arguments_are_refused_before_any_request(arguments: dict[str, Any], code: str) -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        with pytest.raises(DittoError) as info:
            await web_search(server, arguments)
    assert rule(info.value) == code
    assert server.requests == []


async def test_the_largest_valid_query_is_sent() -> None:
    query = " ".join(["abcdefg"] * 75)
    assert len(query) == 599
    async with LoopbackServer(lambda _: brave_json([])) as server:
        result = await web_search(server, {"query": query, "limit": 20})
    assert result.status == "success" and server.requests[0].query["q"] == [query]


async def test_the_sandbox_must_grant_the_tool_and_the_exact_origin() -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        denied = [
            ({"network": [server.base_url]}, "tool_not_allowed"),
            ({"tools": ["web_search"]}, "network_not_allowed"),
            ({"tools": ["web_search"], "network": ["https://api.search.brave.com"]}, "network_not_allowed"),
            (
                {"tools": ["web_search"], "network": [server.base_url.replace("http:", "https:")]},
                "network_not_allowed",
            ),
            ({"tools": ["web_search"], "network": ["http://127.0.0.1:1"]}, "network_not_allowed"),
            (
                {"tools": ["web_search"], "network": ["http://localhost" + server.base_url[16:]]},
                "network_not_allowed",
            ),
        ]
        for permissions, code in denied:
            with pytest.raises(PermissionDeniedError) as info:
                await web_search(server, {"query": "q"}, permissions=permissions)
            assert info.value.code == code
        assert server.requests == []
        allowed = await web_search(
            server, {"query": "q"}, permissions={"tools": ["web_search"], "network": [server.base_url + "/"]}
        )
    assert allowed.status == "success" and len(server.requests) == 1


def test_the_tool_declares_network_and_asks_for_approval() -> None:
    provider = create_brave_web_search_provider(api_key=KEY)
    tool = create_web_search_tool(provider=provider)
    assert tool.name == "web_search" and tool.effects == ("network",) and tool.requires_approval is True
    assert tool.origin == provider.origin == "https://api.search.brave.com"
    assert tool.input_schema["additionalProperties"] is False
    assert tool.input_schema["properties"]["limit"]["maximum"] == 20


def test_a_provider_needs_an_origin_and_a_search_method() -> None:
    class NoOrigin:
        async def search(self, input: WebSearchInput, signal: CancelSignal | None = None) -> list[Any]:
            return []

    with pytest.raises(ValidationError):
        create_web_search_tool(provider=NoOrigin())  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        create_web_search_tool(provider=object())  # type: ignore[arg-type]


# -- results: W-01 .. W-06 and W-13 ---------------------------------------------------------------------


async def _search_urls(urls: Sequence[str]) -> ExternalResult:
    hits = [hit(f"hostile {index}", url) for index, url in enumerate(urls)] + [hit("good", GOOD)]
    async with LoopbackServer(lambda _: brave_json(hits)) as server:
        return await web_search(server, {"query": "q", "limit": 20})


def _only_the_good_one_survives(result: ExternalResult, dropped: int) -> None:
    assert result.status == "success"
    assert [item["url"] for item in _results(result)] == [GOOD]
    assert structured(result)["dropped"] == dropped


async def test_w01_urls_with_credentials_are_dropped() -> None:
    result = await _search_urls(["https://user:pass@evil.example/", "https://token@evil.example/x"])
    _only_the_good_one_survives(result, 2)
    assert "pass" not in everything(result) and "user" not in everything(result)


async def test_w01_urls_with_credential_parameters_are_dropped() -> None:
    urls = [
        "https://s3.example/obj?X-Amz-Signature=abc",
        "https://api.example/?api_key=k",
        "https://x.example/?token=t",
    ]
    _only_the_good_one_survives(await _search_urls(urls), 3)


async def test_w02_confusable_userinfo_is_dropped() -> None:
    result = await _search_urls(
        ["https://good.example@evil.example/", "https://good.example%40evil.example/"]
    )
    _only_the_good_one_survives(result, 2)
    assert "evil" not in everything(result)


async def test_w03_only_http_and_https_survive() -> None:
    urls = [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "ftp://files.example/x",
        "about:blank",
        "//no-scheme.example/",
        "https:",
        "https:///path-only",
    ]
    _only_the_good_one_survives(await _search_urls(urls), len(urls))


async def test_w04_obfuscated_schemes_are_dropped() -> None:
    urls = [
        " JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "\x00javascript:alert(1)",
        "https://good.example/ ",
        "https://good.example/\u202e",
        "https://good\u200b.example/",
    ]
    _only_the_good_one_survives(await _search_urls(urls), len(urls))


async def test_w05_backslashes_are_dropped() -> None:
    result = await _search_urls(
        ["https://evil.example\\@good.example/", "https:\\\\evil.example", "https://a.example/b\\c"]
    )
    _only_the_good_one_survives(result, 3)


async def test_w06_idn_homographs_are_shown_in_punycode() -> None:
    hits = [hit("apple?", "https://\u0430pple.com/login"), hit("upper", "HTTPS://Good.EXAMPLE:8443/A")]
    async with LoopbackServer(lambda _: brave_json(hits)) as server:
        result = await web_search(server, {"query": "q"})
    urls = [item["url"] for item in _results(result)]
    assert urls == ["https://xn--pple-43d.com/login", "https://good.example:8443/A"]
    assert all(url.isascii() for url in urls)


async def test_w13_wrong_shapes_are_handled_defensively() -> None:
    bodies = {
        "no-web": (b'{"type": "search"}', "success"),
        "web-null-results": (b'{"web": {"results": null}}', "success"),
        "results-not-a-list": (b'{"web": {"results": {"title": "x"}}}', "failed"),
        "web-not-an-object": (b'{"web": []}', "failed"),
        "not-an-object": (b"[1, 2, 3]", "failed"),
        "not-json": (b"<html>Service Unavailable</html>", "failed"),
        "deeply-nested": (b"[" * 100_000, "failed"),
    }
    for name, (body, status) in bodies.items():
        async with LoopbackServer(lambda _, body=body: Reply(body=body)) as server:  # type: ignore[misc]
            result = await web_search(server, {"query": "q"})
        assert result.status == status, name
        if status == "failed":
            assert reason(result) == "malformed_response"


@pytest.mark.parametrize(
    "item",
    [
        "not an object",
        None,
        [GOOD],
        {"title": 5, "url": GOOD},
        {"title": None, "url": GOOD},
        {"url": GOOD},
        {"title": "no url"},
        {"title": "T", "url": 5},
        {"title": "T", "url": GOOD, "description": 7},
        {"title": "T", "url": GOOD, "description": ["d"]},
    ],
)
async def test_v11_a_malformed_provider_item_fails_the_call(item: Any) -> None:
    """The seed: malformed results become one failed WEB_SEARCH_FAILED result, never skipped or coerced."""
    async with LoopbackServer(lambda _: brave_json([hit("good", GOOD), item])) as server:
        result = await web_search(server, {"query": "q"})
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "WEB_SEARCH_FAILED" and reason(result) == "malformed_response"
    assert result.structured_content is None and not result.references
    assert_no_key(everything(result))


async def test_v11_items_past_the_limit_are_not_read_and_a_left_out_description_is_no_snippet() -> None:
    hits: list[Any] = [hit("good", GOOD), {"title": "bare", "url": "https://bare.example/"}, "past the limit"]
    async with LoopbackServer(lambda _: brave_json(hits)) as server:
        result = await web_search(server, {"query": "q", "limit": 2})
    assert result.status == "success"
    assert [item["snippet"] for item in _results(result)] == ["", ""]


async def test_w13_fields_are_bounded_and_cleaned() -> None:
    hits: list[Any] = [
        hit("T" * 1_000_000, "https://long.example/", "D" * 1_000_000),
        hit(
            "\x1b[31mred\x1b[0m [bold]markup[/bold] &amp; <b>html</b>",
            "https://clean.example/",
            "a\x1b]52;c;Zm9v\x07b",
        ),
        hit("", "https://untitled.example/", "\u202eevil\U000e0041 \x00text"),
    ]
    async with LoopbackServer(lambda _: brave_json(hits)) as server:
        result = await web_search(server, {"query": "q", "limit": 20}, max_response_bytes=4 * 1024 * 1024)
    found = _results(result)
    assert [item["url"] for item in found] == [
        "https://long.example/",
        "https://clean.example/",
        "https://untitled.example/",
    ]
    assert found[0]["title"] == "T" * 256 and found[0]["snippet"] == "D" * 2048
    assert found[1] == {
        "title": "red [bold]markup[/bold] & html",
        "url": "https://clean.example/",
        "snippet": "ab",
    }
    assert found[2] == {
        "title": "https://untitled.example/",
        "url": "https://untitled.example/",
        "snippet": "evil text",
    }
    assert structured(result)["truncated"] is True


async def test_w14_queries_carrying_credentials_are_not_sent() -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        for query in (
            "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345 site:evil.example",
            "ghp_0123456789abcdefghijABCDEFGHIJ0123",
            "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx' evil.example",
            "login password=hunter2 evil.example",
            "xx " * 70 + "api_key=0123456789",
        ):
            with pytest.raises(DittoError) as info:
                await web_search(server, {"query": query})
            assert rule(info.value) == "credential_in_query"
        with pytest.raises(DittoError) as info:
            await web_search(server, {"query": "QUJD" * 12_500})
        assert rule(info.value) == "too_long"
        with_key = await web_search(server, {"query": f"find {KEY}"})
    assert reason(with_key) == "query_rejected"
    assert_no_key(everything(with_key))
    assert server.requests == []


async def test_w14_the_providers_own_key_is_never_sent_as_a_query() -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        result = await web_search(server, {"query": "BSAq7 Tk 9z Secret_Key-0123456789"})
        provider = create_brave_web_search_provider(api_key="plainkey0123456789", base_url=server.base_url)
        with pytest.raises(WebSearchError) as info:
            await provider.search({"query": "what is plainkey0123456789", "limit": 5})
    assert result.status == "success" and info.value.reason == "query_rejected"
    assert len(server.requests) == 1


# -- cancellation and custom providers ------------------------------------------------------------------


async def test_cancelling_the_signal_ends_the_search_cancelled() -> None:
    async with LoopbackServer(lambda _: trickle(b"{", 0.05)) as server:
        signal = CancelSignal()
        task = asyncio.create_task(web_search(server, {"query": "q"}, signal=signal))
        while not server.requests:
            await asyncio.sleep(0.005)
        signal.cancel("stop")
        result = await asyncio.wait_for(task, timeout=5)
    assert result.status == "cancelled" and result.error is not None
    assert result.error.code == "WEB_SEARCH_CANCELLED"


async def test_cancelling_the_task_propagates() -> None:
    async with LoopbackServer(lambda _: trickle(b"{", 0.05)) as server:
        task = asyncio.create_task(web_search(server, {"query": "q"}))
        while not server.requests:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_an_already_cancelled_signal_sends_nothing() -> None:
    async with LoopbackServer(lambda _: brave_json([])) as server:
        signal = CancelSignal()
        signal.cancel()
        result = await web_search(server, {"query": "q"}, signal=signal)
    assert result.status == "cancelled" and server.requests == []


class ScriptedProvider:
    """A provider in the seed's shape ``search(input, signal=None)``; answers from a list or raises."""

    origin = "https://search.example"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[tuple[Any, Any]] = []

    async def search(self, input: WebSearchInput, signal: CancelSignal | None = None) -> Any:
        self.asked.append((input, signal))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


async def _run(provider: ScriptedProvider) -> ExternalResult:
    tool = create_web_search_tool(provider=provider)
    async with create_ditto(
        sandbox={"tools": ["web_search"], "network": ["https://search.example"]},
        workers=[create_interaction_worker(tools=[tool])],
    ) as runtime:
        call = {"id": "s", "name": "web_search", "arguments": {"query": "q"}}
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        return result


async def test_any_provider_error_is_one_sanitised_failure() -> None:
    result = await _run(ScriptedProvider(RuntimeError(f"boom at /home/alice/.secret with {KEY}")))
    assert reason(result) == "provider_error"
    assert result.error is not None and result.error.message == "web search provider failed unexpectedly"
    not_a_list = await _run(ScriptedProvider({"title": "x"}))
    assert reason(not_a_list) == "provider_error"


@pytest.mark.parametrize(
    "answer",
    [
        [WebSearchResult(title="A", url="https://a.example/"), ("B", "https://b.example/")],
        [{"title": "A", "url": "https://a.example/"}, 5],
        [{"title": b"A", "url": "https://a.example/"}],
        [{"title": "A", "url": "https://a.example/", "snippet": {"text": "s"}}],
        [{"title": "A"}],
    ],
)
async def test_v11_a_custom_provider_answering_malformed_items_fails_the_call(answer: Any) -> None:
    result = await _run(ScriptedProvider(answer))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "WEB_SEARCH_FAILED" and reason(result) == "malformed_response"
    assert result.error.message.startswith("web search provider returned a result")


async def test_custom_providers_may_answer_with_results_or_mappings() -> None:
    answer = [
        WebSearchResult(title="A", url="https://a.example/"),
        {"title": "B", "url": "https://b.example/"},
    ]
    result = await _run(ScriptedProvider(answer))
    assert [item["title"] for item in _results(result)] == ["A", "B"]
    assert_no_key(everything(result))
