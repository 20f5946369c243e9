"""What an MCP server asks of the client, put before the person: sampling, elicitation and roots.

:class:`McpRequests` is the application's ``McpClientRequests`` (API.md §7). A sampling request is a
:class:`SamplingRequest` in the inbox: the person approves, edits or rejects it; an approved one goes to
the configured model (``infer:``), and its answer is a :class:`SamplingResultReview` the person approves,
edits or rejects before it reaches the server. An edited request is checked here before the model sees
it. With no model configured the person may write the answer themselves. An elicitation is an
:class:`ElicitationRequest` answered accept (a form's content checked against its ``requestedSchema``,
defaults filled), decline or cancel; a URL elicitation never opens anything here. Roots are the
workspace folder.

With no person to ask (headless runs, or an inbox with an automatic answerer) the policy of
``mcp.sampling`` and ``mcp.elicitation`` decides, and :attr:`McpRequests.notice` is told in one line what
the server asked and what was decided; with no model, sampling is refused without asking anyone. A
library approver that answers a kind (``request_kinds``) is asked instead, and its answer is on the record
as that approver's. Every decision goes on the record before the server hears it.

What one server may ask is bounded (:class:`RequestLimits`): requests waiting at once, requests a minute,
the size of one request. Past a bound the request is refused at once, never shown to anyone; the record
keeps its digest and first KiB, and :meth:`McpRequests.refused` counts the refusals of each server.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar, cast

from ditto_tui.errors import DittoError, McpError, ValidationError
from ditto_tui.infer.messages import InferMessage
from ditto_tui.infer.provider import LimitedModelProvider, ModelProvider, takes_keyword
from ditto_tui.interaction.web_results import safe_url
from ditto_tui.sanitize import escape_controls, sanitize_public_message
from ditto_tui.schema import check_against_schema
from ditto_tui.supervise.inbox import Inbox, answers, approver_name

SamplingPolicy = Literal["deny", "approve"]
ElicitationPolicy = Literal["decline", "cancel"]
ElicitAction = Literal["accept", "decline", "cancel"]
DecidedBy = Literal["person", "approver", "policy", "timeout", "limit"]
Bound = Literal["size", "pending", "rate"]
"""Which of a server's bounds refused a request (:class:`RequestLimits`)."""

REDACTED = "<redacted>"
_SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "api_key",
    "credential",
    "pin",
)
_SECRET_TEXT = re.compile(r"pass(?:word|wd|phrase)|secret|token|api[\s_-]?key|credential")
"""A field's title or description that says it holds a secret. Not ``pin``, which a name may say: a
description often names it only to warn against it ("do not give us your pin")."""

KEPT_BYTES = 1024
"""How much of a refused request's params (JSON, UTF-8) the record keeps beside their digest."""
RECORDED_REFUSALS = 32
"""How many refusals by bounds of one server the record keeps one by one; past them, one line per
:data:`REFUSALS_PER_LINE` says how many there were, so an endless flood cannot fill the disk."""
REFUSALS_PER_LINE = 1000

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "max_tokens": "maxTokens"}

PERSON_MODEL = "person"
"""The ``model`` a sampling answer names when the person wrote it: no model did."""

EDITABLE = ("systemPrompt", "messages", "maxTokens")
"""The keys of a sampling request the person may change before it goes to the model."""

NO_MODEL = (
    "refused: no model is configured to answer sampling requests "
    "(set infer.provider: openai with infer.baseUrl and infer.model, or infer.script)"
)


# -- the requests and their answers ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SamplingRequest:
    """A server asks the model to answer ``messages`` (a ``sampling/createMessage`` request).

    ``messages`` are the server's ``SamplingMessage`` dicts (untrusted text); ``params`` the request as
    sent. ``max_tokens`` is the server's limit on the answer. ``has_model`` is False when no model is
    configured: only the person can answer it (:attr:`SamplingAnswer.text`).
    """

    request_id: str
    server: str
    messages: tuple[Mapping[str, Any], ...]
    system_prompt: str | None
    model_preferences: Mapping[str, Any] | None
    max_tokens: int | None
    params: Mapping[str, Any]
    requested_at: float
    has_model: bool = True

    kind: ClassVar[Literal["sampling"]] = "sampling"


