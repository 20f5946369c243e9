"""An OpenAI-compatible chat-completions provider over httpx (OpenAI, vLLM, llama.cpp server, Ollama).

With ``stream=True`` the request asks for server-sent events (``"stream": true``, usage included): text
and tool-call pieces reach ``on_delta`` as they arrive and are put together into the same turn a plain
response gives. A server that answers with one JSON body instead is read as before, its text handed to
``on_delta`` in one piece. A stream that ends before the answer is complete (no finish reason, no
``[DONE]``) is an ``INFER_STREAM_CUT`` failure, never a truncated answer taken as whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic.alias_generators import to_camel

from ditto_tui.contracts import ToolCall, ensure_json_object
from ditto_tui.errors import ValidationError
from ditto_tui.infer.messages import INVALID_ACTIONS, InferMessage, ToolSpec, content_text
from ditto_tui.infer.provider import DeltaCallback, InferError, ModelTurn, until_cancelled
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.signal import CancelSignal

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""The largest response body read from the endpoint."""

MAX_ACTION_REQUESTS = 128
"""The most tool calls one turn may ask for."""

MAX_RAW_ARGUMENTS = 4096
"""How much of a malformed arguments text is kept to show the model what it sent."""


@dataclass(frozen=True, kw_only=True)
class OpenAICompatibleProvider:
    """POSTs ``{base_url}/chat/completions``; one fresh connection per turn, closed when it ends."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    max_response_bytes: int = MAX_RESPONSE_BYTES
    stream: bool = False

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return f"{self.base_url.rstrip('/')}/chat/completions"

    async def sample(
        self,
        messages: Sequence[InferMessage],
        tools: Sequence[ToolSpec],
        signal: CancelSignal | None = None,
        *,
        max_tokens: int | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelTurn:
        """One chat completion within ``timeout_s`` in total; failures raise a sanitised ``InferError``.

        When the provider streams, the answer's pieces go to ``on_delta`` as they arrive.
        """
        body = request_body(self.model, messages, tools, max_tokens=max_tokens, stream=self.stream)
        reader = _Reader(self.max_response_bytes, on_delta, self._secrets)
        try:
            async with asyncio.timeout(self.timeout_s):
                return await until_cancelled(self._post(body, reader), signal)
        except (TimeoutError, httpx.TimeoutException):
            raise InferError(
                f"the model endpoint did not answer within {self.timeout_s:g} s",
                code="INFER_TIMEOUT",
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:
            if reader.pieces:
                raise reader.cut() from None
            detail = self._public(str(exc))
            raise InferError(
                f"cannot reach the model endpoint: {_transport_problem(exc)}"
                + (f" ({detail})" if detail else ""),
                code="INFER_CONNECT",
                retryable=True,
            ) from None

    async def _post(self, body: Mapping[str, Any], reader: _Reader) -> ModelTurn:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.stream:
            headers["Accept"] = "text/event-stream, application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        timeout = httpx.Timeout(self.timeout_s)
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            async with client.stream("POST", self.endpoint, content=content, headers=headers) as response:
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code == 200 and kind == "text/event-stream":
                    return await reader.events(response)
                raw = await reader.whole(response)
        if response.status_code != 200:
            raise self._status_error(response.status_code, raw)
        turn = parse_completion(raw, secrets=self._secrets)
        text = content_text(turn.message.content)
        if text and reader.on_delta is not None:
            reader.on_delta({"text": text})
        return turn

    @property
    def _secrets(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key else ()

    def _public(self, text: str) -> str:
        return sanitize_public_message(text, secrets=self._secrets, limit=300)

    def _status_error(self, status: int, raw: bytes) -> InferError:
        detail = _error_detail(raw)
        redirect = " (redirects are not followed)" if 300 <= status < 400 else ""
        message = f"the model endpoint answered HTTP {status}{redirect}" + (f": {detail}" if detail else "")
        return InferError(
            self._public(message),
            code="INFER_HTTP_STATUS",
            retryable=status in (408, 409, 429) or status >= 500,
            status=status,
        )


def _transport_problem(exc: httpx.HTTPError) -> str:
    """What went wrong on the way to the endpoint, in words rather than httpx's class name."""
    if isinstance(exc, httpx.ConnectError):
        return "the connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the endpoint broke the HTTP protocol"
    if isinstance(exc, httpx.ProxyError):
        return "the proxy refused the request"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "the URL scheme is not supported"
    if isinstance(exc, httpx.NetworkError):
        return "the connection broke"
    return "the request failed"


