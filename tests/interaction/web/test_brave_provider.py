"""The Brave provider over httpx against hostile loopback servers (W-07..W-12, E-04) and its settings."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import WebSearchError, create_brave_web_search_provider
from ditto_tui.runtime import load_runtime_config_file
from tests.interaction.web.loopback import (
    LoopbackServer,
    Reply,
    brave_json,
    endless_chunked,
    gzip_bomb,
    gzipped,
    hit,
    sized,
    trickle,
)
from tests.interaction.web.web_harness import KEY, assert_no_key, everything, reason, web_search
from tests.typed import structured

MIB = 1024 * 1024


async def _measured(server: LoopbackServer, **options: Any) -> tuple[ExternalResult, float, int]:
    """One search, with its wall time and the peak of traced Python memory while it ran."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = await web_search(server, {"query": "q"}, **options)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, time.monotonic() - started, peak


async def test_w07_a_50mb_body_is_cut_at_the_cap() -> None:
    async with LoopbackServer(lambda _: sized(50 * MIB, declared=None)) as server:
        result, elapsed, _peak = await _measured(server)
    assert reason(result) == "response_too_large"
    assert result.error is not None and "1048576 bytes" in result.error.message
    assert elapsed < 5


async def test_w07_an_endless_chunked_stream_is_cut_with_bounded_memory() -> None:
    async with LoopbackServer(lambda _: endless_chunked()) as server:
        result, elapsed, peak = await _measured(server)
    assert reason(result) == "response_too_large"
    assert elapsed < 5 and peak < 8 * MIB


async def test_w08_a_lying_content_length_caps_what_is_read() -> None:
    async with LoopbackServer(lambda _: sized(10 * MIB, declared=100)) as server:
        result, elapsed, peak = await _measured(server)
    assert reason(result) == "malformed_response"
    assert elapsed < 5 and peak < 8 * MIB


async def test_w08_a_declared_oversize_is_refused_before_reading() -> None:
    async with LoopbackServer(lambda _: sized(64 * 1024, declared=50 * MIB)) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "response_too_large"


async def test_w08_a_gzip_bomb_is_capped_on_decoded_bytes() -> None:
    bomb = gzip_bomb(100)
    assert isinstance(bomb.body, bytes) and len(bomb.body) < MIB
    async with LoopbackServer(lambda _: bomb) as server:
        result, elapsed, peak = await _measured(server)
    assert reason(result) == "response_too_large"
    assert elapsed < 5 and peak < 8 * MIB


async def test_w08_an_honest_gzip_body_is_decoded() -> None:
    async with LoopbackServer(
        lambda _: gzipped(brave_json([hit("Zipped", "https://zip.example/")]))
    ) as server:
        result = await web_search(server, {"query": "q"})
    assert result.status == "success"
    assert structured(result)["results"][0]["title"] == "Zipped"


@pytest.mark.parametrize("encoding", ["br", "deflate", "zstd", "gzip, gzip"])
async def test_w08_other_encodings_are_refused(encoding: str) -> None:
    async with LoopbackServer(
        lambda _: Reply(headers=[("Content-Encoding", encoding)], body=b"{}")
    ) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "unsupported_encoding"


async def test_w08_a_truncated_gzip_body_is_malformed() -> None:
    whole = gzipped(brave_json([hit("x", "https://x.example/")]))
    assert isinstance(whole.body, bytes)
    cut = Reply(headers=whole.headers, body=whole.body[:-12])
    async with LoopbackServer(lambda _: cut) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "malformed_response"


async def test_w09_a_trickling_body_hits_the_total_deadline() -> None:
    async with LoopbackServer(lambda _: trickle(b'{"web": ', 0.05)) as server:
        result, elapsed, _peak = await _measured(server, timeout_ms=400)
    assert reason(result) == "timeout"
    assert result.error is not None and result.error.message == "web search timed out after 400 ms"
    assert result.error.retryable is True
    assert 0.35 < elapsed < 2