@dataclass(frozen=True, kw_only=True)
class SamplingAnswer:
    """The person's decision on a :class:`SamplingRequest`.

    ``params`` replaces the request (an edit of the :data:`EDITABLE` keys). ``text`` is the person's own
    answer: it goes to the server as the assistant's reply, no model is asked and ``params`` is not used.
    """

    approves: bool
    params: Mapping[str, Any] | None = None
    text: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class SamplingResultReview:
    """The model's answer to an approved sampling request, waiting for the person before it is sent."""

    request_id: str
    server: str
    request: SamplingRequest
    result: Mapping[str, Any]

    kind: ClassVar[Literal["sampling_result"]] = "sampling_result"

    @property
    def text(self) -> str:
        """The answer's text."""
        return result_text(self.result)


@dataclass(frozen=True, kw_only=True)
class SamplingResultAnswer:
    """The person's decision on a :class:`SamplingResultReview`; ``text`` replaces the answer's text."""

    approves: bool
    text: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ElicitationRequest:
    """A server asks the person for information (``elicitation/create``).

    ``mode`` ``form``: ``requested_schema`` says what to fill in. ``mode`` ``url``: the person is asked to
    open ``url`` (on ``host``) themselves; ``url_allowed`` is False for anything but a plain http(s) URL
    without credentials, which is shown and never opened.
    """

    request_id: str
    server: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: Mapping[str, Any] | None
    url: str | None
    host: str | None
    url_allowed: bool
    elicitation_id: str | None
    params: Mapping[str, Any]
    requested_at: float

    kind: ClassVar[Literal["elicitation"]] = "elicitation"


@dataclass(frozen=True, kw_only=True)
class ElicitationAnswer:
    """The person's answer to an elicitation: accept (with ``content`` for a form), decline or cancel."""

    action: ElicitAction
    content: Mapping[str, Any] | None = None

    @property
    def approves(self) -> bool:
        """Only an acceptance gives the server anything."""
        return self.action == "accept"


@dataclass(frozen=True, kw_only=True)
class RequestLimits:
    """How much one MCP server may ask of the client (sampling and elicitation), per server.

    ``pending``: its requests waiting at once (for the person, an approver or the model); ``per_minute``:
    its requests a minute, a token bucket that holds as many and refills evenly; ``max_bytes``: the size
    of one request's params as JSON. A request past any of them is refused at once.
    """

    pending: int = 8
    per_minute: int = 30
    max_bytes: int = 256 * 1024


@dataclass(eq=False)
class _Bucket:
    tokens: float
    at: float


# -- ports -------------------------------------------------------------------------------------------------


class RequestRecorder(Protocol):
    """Where the decisions on server requests go on the record (the run journal implements it)."""

    def record_client_request(self, fields: Mapping[str, Any]) -> None:
        """Make one decision durable; raise to refuse answering the server."""
        ...


class RequestTracer(Protocol):
    """Where the decisions on server requests go as span events (``ditto_tui.telemetry.feed``)."""

    def client_request(self, fields: Mapping[str, Any]) -> None:
        """Note one decision; never raises."""
        ...


Notice = Callable[[str], None]


# -- helpers -----------------------------------------------------------------------------------------------


def result_text(result: Mapping[str, Any]) -> str:
    """The text of a ``CreateMessageResult``'s content (text blocks joined)."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(
        str(block.get("text", ""))
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def message_text(message: Mapping[str, Any]) -> str:
    """A sampling message's content as text; what is not text is named, not shown."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping):
            parts.append(f"[{block.get('type', 'unknown')} content]")
    return "\n".join(parts)


def plain_host(url: str) -> str | None:
    """The host of ``url`` as a person should read it, whatever the rest of the URL holds: a look-alike
    name in punycode (:func:`safe_url`'s rule), a host it refuses with its hidden characters escaped."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    shown = safe_url(f"https://{host}/")
    return urllib.parse.urlsplit(shown).hostname if shown is not None else escape_controls(host)


def url_host(url: str) -> tuple[str | None, bool]:
    """The host of ``url`` (:func:`plain_host`) and whether it may be offered for opening.

    The rules are the web results' (:func:`safe_url`): plain http(s), no credentials, no invisible, bidi
    or control character, a look-alike host shown in punycode. A URL it would change is never opened.
    """
    return plain_host(url), safe_url(url) == url


def fill_defaults(schema: Mapping[str, Any] | None, content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` with the schema's defaults for the properties it leaves out."""
    filled = dict(content)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    for name, spec in (properties or {}).items():
        if name not in filled and isinstance(spec, Mapping) and "default" in spec:
            filled[name] = spec["default"]
    return filled