def create_openai_compatible_provider(
    *,
    base_url: str,
    model: str,
    api_key: str | None = None,
    timeout_s: float = 60,
    stream: bool = False,
) -> OpenAICompatibleProvider:
    """A provider for any OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` is sent as ``Authorization: Bearer …`` and never appears in an error or a log;
    ``timeout_s`` is the total deadline of one turn (connect, send, wait, read, the whole stream);
    ``stream`` asks for server-sent events (see the module docstring).
    """
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValidationError("base_url must be an http:// or https:// URL")
    if not isinstance(model, str) or not model:
        raise ValidationError("model must be a nonempty string")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ValidationError("timeout_s must be a positive number of seconds")
    if api_key is not None and not isinstance(api_key, str):
        raise ValidationError("api_key must be a string")
    if not isinstance(stream, bool):
        raise ValidationError("stream must be true or false")
    return OpenAICompatibleProvider(
        base_url=base_url, model=model, api_key=api_key or None, timeout_s=timeout_s, stream=stream
    )


class _Reader:
    """Reads one response within ``limit`` bytes: a whole JSON body, or a stream of server-sent events
    put together piece by piece (each piece to ``on_delta`` as it arrives)."""

    def __init__(self, limit: int, on_delta: DeltaCallback | None, secrets: Sequence[str]) -> None:
        self.limit = limit
        self.on_delta = on_delta
        self.secrets = secrets
        self.size = 0
        self.pieces = 0
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.reason: str | None = None
        self.usage: Any = None

    def _count(self, size: int) -> None:
        self.size += size
        if self.size > self.limit:
            raise InferError(
                f"the model endpoint answered with more than {self.limit} bytes",
                code="INFER_RESPONSE_TOO_LARGE",
            )

    async def whole(self, response: httpx.Response) -> bytes:
        """The body, all of it (up to the limit)."""
        chunks: list[bytes] = []
        async for chunk in response.aiter_bytes():
            self._count(len(chunk))
            chunks.append(chunk)
        return b"".join(chunks)

    async def events(self, response: httpx.Response) -> ModelTurn:
        """The turn a stream of ``data:`` events spells out, ending at ``[DONE]`` or the connection's end."""
        data: list[str] = []
        async for line in response.aiter_lines():
            self._count(len(line) + 1)
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                if self._event("\n".join(data)):
                    return self.turn()
                data = []
        if data and self._event("\n".join(data)):
            return self.turn()
        if self.reason is None:
            raise self.cut()
        return self.turn()

    def _event(self, payload: str) -> bool:
        """Fold one event in; True at the end of the stream."""
        if payload.strip() == "[DONE]":
            return True
        try:
            chunk = _loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise _bad("with a malformed stream event") from None
        if not isinstance(chunk, Mapping):
            raise _bad("with a stream event that is not an object")
        if "error" in chunk:
            detail = _error_detail(payload.encode("utf-8")) or "no detail"
            message = f"the model endpoint failed during the answer: {detail}"
            raise InferError(
                sanitize_public_message(message, secrets=self.secrets, limit=300),
                code="INFER_STREAM_ERROR",
                retryable=True,
            )
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return False
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise _bad("with a stream choice that is not an object")
        delta = choice.get("delta")
        if isinstance(delta, Mapping):
            self._delta(delta)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.reason = reason
        return False

    def _delta(self, delta: Mapping[str, Any]) -> None:
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.text.append(text)
            self._tell({"text": text})
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list):
            raise _bad("with stream tool_calls that are not a list")
        for item in calls:
            if not isinstance(item, Mapping):
                raise _bad("with a stream tool call that is not an object")
            index = item.get("index", 0)
            if type(index) is not int or not 0 <= index < MAX_ACTION_REQUESTS:
                raise _bad("with a stream tool call whose index is not a small number")
            call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
            piece: dict[str, Any] = {"index": index}
            if isinstance(item.get("id"), str) and item["id"]:
                call["id"] = piece["id"] = item["id"]
            function = item.get("function")
            if isinstance(function, Mapping):
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str) and function[key]:
                        call[key] += function[key]
                        piece[key] = function[key]
            self._tell({"toolCall": piece})

    def _tell(self, piece: dict[str, Any]) -> None:
        self.pieces += 1
        if self.on_delta is not None:
            self.on_delta(piece)

    def turn(self) -> ModelTurn:
        """The whole turn the pieces so far spell."""
        wire: dict[str, Any] = {"content": "".join(self.text) if self.text else None}
        if self.calls:
            wire["tool_calls"] = [
                {"id": call["id"], "function": {"name": call["name"], "arguments": call["arguments"]}}
                for _, call in sorted(self.calls.items())
            ]
        return _turn(wire, self.reason, self.usage, self.secrets)

    def cut(self) -> InferError:
        """The failure of a stream that ended before the answer was complete."""
        return InferError(
            f"the model endpoint's stream ended before the answer was complete (after {self.pieces} pieces)",
            code="INFER_STREAM_CUT",
            retryable=True,
        )


