"""The Brave Web Search provider over httpx: one GET, a total deadline, no redirects, a counted body."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import zlib
from collections.abc import Coroutine
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

import httpx

from ditto_tui.errors import ToolValidationError, ValidationError
from ditto_tui.interaction.web_results import WebSearchResult
from ditto_tui.interaction.web_search import WebSearchError, WebSearchInput, parse_request
from ditto_tui.sandbox import canonical_origin
from ditto_tui.sanitize import REDACTED
from ditto_tui.signal import CancelSignal

SEARCH_PATH = "/res/v1/web/search"
MAX_TIMEOUT_MS = 2_147_483_647
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_API_KEY_CHARS = 1024
MAX_RETRY_AFTER_SECONDS = 86_400

_log = logging.getLogger(__name__)
_LIBRARY_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy")


class _SecretFilter(logging.Filter):
    """Redacts provider keys from the HTTP libraries' log records.

    httpcore's DEBUG trace prints raw response headers, so a server echoing the key in a header would put
    it in the log; every record of those loggers is checked against the keys of the providers created.
    """

    def __init__(self) -> None:
        super().__init__()
        self.forms: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = message
        for form in sorted(self.forms, key=len, reverse=True):
            redacted = redacted.replace(form, REDACTED)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_SECRET_FILTER = _SecretFilter()


def _redact_library_logs(forms: tuple[str, ...]) -> None:
    """Install the one secret filter on the HTTP libraries' loggers (once) and teach it ``forms``."""
    if not _SECRET_FILTER.forms:
        for name in _LIBRARY_LOGGERS:
            logging.getLogger(name).addFilter(_SECRET_FILTER)
    _SECRET_FILTER.forms.update(forms)


def _malformed() -> WebSearchError:
    return WebSearchError("web search provider returned a malformed response", reason="malformed_response")


class _BoundedBody:
    """Collects a body, decoding gzip itself so the cap counts decoded bytes as they are produced."""

    def __init__(self, content_encoding: str | None, cap: int) -> None:
        encoding = (content_encoding or "identity").strip().lower()
        if encoding not in ("identity", "gzip", "x-gzip"):
            raise WebSearchError(
                "web search provider used an unsupported content encoding", reason="unsupported_encoding"
            )
        self._gzip = None if encoding == "identity" else zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._cap = cap
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Add raw bytes; raise as soon as the decoded body passes the cap."""
        if self._gzip is None:
            self._data += chunk
        elif chunk:
            if self._gzip.eof:
                raise _malformed()
            try:
                self._data += self._gzip.decompress(chunk, self._cap + 1 - len(self._data))
            except zlib.error:
                raise _malformed() from None
        if len(self._data) > self._cap:
            raise WebSearchError(
                f"web search response exceeded {self._cap} bytes", reason="response_too_large"
            )

    def value(self) -> bytes:
        """The whole decoded body; a gzip stream that did not end cleanly is malformed."""
        if self._gzip is not None and (not self._gzip.eof or self._gzip.unused_data):
            raise _malformed()
        return bytes(self._data)


def _retry_after(value: str | None) -> int | None:
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 10:
        return None
    return min(int(value), MAX_RETRY_AFTER_SECONDS)


def _check_status(response: httpx.Response) -> None:
    status = response.status_code
    if 300 <= status < 400:
        raise WebSearchError(
            f"web search provider answered HTTP {status}; redirects are not followed",
            reason="unexpected_redirect",
            http_status=status,
        )
    if status == 429:
        raise WebSearchError(
            "web search rate limit reached (HTTP 429)",
            reason="rate_limited",
            http_status=status,
            retry_after=_retry_after(response.headers.get("retry-after")),
            retryable=True,
        )
    if not 200 <= status < 300:
        raise WebSearchError(
            f"web search provider answered HTTP {status}",
            reason="http_status",
            http_status=status,
            retryable=status >= 500,
        )


async def _read_body(response: httpx.Response, cap: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > cap:
        raise WebSearchError(f"web search response exceeded {cap} bytes", reason="response_too_large")
    body = _BoundedBody(response.headers.get("content-encoding"), cap)
    async for chunk in response.aiter_raw():
        body.feed(chunk)
    return body.value()


def _transport_error(error: httpx.HTTPError) -> WebSearchError:
    if isinstance(error, httpx.TimeoutException):
        return WebSearchError("web search timed out", reason="timeout", retryable=True)
    if isinstance(error, httpx.ConnectError):
        message = "could not connect to the web search provider"
    elif isinstance(error, httpx.RemoteProtocolError):
        message = "web search provider broke the HTTP protocol"
    else:
        message = "web search request failed"
    return WebSearchError(message, reason="transport_error", retryable=True)


def _parse_body(body: bytes, limit: int) -> list[WebSearchResult]:
    """The first ``limit`` hits of a Brave answer; an answer, or one of those hits, of the wrong shape is
    malformed (the call fails rather than skipping or coercing it)."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise _malformed() from None
    if not isinstance(document, dict):
        raise _malformed()
    web = document.get("web")
    if web is None:
        return []
    if not isinstance(web, dict):
        raise _malformed()
    results = web.get("results")
    if results is None:
        return []
    if not isinstance(results, list):
        raise _malformed()
    return [_hit(item) for item in results[:limit]]


