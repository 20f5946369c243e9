"""The provider-neutral ``web_search`` tool: a strict query, an exact network origin, bounded safe results."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from ditto_tui.errors import DittoError, ToolValidationError, ValidationError
from ditto_tui.interaction.web_results import MalformedResultError, normalise_results
from ditto_tui.interaction.web_results import WebSearchResult as WebSearchResult
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sandbox import canonical_origin
from ditto_tui.sanitize import REDACTED, exception_label, sanitize_public_message
from ditto_tui.signal import CancelSignal

MAX_QUERY_CHARS = 600
MAX_QUERY_WORDS = 75
MAX_RESULTS = 20
DEFAULT_RESULTS = 5
FAILED_CODE = "WEB_SEARCH_FAILED"
CANCELLED_CODE = "WEB_SEARCH_CANCELLED"
_CREDENTIAL_WINDOW = 200

FailureReason = Literal[
    "cancelled",
    "http_status",
    "malformed_response",
    "provider_error",
    "query_rejected",
    "rate_limited",
    "response_too_large",
    "timeout",
    "transport_error",
    "unexpected_redirect",
    "unsupported_encoding",
]


class WebSearchError(DittoError):
    """A search that did not produce results; ``reason`` says why, the message is safe to show."""

    title = "Web search failed"
    code = FAILED_CODE

    def __init__(
        self,
        message: str,
        *,
        reason: FailureReason,
        http_status: int | None = None,
        retry_after: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.reason: FailureReason = reason
        self.http_status = http_status
        self.retry_after = retry_after
        self.retryable = retryable

    def redacted(self, secrets: Sequence[str]) -> WebSearchError:
        """The same failure with a public message in which no form of ``secrets`` can appear."""
        return WebSearchError(
            sanitize_public_message(self.message, secrets=secrets),
            reason=self.reason,
            http_status=self.http_status,
            retry_after=self.retry_after,
            retryable=self.retryable,
        )


class WebSearchInput(TypedDict):
    """What a provider is asked: a checked one-line ``query`` and the most hits wanted (``limit``)."""

    query: str
    limit: int


@runtime_checkable
class WebSearchProvider(Protocol):
    """A search backend reached at one network origin, in the seed's shape ``search(input, signal)``."""

    @property
    def origin(self) -> str:
        """The exact origin (scheme, host, port) every request goes to."""
        ...

    async def search(
        self, input: WebSearchInput, signal: CancelSignal | None = None
    ) -> Sequence[WebSearchResult | Mapping[str, Any]]:
        """At most ``input["limit"]`` hits for ``input["query"]``; ``signal`` is the call's cancellation.

        Raise :class:`WebSearchError` on failure or cancellation (anything else raised becomes
        ``WEB_SEARCH_FAILED`` too).
        """
        ...


def _refuse(message: str, code: str) -> ToolValidationError:
    return ToolValidationError(message, code=code)


def _carries_credential(text: str) -> bool:
    """Whether the public-message sanitiser would redact a credential marker somewhere in ``text``."""
    step = _CREDENTIAL_WINDOW // 2
    for start in range(0, max(len(text) - step, 1), step):
        window = text[start : start + _CREDENTIAL_WINDOW]
        if sanitize_public_message(window).count(REDACTED) > window.count(REDACTED):
            return True
    return False


def _query(value: object) -> str:
    """The query as sent (without surrounding spaces); every limit applies to the query as given."""
    if not isinstance(value, str) or not value.strip():
        raise _refuse("query must be a nonempty string", "invalid_type")
    if not value.isprintable():
        raise _refuse("query must be one line without control or invisible characters", "control_character")
    if len(value) > MAX_QUERY_CHARS or len(value.split()) > MAX_QUERY_WORDS:
        raise _refuse(
            f"query must be at most {MAX_QUERY_CHARS} characters and {MAX_QUERY_WORDS} words", "too_long"
        )
    if _carries_credential(value):
        raise _refuse("query looks like it carries a credential; it is not sent", "credential_in_query")
    return value.strip()


