"""Web search results made safe to keep and show: http(s) URLs without credentials, clean bounded text."""

from __future__ import annotations

import html
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit, urlunsplit

MAX_TITLE_CHARS = 256
MAX_SNIPPET_CHARS = 2048
MAX_URL_CHARS = 2048
_WORK_FACTOR = 8
"""Only this many times the limit of raw text is looked at, so a 1 MB title costs no more than a short one."""

_TAG = re.compile(r"<[^<>]{0,1024}>")
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_SPACE = re.compile(r"\s+")
# C0, DEL and C1 controls, bidi embeddings/overrides/isolates and marks, BOM, and Unicode tag characters.
_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")
_CREDENTIAL_PARAMS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "auth",
        "client_secret",
        "key",
        "passwd",
        "password",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-signature",
    }
)


def clean_text(raw: object, limit: int) -> tuple[str, bool]:
    """``raw`` as one line of plain text of at most ``limit`` code points, and whether it was cut.

    HTML tags are dropped and entities decoded; terminal escape sequences, control characters, bidi
    controls and tag characters are removed; runs of whitespace become one space. Markup such as
    ``[bold]`` stays literal text.
    """
    if not isinstance(raw, str):
        return "", False
    source = raw[: limit * _WORK_FACTOR]
    text = html.unescape(_TAG.sub(" ", source))
    text = _HIDDEN.sub("", _SPACE.sub(" ", _ESCAPE.sub("", text))).strip()
    cut = len(source) < len(raw) or len(text) > limit
    return text[:limit].rstrip(), cut


def _ascii_host(host: str | None) -> str | None:
    """The host in ASCII (an IDN in punycode, IPv6 in brackets), or ``None`` when it is not a host name."""
    if not host:
        return None
    if ":" in host:
        try:
            return f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    host = host.lower().removesuffix(".")
    if not host or not all(_HOST_LABEL.fullmatch(label) for label in host.split(".")):
        return None
    return host


def _carries_credential(query: str) -> bool:
    return any(key.lower() in _CREDENTIAL_PARAMS for key, _ in parse_qsl(query, keep_blank_values=True))


def safe_url(raw: object) -> str | None:
    """An http(s) URL fit to keep and show, or ``None`` to drop it.

    Dropped: other schemes, any whitespace, control, invisible or bidi character, backslashes, userinfo
    (``user@host``, also percent-encoded), malformed hosts or ports, credential-like query parameters
    (``token=``, ``sig=``...). A non-ASCII host is rewritten in punycode so look-alike names are visible.
    """
    if not isinstance(raw, str) or not 0 < len(raw) <= MAX_URL_CHARS:
        return None
    if "\\" in raw or any(char.isspace() or not char.isprintable() for char in raw):
        return None
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return None
    netloc = parts.netloc
    if parts.scheme not in ("http", "https") or not netloc or "@" in netloc or "%" in netloc:
        return None
    host = _ascii_host(parts.hostname)
    if host is None or _carries_credential(parts.query):
        return None
    authority = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, authority, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True, kw_only=True)
class WebSearchResult:
    """One hit as a provider reports it; the tool still checks and bounds every field."""

    title: str
    url: str
    snippet: str = ""


@dataclass(frozen=True, kw_only=True)
class NormalisedResults:
    """What is left of a provider's answer: safe results, whether text was cut, how many were dropped."""

    results: list[dict[str, str]]
    truncated: bool
    dropped: int


class MalformedResultError(ValueError):
    """A provider's result that is not a ``{title, url, snippet?}`` object of text: the call fails."""


_FIELDS = (("title", True), ("url", True), ("snippet", False))
"""Each field of a result, and whether it is required (``snippet`` may be left out)."""


def _field(hit: Mapping[str, object] | WebSearchResult, name: str) -> object:
    if isinstance(hit, Mapping):
        return hit.get(name)
    return getattr(hit, name, None)


def _checked(hit: object, index: int) -> Mapping[str, object] | WebSearchResult:
    """``hit`` when it is a result object whose fields are text; raises :class:`MalformedResultError`."""
    if not isinstance(hit, Mapping | WebSearchResult):
        raise MalformedResultError(
            f"web search provider returned a result that is not an object (item {index})"
        )
    for name, required in _FIELDS:
        value = _field(hit, name)
        if not isinstance(value, str) and (required or value is not None):
            raise MalformedResultError(
                f"web search provider returned a result whose {name} is not text (item {index})"
            )
    return hit


def normalise_results(hits: Sequence[object], limit: int) -> NormalisedResults:
    """At most ``limit`` results as ``{title, url, snippet}``; a result without a safe URL is dropped.

    Raises :class:`MalformedResultError` when one of them is not an object of text fields: a malformed
    answer fails the call, as the seed says, rather than being skipped or coerced.
    """
    results: list[dict[str, str]] = []
    truncated = len(hits) > limit
    dropped = 0
    for index, raw in enumerate(hits[:limit]):
        hit = _checked(raw, index)
        url = safe_url(_field(hit, "url"))
        if url is None:
            dropped += 1
            continue
        title, title_cut = clean_text(_field(hit, "title"), MAX_TITLE_CHARS)
        snippet, snippet_cut = clean_text(_field(hit, "snippet"), MAX_SNIPPET_CHARS)
        truncated = truncated or title_cut or snippet_cut
        results.append({"title": title or url[:MAX_TITLE_CHARS], "url": url, "snippet": snippet})
    return NormalisedResults(results=results, truncated=truncated, dropped=dropped)