def _hit(item: object) -> WebSearchResult:
    """One Brave web result: an object with text ``title`` and ``url``, and a text ``description`` unless it
    is left out (or null)."""
    if not isinstance(item, dict):
        raise _malformed()
    title, url, description = item.get("title"), item.get("url"), item.get("description")
    if not isinstance(title, str) or not isinstance(url, str) or not isinstance(description, str | None):
        raise _malformed()
    return WebSearchResult(title=title, url=url, snippet=description or "")


def _key_forms(key: str) -> tuple[str, ...]:
    """The key as sent, URL-encoded (either case) and base64 (standard and URL-safe, padded or not)."""
    raw = key.encode("utf-8")
    forms = {key, quote(key, safe=""), quote_plus(key, safe="")}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda match: match.group().lower(), form) for form in set(forms)}
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode("ascii")
        forms |= {text, text.rstrip("=")}
    return tuple(sorted(forms, key=len, reverse=True))


def _checked_input(input: WebSearchInput) -> WebSearchInput:
    """``input`` held to the ``web_search`` rules, for an application that calls the provider directly."""
    try:
        return parse_request(input)
    except ToolValidationError as error:
        raise WebSearchError(f"search input refused: {error.message}", reason="query_rejected") from None


async def _until_done_or_cancelled(
    work: Coroutine[Any, Any, list[WebSearchResult]], signal: CancelSignal | None
) -> list[WebSearchResult]:
    """Await ``work``; when ``signal`` fires first, stop it (closing its connection), raise ``cancelled``."""
    if signal is None:
        return await work
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _pending = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    if task in done:
        return task.result()
    raise WebSearchError("web search was cancelled", reason="cancelled")