def check_content(schema: Mapping[str, Any] | None, content: Mapping[str, Any]) -> None:
    """Raise :class:`ValidationError` when ``content`` does not match ``schema``."""
    problems = check_against_schema(schema, content)
    if problems:
        raise ValidationError("; ".join(problems[:5]))


def check_sampling_edit(request: SamplingRequest, edited: Mapping[str, Any]) -> None:
    """Raise :class:`ValidationError` unless ``edited`` is a request the model may be given for ``request``.

    Only the :data:`EDITABLE` keys may differ; ``maxTokens`` is a whole number from 1 to the server's
    limit (the person may lower it, not raise it); ``messages`` holds at least one message; and the
    whole passes the MCP SDK's ``CreateMessageRequestParams``.
    """
    keys = sorted({str(key) for key in (*request.params, *edited)} - set(EDITABLE))
    others = [key for key in keys if request.params.get(key) != edited.get(key)]
    if others:
        names = ", ".join(repr(key) for key in others[:5])
        raise ValidationError(f"only {', '.join(EDITABLE)} may be edited, not {names}")
    limit = edited.get("maxTokens")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError("maxTokens must be a whole number of at least 1")
    if request.max_tokens is not None and limit > request.max_tokens:
        raise ValidationError(f"maxTokens may be lowered, not raised above the server's {request.max_tokens}")
    messages = edited.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValidationError("messages must be a list of at least one message")
    # Only the MCP client loads the SDK; a server that asks has loaded it already.
    from ditto_tui.interaction.mcp.requests import check_sampling_params

    check_sampling_params(edited)


def _secret_field(name: str, spec: Any) -> bool:
    """Whether a form field holds a secret: its name, title or description says so, or its schema."""
    lowered = name.lower()
    if any(word in lowered for word in _SECRET_WORDS):
        return True
    if not isinstance(spec, Mapping):
        return False
    if spec.get("writeOnly") is True or spec.get("format") == "password":
        return True
    said = (spec.get("title"), spec.get("description"))
    return any(isinstance(text, str) and _SECRET_TEXT.search(text.lower()) for text in said)


