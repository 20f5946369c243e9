"""The model provider port, the turn it returns, and the error a failed model call raises."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import pydantic

from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.infer.messages import InferMessage, ToolSpec
from ditto_tui.interaction.results import validation_summary
from ditto_tui.signal import CancelSignal

T = TypeVar("T")

DeltaCallback = Callable[[Mapping[str, Any]], None]
"""Receives a streamed turn's pieces as they arrive: ``{"text": str}`` for the assistant's text, and
``{"toolCall": {"index": int, "id"?: str, "name"?: str, "arguments"?: str}}`` for a tool call under
construction (its arguments text in pieces). The whole turn is still what ``sample`` returns."""


class InferError(DittoError):
    """A model call that failed as a whole: HTTP error, timeout, malformed response, exhausted script.

    ``code`` says which (``INFER_HTTP_STATUS``, ``INFER_TIMEOUT``, ``INFER_CONNECT``, ``INFER_BAD_RESPONSE``,
    ``INFER_RESPONSE_TOO_LARGE``, ``INFER_SCRIPT_EXHAUSTED``); the message is sanitised and one line;
    ``retryable`` is descriptive only; ``status`` is the HTTP status when there was one.
    """

    title = "Model call failed"
    code = "INFER_FAILED"

    def __init__(
        self, message: str, *, code: str, retryable: bool = False, status: int | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True, kw_only=True)
class ModelTurn:
    """One sampled assistant message, why the model stopped, and its token usage when reported."""

    message: InferMessage
    finish_reason: str
    usage: Mapping[str, int] | None = None


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind INFER.SAMPLE: scripted, or an OpenAI-compatible endpoint."""

    async def sample(
        self, messages: Sequence[InferMessage], tools: Sequence[ToolSpec], signal: CancelSignal | None = None
    ) -> ModelTurn:
        """Answer the conversation with one assistant message; honour ``signal``.

        A provider that streams also takes ``on_delta=`` (a :data:`DeltaCallback`), and one that can
        limit the answer ``max_tokens=`` (:class:`LimitedModelProvider`); callers pass them only to a
        provider whose ``sample`` names them (:func:`takes_keyword`).
        """
        ...


@runtime_checkable
class LimitedModelProvider(Protocol):
    """A provider that also takes a limit on the answer's length (the bundled ones do): an MCP server's
    ``maxTokens`` reaches the model through it. A provider without it still answers, without the limit."""

    async def sample(
        self,
        messages: Sequence[InferMessage],
        tools: Sequence[ToolSpec],
        signal: CancelSignal | None = None,
        *,
        max_tokens: int | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelTurn:
        """Answer as :meth:`ModelProvider.sample` does, in at most ``max_tokens`` tokens when given, with
        the answer's pieces to ``on_delta`` as they arrive when the provider streams."""
        ...


@functools.cache
def takes_keyword(kind: type, name: str) -> bool:
    """Whether ``kind.sample`` takes the keyword ``name`` (``max_tokens``, ``on_delta``): a provider written
    to :class:`ModelProvider` alone still answers, without the limit or the pieces."""
    try:
        parameters = inspect.signature(getattr(kind, "sample")).parameters  # noqa: B009
    except (AttributeError, TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class _TurnFields(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", populate_by_name=True)

    message: InferMessage
    finish_reason: str = pydantic.Field(alias="finishReason", min_length=1)
    usage: dict[str, int] | None = None


def parse_turn(value: ModelTurn | Mapping[str, Any]) -> ModelTurn:
    """Validate what a provider returned: an assistant message, a finish reason, integer usage figures."""
    if isinstance(value, ModelTurn):
        turn = value
    elif isinstance(value, Mapping):
        try:
            fields = _TurnFields.model_validate(value)
        except pydantic.ValidationError as exc:
            raise ValidationError(
                f"the model provider returned an invalid turn: {validation_summary(exc)}"
            ) from None
        turn = ModelTurn(message=fields.message, finish_reason=fields.finish_reason, usage=fields.usage)
    else:
        raise ValidationError(f"the model provider returned {type(value).__name__}, not a turn")
    if not isinstance(turn.message, InferMessage) or turn.message.role != "assistant":
        raise ValidationError("the model provider must answer with an assistant message")
    return turn


async def until_cancelled(work: Awaitable[T], signal: CancelSignal | None) -> T:
    """Await ``work``; if ``signal`` is cancelled first, cancel it and raise ``asyncio.CancelledError``."""
    if signal is None:
        return await work
    signal.raise_if_cancelled()
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in (task, watcher):
            if not future.done():
                future.cancel()
        await asyncio.gather(task, watcher, return_exceptions=True)
    if task in done:
        return task.result()
    raise asyncio.CancelledError(signal.reason or "cancelled")