# --- requests ------------------------------------------------------------------------------------------


def request_body(
    model: str,
    messages: Sequence[InferMessage],
    tools: Sequence[ToolSpec],
    *,
    max_tokens: int | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    """The chat-completions request: messages in the protocol's shape, tools as function definitions,
    ``max_tokens`` only when there is a limit, ``stream`` (with usage) only when streaming."""
    body: dict[str, Any] = {"model": model, "messages": [chat_message(message) for message in messages]}
    if tools:
        body["tools"] = [_function(tool) for tool in tools]
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _function(tool: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def chat_message(message: InferMessage) -> dict[str, Any]:
    """One message as the protocol has it: a tool message answers ``tool_call_id``, never the user."""
    text = content_text(message.content)
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.action_request_id, "content": text or ""}
    if message.role != "assistant":
        return {"role": message.role, "content": text or ""}
    wire: dict[str, Any] = {"role": "assistant", "content": text}
    if message.action_requests:
        wire["tool_calls"] = [_tool_call(message, call) for call in message.action_requests]
    return wire


def _tool_call(message: InferMessage, call: ToolCall) -> dict[str, Any]:
    invalid = message.invalid_action(call.id)
    raw = invalid.get("arguments") if invalid is not None else None
    arguments = raw if isinstance(raw, str) else json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


# --- responses -----------------------------------------------------------------------------------------


def _bad(message: str) -> InferError:
    return InferError(f"the model endpoint answered {message}", code="INFER_BAD_RESPONSE")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(raw: bytes | str) -> Any:
    return json.loads(raw, parse_constant=_reject_constant)


def parse_completion(raw: bytes, *, secrets: Sequence[str] = ()) -> ModelTurn:
    """The first choice of a chat-completions response as a turn; a malformed response raises.

    Malformed tool-call arguments do not raise: the call is kept with empty arguments and recorded in
    ``metadata["invalidActions"]`` so that it is answered with a failed result.
    """
    try:
        data = _loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _bad("with malformed JSON") from None
    choices = data.get("choices") if isinstance(data, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise _bad("without choices")
    choice = choices[0]
    wire = choice.get("message")
    if not isinstance(wire, Mapping):
        raise _bad("without a message")
    return _turn(wire, choice.get("finish_reason"), data.get("usage"), secrets)


def _turn(wire: Mapping[str, Any], reason: Any, usage: Any, secrets: Sequence[str]) -> ModelTurn:
    """The turn of an assistant message in the protocol's shape, whole or put together from a stream."""
    calls, invalid = _action_requests(wire.get("tool_calls"), secrets)
    metadata: dict[str, Any] = {INVALID_ACTIONS: invalid} if invalid else {}
    message = InferMessage(
        role="assistant", content=_content(wire.get("content")), action_requests=calls, metadata=metadata
    )
    if not isinstance(reason, str) or not reason:
        reason = "tool_calls" if calls else "stop"
    return ModelTurn(message=message, finish_reason=reason, usage=_usage(usage))


def _content(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, Mapping) for part in value):
        return "".join(part["text"] for part in value if isinstance(part.get("text"), str))
    raise _bad("with message content that is not text")


def _usage(value: Any) -> dict[str, int] | None:
    if not isinstance(value, Mapping):
        return None
    usage = {
        to_camel(key): count for key, count in value.items() if isinstance(key, str) and type(count) is int
    }
    return usage or None


def _action_requests(value: Any, secrets: Sequence[str]) -> tuple[list[ToolCall], dict[str, Any]]:
    if value is None:
        return [], {}
    if not isinstance(value, list):
        raise _bad("with tool_calls that are not a list")
    if len(value) > MAX_ACTION_REQUESTS:
        raise _bad(f"with more than {MAX_ACTION_REQUESTS} tool calls in one turn")
    calls: list[ToolCall] = []
    invalid: dict[str, Any] = {}
    for index, item in enumerate(value, 1):
        call_id = _call_id(item, index, {call.id for call in calls})
        function = item.get("function") if isinstance(item, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        raw = function.get("arguments") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            calls.append(ToolCall(id=call_id, name="unnamed", arguments={}))
            invalid[call_id] = {"code": "INVALID_TOOL_CALL", "message": "The tool call names no function"}
            continue
        arguments = _arguments(raw)
        if arguments is None:
            calls.append(ToolCall(id=call_id, name=name, arguments={}))
            invalid[call_id] = _invalid_arguments(name, raw, secrets)
            continue
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return calls, invalid


def _call_id(item: Any, index: int, taken: set[str]) -> str:
    """The model's call id; a missing or repeated one gets a fresh id so every call can be answered."""
    call_id = item.get("id") if isinstance(item, Mapping) else None
    if isinstance(call_id, str) and call_id and call_id not in taken:
        return call_id
    fresh = f"call-{index}"
    while fresh in taken:
        fresh += "x"
    return fresh


def _arguments(raw: Any) -> dict[str, Any] | None:
    if raw is None or raw == "":
        return {}
    try:
        parsed = _loads(raw) if isinstance(raw, str) else raw
        return ensure_json_object(parsed, where="arguments") if isinstance(parsed, Mapping) else None
    except (ValueError, RecursionError):
        return None


def _invalid_arguments(name: str, raw: Any, secrets: Sequence[str]) -> dict[str, Any]:
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=repr)
    message = sanitize_public_message(
        f"The arguments of the call to {name!r} are not a JSON object", secrets=secrets, limit=200
    )
    return {"code": "INVALID_ARGUMENTS", "message": message, "arguments": text[:MAX_RAW_ARGUMENTS]}


def _error_detail(raw: bytes) -> str:
    """The endpoint's own error message, when its body says one; otherwise the start of the body."""
    try:
        data = _loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw[:200].decode("utf-8", "replace").strip()
    error = data.get("error") if isinstance(data, Mapping) else None
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    if isinstance(data, Mapping) and isinstance(data.get("message"), str):
        return str(data["message"])[:300]
    return ""