def parse_request(args: object) -> WebSearchInput:
    """Check ``{query, limit?}`` strictly: unknown fields, a multi-line or oversized query, a bad limit."""
    if not isinstance(args, Mapping):
        raise _refuse("arguments must be a JSON object", "invalid_arguments")
    for key in args:
        if key not in ("query", "limit"):
            raise _refuse(f"unknown field {str(key)[:40]!r}", "unknown_field")
    limit = args.get("limit", DEFAULT_RESULTS)
    if type(limit) is not int or not 1 <= limit <= MAX_RESULTS:
        raise _refuse(f"limit must be an integer from 1 to {MAX_RESULTS}", "out_of_range")
    return {"query": _query(args.get("query")), "limit": limit}


def _provider_failure(error: Exception) -> str:
    """What a provider's own exception was, in words; its text stays out (it may hold a key or a path)."""
    label = exception_label(error)
    return f"web search provider failed: {label}" if label else "web search provider failed unexpectedly"


def _failed(error: WebSearchError) -> dict[str, Any]:
    metadata: dict[str, Any] = {"reason": error.reason}
    if error.http_status is not None:
        metadata["httpStatus"] = error.http_status
    if error.retry_after is not None:
        metadata["retryAfterSeconds"] = error.retry_after
    return {
        "status": "failed",
        "error": {
            "code": FAILED_CODE,
            "message": sanitize_public_message(error.message),
            "retryable": error.retryable,
        },
        "metadata": metadata,
    }


def _cancelled() -> dict[str, Any]:
    return {"status": "cancelled", "error": {"code": CANCELLED_CODE, "message": "web search was cancelled"}}


def _task_is_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "One line"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": DEFAULT_RESULTS},
    },
    "required": ["query"],
}


@dataclass(frozen=True, kw_only=True)
class WebSearchTool:
    """``web_search`` as a :class:`~ditto_tui.interaction.RegisteredTool`.

    A query leaves the machine, so the tool declares the ``network`` effect and asks for approval
    whenever an approval gate guards the registry.
    """

    provider: WebSearchProvider
    origin: str
    name: str = "web_search"
    description: str = "Search the public web; returns titles, URLs and snippets without opening pages"
    effects: tuple[str, ...] = ("network",)
    requires_approval: bool = True

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of ``{query, limit?}`` (a fresh copy)."""
        return copy.deepcopy(_SCHEMA)

    def validate(self, args: Mapping[str, Any]) -> None:
        """Refuse unknown fields, a bad limit and a query that is empty, multi-line, too long or a secret."""
        parse_request(args)

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        """Check the tool and the provider's exact origin with the sandbox, then search once (no retry)."""
        request = parse_request(args)
        sandbox = context.services.sandbox
        sandbox.check_tool(self.name)
        sandbox.check_network(self.origin)
        try:
            # A fresh copy each call: what the provider does with its input cannot change the request.
            asked = WebSearchInput(query=request["query"], limit=request["limit"])
            hits = await self.provider.search(asked, signal=context.signal)
        except WebSearchError as error:
            return _cancelled() if error.reason == "cancelled" else _failed(error)
        except asyncio.CancelledError:
            if _task_is_cancelling():
                raise
            return _cancelled()
        except Exception as error:  # the provider is a port: whatever it raises becomes one failed result
            return _failed(WebSearchError(_provider_failure(error), reason="provider_error"))
        if isinstance(hits, str | bytes) or not isinstance(hits, Sequence):
            return _failed(
                WebSearchError("web search provider returned no result list", reason="provider_error")
            )
        try:
            found = normalise_results(hits, request["limit"])
        except MalformedResultError as error:
            return _failed(WebSearchError(str(error), reason="malformed_response"))
        return {
            "status": "success",
            "structured_content": {
                "query": request["query"],
                "results": found.results,
                "truncated": found.truncated,
                "dropped": found.dropped,
            },
            "references": [{"uri": result["url"]} for result in found.results],
        }


def create_web_search_tool(*, provider: WebSearchProvider) -> WebSearchTool:
    """The ``web_search`` tool over ``provider``; nothing is registered or granted.

    The sandbox must grant the tool and exactly ``provider.origin`` (compare with
    ``canonical_origin``) before any request is made.
    """
    origin = getattr(provider, "origin", None)
    if not isinstance(origin, str) or not callable(getattr(provider, "search", None)):
        raise ValidationError(
            "a web search provider needs an origin and a search() method", code="invalid_provider"
        )
    return WebSearchTool(provider=provider, origin=canonical_origin(origin))