class BraveWebSearchProvider:
    """Searches ``GET {origin}/res/v1/web/search`` with the ``X-Subscription-Token`` header.

    The key is kept private: it is never part of a result, an error, a log line or this object's repr.
    """

    def __init__(self, *, api_key: str, timeout_ms: int, max_response_bytes: int, origin: str) -> None:
        self._key = api_key
        self._key_forms = _key_forms(api_key)
        _redact_library_logs(self._key_forms)
        self._timeout = timeout_ms / 1000
        self._timeout_ms = timeout_ms
        self._max_bytes = max_response_bytes
        self._origin = origin

    @property
    def origin(self) -> str:
        """The canonical origin of ``base_url``: the only place requests go."""
        return self._origin

    def __repr__(self) -> str:
        return f"BraveWebSearchProvider(origin={self._origin!r})"

    async def search(
        self, input: WebSearchInput, signal: CancelSignal | None = None
    ) -> list[WebSearchResult]:
        """One request for at most ``input["limit"]`` hits for ``input["query"]``; raises
        :class:`WebSearchError`, never retries."""
        if signal is not None and signal.cancelled:
            raise WebSearchError("web search was cancelled", reason="cancelled")
        checked = _checked_input(input)
        query, limit = checked["query"], checked["limit"]
        if self._mentions_key(query):
            raise WebSearchError(
                "the query contains the provider's credential; it is not sent", reason="query_rejected"
            )
        try:
            return await _until_done_or_cancelled(self._fetch(query, limit), signal)
        except WebSearchError as error:
            failure = error.redacted([self._key])
        raise failure

    async def _fetch(self, query: str, limit: int) -> list[WebSearchResult]:
        try:
            async with asyncio.timeout(self._timeout):
                body = await self._get(query, limit)
        except TimeoutError:
            body = WebSearchError(
                f"web search timed out after {self._timeout_ms} ms", reason="timeout", retryable=True
            )
        if isinstance(body, WebSearchError):
            _log.debug("web search failed: %s", body.reason)
            raise body
        return self._scrub(_parse_body(body, limit))

    async def _get(self, query: str, limit: int) -> bytes | WebSearchError:
        """The decoded body, or the error to raise (returned so no transport exception is chained to it)."""
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip", "X-Subscription-Token": self._key}
        params = {"q": query, "count": str(limit)}
        try:
            async with (
                httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, trust_env=False) as client,
                client.stream("GET", self._origin + SEARCH_PATH, params=params, headers=headers) as response,
            ):
                _check_status(response)
                return await _read_body(response, self._max_bytes)
        except httpx.HTTPError as error:
            return _transport_error(error)

    def _mentions_key(self, text: str) -> bool:
        return any(form in text for form in self._key_forms)

    def _scrub(self, hits: list[WebSearchResult]) -> list[WebSearchResult]:
        """Drop hits whose URL carries the key; redact it from titles and snippets (an echoing server)."""
        kept = []
        for hit in hits:
            if self._mentions_key(hit.url):
                continue
            title, snippet = hit.title, hit.snippet
            for form in self._key_forms:
                title, snippet = title.replace(form, REDACTED), snippet.replace(form, REDACTED)
            kept.append(WebSearchResult(title=title, url=hit.url, snippet=snippet))
        return kept


def _bounded_int(name: str, value: object, high: int) -> int:
    if type(value) is not int or not 1 <= value <= high:
        raise ValidationError(f"{name} must be an integer from 1 to {high}", code="invalid_limit")
    return value


def _origin_of(base_url: object) -> str:
    if not isinstance(base_url, str):
        raise ValidationError("base_url must be a string", code="invalid_origin")
    origin = canonical_origin(base_url)
    parts = urlsplit(base_url)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValidationError(
            "base_url must be an origin such as https://api.search.brave.com", code="invalid_origin"
        )
    return origin


def create_brave_web_search_provider(
    *,
    api_key: str,
    timeout_ms: int = 30000,
    max_response_bytes: int = 1048576,
    base_url: str = "https://api.search.brave.com",
) -> BraveWebSearchProvider:
    """A Brave provider; the application supplies the key (from the environment, never from graph input).

    ``timeout_ms`` (1..2147483647) bounds the whole request including the body; ``max_response_bytes``
    (1..16 MiB) bounds the decoded body, read as a stream and stopped before JSON parsing. Redirects are
    never followed and no proxy or ``.netrc`` setting from the environment is used.
    """
    if (
        not isinstance(api_key, str)
        or not 0 < len(api_key) <= MAX_API_KEY_CHARS
        or not all("!" <= char <= "~" for char in api_key)
    ):
        raise ValidationError(
            "api_key must be a nonempty printable ASCII token without spaces", code="invalid_api_key"
        )
    return BraveWebSearchProvider(
        api_key=api_key,
        timeout_ms=_bounded_int("timeout_ms", timeout_ms, MAX_TIMEOUT_MS),
        max_response_bytes=_bounded_int("max_response_bytes", max_response_bytes, MAX_RESPONSE_BYTES),
        origin=_origin_of(base_url),
    )