@pytest.fixture
def blackhole() -> Iterator[str]:
    """A loopback listener whose accept queue is full, so a new connection never completes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


async def test_w10_a_connection_that_never_completes_times_out(blackhole: str) -> None:
    threads = threading.active_count()
    provider = create_brave_web_search_provider(api_key=KEY, base_url=blackhole, timeout_ms=300)
    started = time.monotonic()
    with pytest.raises(WebSearchError) as info:
        await provider.search({"query": "q", "limit": 5})
    assert info.value.reason == "timeout"
    assert time.monotonic() - started < 2
    assert threading.active_count() == threads


async def test_a_refused_connection_is_a_transport_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = create_brave_web_search_provider(api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(WebSearchError) as info:
        await provider.search({"query": "q", "limit": 5})
    assert info.value.reason == "transport_error"
    assert str(info.value) == "could not connect to the web search provider"


@pytest.mark.parametrize(
    "location",
    [
        "http://api.search.brave.com/res/v1/web/search",
        "http://169.254.169.254/latest/meta-data/",
        "/elsewhere",
    ],
)
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_w11_redirects_are_never_followed(location: str, status: int) -> None:
    async with LoopbackServer(lambda _: Reply(status=status, headers=[("Location", location)])) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "unexpected_redirect"
    assert result.metadata == {"reason": "unexpected_redirect", "httpStatus": status}
    assert len(server.requests) == 1
    assert location not in everything(result)


@pytest.mark.parametrize(("status", "retryable"), [(401, False), (403, False), (500, True), (503, True)])
async def test_w12_http_errors_are_typed_and_never_echo_the_key(status: int, retryable: bool) -> None:
    echo = f'{{"error": "invalid token {KEY}", "header": "X-Subscription-Token: {KEY}"}}'.encode()
    async with LoopbackServer(lambda _: Reply(status=status, body=echo)) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "http_status"
    assert result.error is not None and result.error.retryable is retryable
    assert result.error.message == f"web search provider answered HTTP {status}"
    assert len(server.requests) == 1
    assert_no_key(everything(result))


async def test_w12_rate_limits_report_retry_after_without_retrying() -> None:
    reply = Reply(status=429, headers=[("Retry-After", "30")], body=b'{"error": "slow down"}')
    async with LoopbackServer(lambda _: reply) as server:
        result = await web_search(server, {"query": "q"})
        huge = Reply(status=429, headers=[("Retry-After", "99999999")])
        server.handler = lambda _: huge
        capped = await web_search(server, {"query": "q"})
        server.handler = lambda _: Reply(
            status=429, headers=[("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")]
        )
        dated = await web_search(server, {"query": "q"})
    assert reason(result) == "rate_limited" and result.error is not None and result.error.retryable is True
    assert result.metadata == {"reason": "rate_limited", "httpStatus": 429, "retryAfterSeconds": 30}
    assert capped.metadata is not None and capped.metadata["retryAfterSeconds"] == 86_400
    assert dated.metadata == {"reason": "rate_limited", "httpStatus": 429}
    assert len(server.requests) == 3


async def test_w12_a_non_json_success_is_malformed() -> None:
    async with LoopbackServer(lambda _: Reply(body=f"<html>{KEY}</html>".encode())) as server:
        result = await web_search(server, {"query": "q"})
    assert reason(result) == "malformed_response"
    assert_no_key(everything(result))


async def test_e04_the_key_never_leaks_in_any_form(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    encoded = quote(KEY, safe="")
    b64 = base64.b64encode(KEY.encode()).decode()
    echoing = brave_json(
        [
            hit(f"title {KEY}", "https://ok.example/1", f"snippet {b64} and {encoded}"),
            hit("leaky url", f"https://evil.example/?q={encoded}"),
            hit("leaky b64 url", f"https://evil.example/{b64.rstrip('=')}"),
            hit("plain", "https://ok.example/2"),
        ]
    )
    echoing.headers.append(("X-Echo", f"{KEY} {encoded} {b64}"))
    replies = iter(
        [
            echoing,
            Reply(status=401, body=KEY.encode()),
            Reply(status=302, headers=[("Location", f"https://evil.example/?token={KEY}")]),
            Reply(body=f'{{"web": {{"results": "{KEY}"}}}}'.encode()),
            trickle(KEY.encode(), 0.05),
        ]
    )
    async with LoopbackServer(lambda _: next(replies)) as server:
        results = [await web_search(server, {"query": "q"}, timeout_ms=300) for _ in range(5)]
    texts = [everything(result) for result in results]
    texts += [record.getMessage() for record in caplog.records]
    texts.append(repr(create_brave_web_search_provider(api_key=KEY)))
    for text in texts:
        assert_no_key(text)
    found = structured(results[0])["results"]
    assert [item["url"] for item in found] == ["https://ok.example/1", "https://ok.example/2"]
    assert found[0]["title"] == "title [REDACTED]"
    assert found[0]["snippet"] == "snippet [REDACTED] and [REDACTED]"
    assert [result.status for result in results] == ["success", "failed", "failed", "failed", "failed"]


# -- construction and settings --------------------------------------------------------------------------


@pytest.mark.parametrize("api_key", [None, "", "has space", "line\nbreak", "caf\u00e9", 42, "k" * 1025])
def test_the_api_key_is_checked_and_never_echoed(api_key: object) -> None:
    with pytest.raises(ValidationError) as info:
        create_brave_web_search_provider(api_key=api_key)  # type: ignore[arg-type]
    assert info.value.code == "invalid_api_key"
    if isinstance(api_key, str) and api_key:
        assert api_key not in str(info.value)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout_ms", 0),
        ("timeout_ms", 2_147_483_648),
        ("timeout_ms", True),
        ("timeout_ms", 1.5),
        ("max_response_bytes", 0),
        ("max_response_bytes", 16 * MIB + 1),
        ("max_response_bytes", "1024"),
    ],
)
def test_limits_outside_their_ranges_raise(option: str, value: object) -> None:
    with pytest.raises(ValidationError, match=option):
        create_brave_web_search_provider(api_key=KEY, **{option: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "base_url",
    [
        "ftp://api.example",
        "https://user:pass@api.example",
        "https://api.example/v1",
        "https://api.example/?q=1",
        7,
    ],
)
def test_base_url_must_be_an_http_origin(base_url: object) -> None:
    with pytest.raises(ValidationError) as info:
        create_brave_web_search_provider(api_key=KEY, base_url=base_url)  # type: ignore[arg-type]
    assert "pass" not in str(info.value)


def test_the_origin_is_canonical() -> None:
    assert create_brave_web_search_provider(api_key=KEY).origin == "https://api.search.brave.com"
    provider = create_brave_web_search_provider(api_key=KEY, base_url="HTTP://127.0.0.1:80/")
    assert provider.origin == "http://127.0.0.1"
    assert create_brave_web_search_provider(api_key=KEY, base_url="https://API.Example:8443").origin == (
        "https://api.example:8443"
    )
    assert repr(provider) == "BraveWebSearchProvider(origin='http://127.0.0.1')"


def test_settings_come_from_ditto_yaml(tmp_path: Path) -> None:
    config_file = tmp_path / "ditto.yaml"
    config_file.write_text(
        "interaction:\n  webSearch:\n    apiKey: ${BRAVE_API_KEY}\n    timeoutMs: 5000\n"
        "    maxResponseBytes: 65536\n    baseUrl: http://127.0.0.1:8123\n"
    )
    config = load_runtime_config_file(config_file, {"BRAVE_API_KEY": KEY})
    provider = create_brave_web_search_provider(**config.interaction.web_search.as_kwargs())
    assert provider.origin == "http://127.0.0.1:8123"
    config_file.write_text("interaction:\n  webSearch:\n    timeoutMs: 5000\n")
    keyless = load_runtime_config_file(config_file, {})
    with pytest.raises(ValidationError, match="api_key"):
        create_brave_web_search_provider(**keyless.interaction.web_search.as_kwargs())


async def test_many_searches_leave_no_connections_behind() -> None:
    async with LoopbackServer(lambda _: brave_json([hit("x", "https://x.example/")])) as server:
        results = await asyncio.gather(*(web_search(server, {"query": f"q{index}"}) for index in range(10)))
    assert all(result.status == "success" for result in results)
    assert len(server.requests) == 10