def recorded_content(schema: Mapping[str, Any] | None, content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` as the record keeps it: fields that look secret replaced by :data:`REDACTED`."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    specs = properties if isinstance(properties, Mapping) else {}
    return {
        name: REDACTED if _secret_field(str(name), specs.get(name)) else value
        for name, value in content.items()
    }


def _infer_messages(params: Mapping[str, Any]) -> list[InferMessage]:
    messages = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        messages.append(InferMessage(role="system", content=system))
    for message in params.get("messages") or ():
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in ("user", "assistant"):
            messages.append(InferMessage(role=role, content=message_text(message)))
    return messages


def _max_tokens(params: Mapping[str, Any]) -> int | None:
    limit = params.get("maxTokens")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def params_digest(data: bytes) -> dict[str, Any]:
    """What the record keeps of a refused request's params (``data``, their JSON: :func:`params_json`):
    its size and sha256 and its first :data:`KEPT_BYTES` (cut at a whole character)."""
    return {
        "params_bytes": len(data),
        "params_sha256": hashlib.sha256(data).hexdigest(),
        "params_head": data[:KEPT_BYTES].decode("utf-8", "ignore"),
    }


def params_json(params: Mapping[str, Any]) -> bytes:
    """A request's params as compact JSON (UTF-8): what its size is measured on."""
    text = json.dumps(params, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8", "backslashreplace")


def _line(text: str, limit: int = 200) -> str:
    single = " ".join(text.split())
    return escape_controls(single if len(single) <= limit else single[: limit - 1] + "…")


# -- the application's answers -----------------------------------------------------------------------------


@dataclass(eq=False, kw_only=True)
class McpRequests:
    """The application's ``McpClientRequests``: server requests through the inbox, on the record.

    ``automatic`` (headless) or an inbox with an ``answerer`` lets ``sampling`` and ``elicitation`` (the
    ``mcp:`` policy) decide instead of a person, unless that answerer answers the kind (:func:`answers`):
    then it decides, and the record names it (``by: approver``). ``provider`` is the model that answers
    approved sampling (None: only the person can answer, by writing the answer; with no person sampling
    is refused); ``timeout`` bounds each wait for the person. With ``journaled`` a decision made before
    ``recorder`` is set is refused rather than left off the record. ``limits`` bound what each server
    may ask (``clock`` paces its rate).
    """

    inbox: Inbox
    workspace: Path
    provider: ModelProvider | None = None
    recorder: RequestRecorder | None = None
    tracer: RequestTracer | None = None
    """Where each decision also goes as a span event (``ditto_tui.telemetry``), when runs are traced."""
    sampling: SamplingPolicy = "deny"
    elicitation: ElicitationPolicy = "decline"
    automatic: bool = False
    timeout: float | None = None
    notice: Notice | None = None
    journaled: bool = False
    limits: RequestLimits = field(default_factory=RequestLimits)
    clock: Callable[[], float] = time.monotonic
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _roots_listeners: list[Callable[[], object]] = field(default_factory=list)
    _pending: dict[str, int] = field(default_factory=dict)
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _refused: dict[str, int] = field(default_factory=dict)
    _refused_listeners: list[Callable[[str, int], object]] = field(default_factory=list)

    @property
    def unattended(self) -> bool:
        """Whether the policy answers instead of a person."""
        return self.automatic or self.inbox.answerer is not None

    def _approver(self, kind: str) -> str | None:
        """The name of the library approver that answers ``kind`` through the inbox, or None."""
        answerer = self.inbox.answerer
        return approver_name(answerer) if answerer is not None and answers(answerer, kind) else None

    def _new_id(self, kind: str) -> str:
        return f"mcp-{kind}-{next(self._ids)}"

    def _record(self, server: str, request: str, decision: str, by: DecidedBy, **fields: Any) -> None:
        entry = {"server": server, "request": request, "decision": decision, "by": by, **fields}
        if self.recorder is not None:
            try:
                self.recorder.record_client_request(entry)
            except DittoError as exc:
                raise McpError(f"the {request} decision could not be recorded, so it was not sent") from exc
        elif self.journaled:
            raise McpError(f"the {request} decision cannot be recorded yet, so it was not sent")
        if self.tracer is not None:
            self.tracer.client_request(entry)

    def _tell(self, server: str, asked: str, decided: str) -> None:
        if self.notice is not None:
            self.notice(f"ditto-tui: MCP server {_line(server, 80)} asked {_line(asked)}: {decided}")

    # -- bounds ---------------------------------------------------------------------------------------

    def refused(self, server: str) -> int:
        """How many requests of ``server`` its bounds refused so far."""
        return self._refused.get(server, 0)

    @property
    def refused_counts(self) -> Mapping[str, int]:
        """The refusals by bounds so far, per server that had any."""
        return dict(self._refused)

    def on_refused(self, listener: Callable[[str, int], object]) -> Callable[[], None]:
        """Call ``listener(server, count)`` after each refusal by bounds; returns a function that stops it."""
        self._refused_listeners.append(listener)
        return lambda: (
            self._refused_listeners.remove(listener) if listener in self._refused_listeners else None
        )

    @contextlib.contextmanager
    def _admitted(self, server: str, request: str, params: Mapping[str, Any]) -> Iterator[None]:
        """Count the request as pending while the block runs, or refuse it (:class:`McpError`) at once."""
        data = params_json(params)
        bound, why = self._over(server, len(data))
        if bound is not None:
            self._refuse(server, request, data, bound, why)
        self._pending[server] = self._pending.get(server, 0) + 1
        try:
            yield
        finally:
            self._pending[server] -= 1

    def _over(self, server: str, size: int) -> tuple[Bound | None, str]:
        """Which bound a request of ``size`` bytes from ``server`` breaks, and how; a request within them
        takes a token."""
        if size > self.limits.max_bytes:
            return "size", f"its params are {size} bytes, over the limit of {self.limits.max_bytes}"
        if self._pending.get(server, 0) >= self.limits.pending:
            return "pending", f"{self.limits.pending} of its requests are waiting already"
        now, rate = self.clock(), self.limits.per_minute
        bucket = self._buckets.setdefault(server, _Bucket(tokens=float(rate), at=now))
        bucket.tokens = min(float(rate), bucket.tokens + (now - bucket.at) * rate / 60)
        bucket.at = now
        if bucket.tokens < 1:
            return "rate", f"it asked more than {rate} times a minute"
        bucket.tokens -= 1
        return None, ""

    def _refuse(self, server: str, request: str, data: bytes, bound: Bound, why: str) -> None:
        count = self._refused[server] = self._refused.get(server, 0) + 1
        try:
            if count <= RECORDED_REFUSALS:
                self._record(
                    server, request, "refused", "limit", bound=bound, reason=why, **params_digest(data)
                )
            elif count % REFUSALS_PER_LINE == 0:
                self._record(server, request, "refused", "limit", bound=bound, reason=why, refused=count)
        finally:
            for listener in tuple(self._refused_listeners):
                listener(server, count)
        if count == 1:
            self._tell(server, f"for {request}", f"refused ({why}); later refusals are only counted")
        raise McpError(f"the {request} request was refused: {why}")

    # -- sampling -------------------------------------------------------------------------------------

    async def create_message(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Ask the person, then the model, then the person again; refusals raise :class:`McpError`.

        With no model configured the person is still asked, and may write the answer themselves.
        """
        with self._admitted(server, "sampling", params):
            return await self._create_message(server, params)

    async def _create_message(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        has_model = self.provider is not None
        request = _sampling_request(self._new_id("sampling"), server, params, has_model=has_model)
        approver = self._approver("sampling")
        if self.unattended and approver is None:
            return await self._sample_by_policy(request)
        by: DecidedBy = "person" if approver is None else "approver"
        named = {} if approver is None else {"approver": approver}

        def check(edited: Mapping[str, Any]) -> None:
            check_sampling_edit(request, edited)

        answer = _answer_of(
            await self.inbox.ask(request, timeout=self.timeout, check=check),
            SamplingAnswer,
            lambda reason: SamplingAnswer(approves=False, reason=reason),
        )
        if answer is None:
            self._record(server, "sampling", "timeout", "timeout", params=params)
            raise McpError("the sampling request got no decision in time")
        if not answer.approves:
            self._record(server, "sampling", "reject", by, params=params, reason=answer.reason, **named)
            who = "user" if approver is None else "approver"
            raise McpError(f"the {who} rejected the sampling request")
        if answer.text is not None:
            return self._written(request, answer.text, by, named)
        result = await self._sample(server, self._approved(request, answer, by, named))
        return await self._review(request, result)

    def _approved(
        self, request: SamplingRequest, answer: SamplingAnswer, by: DecidedBy, named: Mapping[str, str]
    ) -> Mapping[str, Any]:
        """The request the model gets: the server's, or the person's edit once it passes the checks."""
        server, params, edited = request.server, request.params, answer.params
        if edited is None:
            self._record(server, "sampling", "approve", by, params=params, **named)
            return params
        try:
            check_sampling_edit(request, edited)
        except ValidationError as exc:
            reason = exc.message
            self._record(
                server, "sampling", "invalid", by, params=params, edited=edited, reason=reason, **named
            )
            raise McpError(f"the edited sampling request is not valid: {reason}") from None
        self._record(server, "sampling", "approve", by, params=params, edited=edited, **named)
        return edited

    def _written(
        self, request: SamplingRequest, text: str, by: DecidedBy, named: Mapping[str, str]
    ) -> dict[str, Any]:
        """The person's (or approver's) own answer, on the record as a model's answer is, marked as theirs."""
        author = named.get("approver", PERSON_MODEL)
        result = {
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": author,
            "stopReason": "endTurn",
        }
        self._record(request.server, "sampling", "write", by, params=request.params, **named)
        self._record(request.server, "sampling_result", "approve", by, result=result, author=author, **named)
        return result

    async def _sample_by_policy(self, request: SamplingRequest) -> Mapping[str, Any]:
        asked = f"for a model answer ({len(request.messages)} message(s))"
        if self.sampling == "deny":
            self._record(request.server, "sampling", "deny", "policy", params=request.params)
            self._tell(request.server, asked, "denied (mcp.sampling: deny)")
            raise McpError("sampling is not allowed without a person to approve it")
        if self.provider is None:  # nothing could answer: refuse before approving anything
            reason = "no model configured"
            self._record(request.server, "sampling", "failed", "policy", params=request.params, reason=reason)
            self._tell(request.server, asked, NO_MODEL)
            raise McpError(NO_MODEL)
        self._record(request.server, "sampling", "approve", "policy", params=request.params)
        self._tell(request.server, asked, "approved (mcp.sampling: approve)")
        result = await self._sample(request.server, request.params)
        self._record(request.server, "sampling_result", "approve", "policy", result=result)
        return result

    async def _sample(self, server: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if self.provider is None:
            self._record(server, "sampling_result", "failed", "policy", reason="no model configured")
            raise McpError(NO_MODEL)
        try:
            messages = _infer_messages(params)
            if takes_keyword(type(self.provider), "max_tokens"):
                limited = cast(LimitedModelProvider, self.provider)
                turn = await limited.sample(messages, [], max_tokens=_max_tokens(params))
            else:
                turn = await self.provider.sample(messages, [])
        except DittoError as exc:
            reason = sanitize_public_message(exc.message) or "the model call failed"
            self._record(server, "sampling_result", "failed", "policy", reason=reason)
            raise McpError(f"the model could not answer: {reason}") from None
        content = turn.message.content
        text = content if isinstance(content, str) else "" if content is None else str(content)
        model = getattr(self.provider, "model", None) or getattr(self.provider, "name", None)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": str(model or "ditto-tui"),
            "stopReason": _STOP_REASONS.get(turn.finish_reason, turn.finish_reason),
        }

    async def _review(self, request: SamplingRequest, result: dict[str, Any]) -> Mapping[str, Any]:
        """The person (or the approver that answers ``sampling_result``) approves, edits or rejects the
        model's answer. An approver that approved the request but reviews no results lets it through."""
        server, approver = request.server, self._approver("sampling_result")
        if self.unattended and approver is None:
            named = self._approver("sampling")  # it answered the request, or the policy would have
            unreviewed = {"approver": named, "reviewed": False}
            self._record(server, "sampling_result", "approve", "approver", result=result, **unreviewed)
            return result
        by: DecidedBy = "person" if approver is None else "approver"
        extra = {} if approver is None else {"approver": approver}
        review = SamplingResultReview(
            request_id=self._new_id("sampling-result"), server=server, request=request, result=result
        )
        answer = _answer_of(
            await self.inbox.ask(review, timeout=self.timeout),
            SamplingResultAnswer,
            lambda reason: SamplingResultAnswer(approves=False, reason=reason),
        )
        if answer is None:
            self._record(server, "sampling_result", "timeout", "timeout", result=result)
            raise McpError("the model's answer got no decision in time")
        if not answer.approves:
            reason = answer.reason
            self._record(server, "sampling_result", "reject", by, result=result, reason=reason, **extra)
            raise McpError(f"the {'user' if approver is None else 'approver'} rejected the model's answer")
        if answer.text is not None and answer.text != result_text(result):
            edited = {**result, "content": {"type": "text", "text": answer.text}}
            self._record(server, "sampling_result", "edit", by, result=result, edited=edited, **extra)
            return edited
        self._record(server, "sampling_result", "approve", by, result=result, **extra)
        return result

    # -- elicitation ----------------------------------------------------------------------------------

    async def elicit(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Ask the person; the answer is ``{"action": ..., "content"?: ...}``."""
        with self._admitted(server, "elicitation", params):
            return await self._elicit(server, params)

    async def _elicit(self, server: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        request = _elicitation_request(self._new_id("elicitation"), server, params)
        approver = self._approver("elicitation")
        if self.unattended and approver is None:
            action = self.elicitation
            self._record(server, "elicitation", action, "policy", mode=request.mode, params=params)
            what = f"to open {request.url}" if request.mode == "url" else f"for input: {request.message}"
            done = {"decline": "declined", "cancel": "cancelled"}.get(action, action)
            self._tell(server, what, f"{done} (mcp.elicitation: {action})")
            return {"action": action}
        by: DecidedBy = "person" if approver is None else "approver"
        extra: dict[str, Any] = {"mode": request.mode, "params": params}
        if approver is not None:
            extra["approver"] = approver
        schema = request.requested_schema

        def check(content: Mapping[str, Any]) -> None:
            check_content(schema, fill_defaults(schema, content))

        answer = _answer_of(
            await self.inbox.ask(request, timeout=self.timeout, check=check),
            ElicitationAnswer,
            lambda reason: ElicitationAnswer(action="decline"),
        )
        if answer is None:
            self._record(server, "elicitation", "cancel", "timeout", mode=request.mode, params=params)
            return {"action": "cancel"}
        if answer.action != "accept":
            self._record(server, "elicitation", answer.action, by, **extra)
            return {"action": answer.action}
        if request.mode == "url":
            self._record(server, "elicitation", "accept", by, **extra)
            return {"action": "accept"}
        content = fill_defaults(schema, answer.content or {})
        try:
            check_content(schema, content)
        except ValidationError as exc:
            self._record(server, "elicitation", "invalid", by, **extra)
            raise McpError(f"the answer does not match the requested schema: {exc.message}") from None
        kept = recorded_content(schema, content)
        self._record(server, "elicitation", "accept", by, **extra, content=kept)
        return {"action": "accept", "content": content}

    # -- roots ----------------------------------------------------------------------------------------

    async def list_roots(self, server: str) -> list[Mapping[str, Any]]:
        """The workspace folder, as one ``file://`` root named after it."""
        folder = self.workspace.resolve()
        return [{"uri": folder.as_uri(), "name": folder.name or str(folder)}]

    def on_roots_changed(self, listener: Callable[[], object]) -> None:
        """Call ``listener`` when the roots change (it tells the connected servers)."""
        self._roots_listeners.append(listener)

    def change_workspace(self, workspace: Path) -> None:
        """Offer ``workspace`` as the root from now on, and tell whoever listens that the roots changed."""
        self.workspace = workspace
        for listener in tuple(self._roots_listeners):
            listener()


AnswerT = TypeVar("AnswerT")


def _answer_of(answer: Any, kind: type[AnswerT], refusal: Callable[[str | None], AnswerT]) -> AnswerT | None:
    """``answer`` when it is a ``kind``; None when the wait ended unanswered (timed out, withdrawn); any
    other answer (an approver's refusal, or an answer of another kind) is ``refusal(reason)``."""
    if isinstance(answer, kind):
        return answer
    approves = getattr(answer, "approves", None)
    if not isinstance(approves, bool):
        return None
    reason = (
        getattr(answer, "reason", None) if not approves else f"an answer of no use ({type(answer).__name__})"
    )
    return refusal(reason if isinstance(reason, str) else None)


def _sampling_request(
    request_id: str, server: str, params: Mapping[str, Any], *, has_model: bool
) -> SamplingRequest:
    messages = params.get("messages")
    preferences = params.get("modelPreferences")
    system = params.get("systemPrompt")
    return SamplingRequest(
        request_id=request_id,
        server=server,
        messages=tuple(m for m in messages if isinstance(m, Mapping))
        if isinstance(messages, Sequence)
        else (),
        system_prompt=system if isinstance(system, str) else None,
        model_preferences=preferences if isinstance(preferences, Mapping) else None,
        max_tokens=_max_tokens(params),
        params=dict(params),
        requested_at=time.time(),
        has_model=has_model,
    )


def _elicitation_request(request_id: str, server: str, params: Mapping[str, Any]) -> ElicitationRequest:
    url = params.get("url")
    mode: Literal["form", "url"] = "url" if params.get("mode") == "url" or isinstance(url, str) else "form"
    host, allowed = url_host(url) if isinstance(url, str) else (None, False)
    schema = params.get("requestedSchema")
    message, elicitation_id = params.get("message"), params.get("elicitationId")
    return ElicitationRequest(
        request_id=request_id,
        server=server,
        mode=mode,
        message=message if isinstance(message, str) else "",
        requested_schema=schema if isinstance(schema, Mapping) and mode == "form" else None,
        url=url if isinstance(url, str) else None,
        host=host,
        url_allowed=allowed,
        elicitation_id=elicitation_id if isinstance(elicitation_id, str) else None,
        params=dict(params),
        requested_at=time.time(),
    )


__all__ = [
    "EDITABLE",
    "NO_MODEL",
    "PERSON_MODEL",
    "ElicitationAnswer",
    "ElicitationRequest",
    "McpRequests",
    "RequestRecorder",
    "SamplingAnswer",
    "SamplingRequest",
    "SamplingResultAnswer",
    "SamplingResultReview",
    "check_content",
    "check_sampling_edit",
    "fill_defaults",
    "url_host",
]
