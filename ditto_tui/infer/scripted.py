"""A scripted model: canned turns from YAML, chosen by position and by the results seen so far.

The n-th assistant message of a conversation is turn n, so the provider keeps no state and every run of
the same conversation gets the same turns. A ``choose`` entry picks the first alternative whose ``when``
matches an earlier tool result, so a script can answer a denial differently from a success::

    turns:
      - content: Reading the README first.
        actions:
          - {id: read-1, name: read_text, arguments: {path: README.md}}
      - choose:
          - when: {call: read-1, status: success}
            content: The README is there.
          - content: I could not read the README.

With ``stream: true`` (on the script or on one turn) the turn is streamed as a model would stream it:
its text word by word, then each tool call's name and arguments in pieces, each piece after
``delaySeconds`` (which is otherwise one pause before the whole answer). Streaming only changes what
``on_delta`` sees; the turn returned is the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic
import yaml
from pydantic import Field

from ditto_tui.config import ConfigModel, SafeYamlLoader
from ditto_tui.contracts import (
    ContentField,
    JsonObjectField,
    JsonValue,  # noqa: F401  (pydantic resolves the JSON field types by this name)
    MessageContent,
    ResultStatus,
    ToolCall,
)
from ditto_tui.errors import ConfigError
from ditto_tui.infer.messages import InferMessage, ToolSpec, content_text
from ditto_tui.infer.provider import DeltaCallback, InferError, ModelTurn, until_cancelled
from ditto_tui.interaction.results import validation_summary
from ditto_tui.signal import CancelSignal


class ScriptCondition(ConfigModel):
    """Holds when the latest result of call ``call`` has one of ``status`` and, if given, error ``code``."""

    call: str = Field(min_length=1, description="The call id whose result is checked.")
    status: ResultStatus | list[ResultStatus] | None = Field(default=None, description="Accepted statuses.")
    code: str | None = Field(default=None, description="The error code it must carry.")

    def holds(self, messages: Sequence[InferMessage]) -> bool:
        """Whether the conversation's latest answer to ``call`` matches."""
        answer = next((m for m in reversed(messages) if m.action_request_id == self.call), None)
        if answer is None:
            return False
        statuses = [self.status] if isinstance(self.status, str) else self.status
        if statuses is not None and answer.metadata.get("status") not in statuses:
            return False
        error = answer.metadata.get("error")
        return self.code is None or (isinstance(error, Mapping) and error.get("code") == self.code)


class ScriptAction(ConfigModel):
    """One canned tool call; without an ``id`` it gets ``call-<turn>-<n>``."""

    id: str | None = Field(default=None, min_length=1, description="The call id.")
    name: str = Field(min_length=1, description="The tool to call.")
    arguments: JsonObjectField = Field(default_factory=dict, description="Its arguments.")


class ScriptTurn(ConfigModel):
    """One canned assistant message: text, tool calls, and how long the model seems to think."""

    content: ContentField = Field(default=None, description="The assistant's text.")
    actions: list[ScriptAction] = Field(default_factory=list, description="Tool calls it asks for.")
    when: ScriptCondition | None = Field(default=None, description="Inside choose: when this one applies.")
    finish_reason: str | None = Field(default=None, description="Defaults to tool_calls or stop.")
    usage: dict[str, int] | None = Field(default=None, description="Token figures to report.")
    delay_seconds: float = Field(
        default=0.0, ge=0, le=60, description="A pause before answering, or before each piece when streamed."
    )
    stream: bool | None = Field(default=None, description="Stream this turn (default: the script's stream).")


class ScriptChoice(ConfigModel):
    """Alternatives for one turn; the first whose ``when`` holds (or that has none) is used."""

    choose: list[ScriptTurn] = Field(min_length=1, description="The alternatives, in order.")


class Script(ConfigModel):
    """A whole script: its turns, and whether the last one repeats forever."""

    turns: list[ScriptTurn | ScriptChoice] = Field(min_length=1, description="One entry per turn.")
    repeat_last: bool = Field(default=False, description="Answer every later turn with the last one.")
    stream: bool = Field(default=False, description="Stream every turn in pieces (see the module docstring).")


class ScriptedProvider:
    """A deterministic, offline :class:`~ditto_tui.infer.provider.ModelProvider` over a :class:`Script`."""

    def __init__(self, script: Script, *, name: str = "script") -> None:
        self.script = script
        self.name = name

    async def sample(
        self,
        messages: Sequence[InferMessage],
        tools: Sequence[ToolSpec],
        signal: CancelSignal | None = None,
        *,
        max_tokens: int | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelTurn:
        """The turn for this point of the conversation; raises ``InferError`` when the script ran out.

        A script counts no tokens: ``max_tokens`` is accepted and its turns are answered as written.
        A streamed turn's pieces go to ``on_delta``, ``delaySeconds`` apart.
        """
        index = sum(1 for message in messages if message.role == "assistant")
        turn = self._pick(index, messages)
        calls = [
            ToolCall(id=action.id or f"call-{index + 1}-{n}", name=action.name, arguments=action.arguments)
            for n, action in enumerate(turn.actions, 1)
        ]
        streamed = self.script.stream if turn.stream is None else turn.stream
        if streamed:
            for piece in pieces(turn.content, calls):
                await self._pause(turn.delay_seconds, signal)
                if on_delta is not None:
                    on_delta(piece)
        else:
            await self._pause(turn.delay_seconds, signal)
        message = InferMessage(role="assistant", content=turn.content, action_requests=calls)
        reason = turn.finish_reason or ("tool_calls" if calls else "stop")
        return ModelTurn(message=message, finish_reason=reason, usage=turn.usage)

    @staticmethod
    async def _pause(seconds: float, signal: CancelSignal | None) -> None:
        if seconds:
            await until_cancelled(asyncio.sleep(seconds), signal)
        elif signal is not None:
            signal.raise_if_cancelled()

    def _pick(self, index: int, messages: Sequence[InferMessage]) -> ScriptTurn:
        turns = self.script.turns
        if index >= len(turns) and not self.script.repeat_last:
            raise InferError(
                f"{self.name} has no turn {index + 1} (it has {len(turns)})", code="INFER_SCRIPT_EXHAUSTED"
            )
        entry = turns[min(index, len(turns) - 1)]
        if isinstance(entry, ScriptTurn):
            return entry
        for turn in entry.choose:
            if turn.when is None or turn.when.holds(messages):
                return turn
        raise InferError(
            f"{self.name}: no alternative of turn {index + 1} applies", code="INFER_SCRIPT_EXHAUSTED"
        )


_WORD = re.compile(r"\s*\S+\s*|\s+")
_ARGUMENT_PIECE = 24
"""Characters of a tool call's arguments text per streamed piece."""


def pieces(content: MessageContent, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The ``on_delta`` pieces of a turn streamed as a model streams one: text word by word, then each
    call's id and name, then its arguments text in short pieces."""
    out: list[dict[str, Any]] = [{"text": word} for word in _WORD.findall(content_text(content) or "")]
    for index, call in enumerate(calls):
        out.append({"toolCall": {"index": index, "id": call.id, "name": call.name}})
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        for start in range(0, len(arguments), _ARGUMENT_PIECE):
            out.append(
                {"toolCall": {"index": index, "arguments": arguments[start : start + _ARGUMENT_PIECE]}}
            )
    return out


def create_scripted_provider(
    turns: Sequence[Any] | Mapping[str, Any], *, name: str = "script"
) -> ScriptedProvider:
    """A scripted provider from a list of turns, or a mapping with ``turns`` (and ``repeatLast``)."""
    data = dict(turns) if isinstance(turns, Mapping) else {"turns": list(turns)}
    try:
        script = Script.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{name}: {validation_summary(exc, limit=5)}") from None
    for position, entry in enumerate(script.turns):
        if isinstance(entry, ScriptTurn) and entry.when is not None:
            raise ConfigError(f"{name}: turns[{position}].when: only alternatives under choose have when")
    return ScriptedProvider(script, name=name)


def load_scripted_provider(path: str | os.PathLike[str]) -> ScriptedProvider:
    """A scripted provider from a YAML file (see the module docstring for the format)."""
    file = Path(path)
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=SafeYamlLoader)
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError):
            reason = (exc.strerror or "it cannot be opened").lower()
        else:
            reason = "it is not UTF-8 text"
        raise ConfigError(f"cannot read the model script {file.name!r}: {reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"the model script {file.name!r} is not valid YAML{where}") from None
    if not isinstance(data, Mapping | list):
        raise ConfigError(f"the model script {file.name!r} must hold a list of turns or a 'turns' mapping")
    return create_scripted_provider(data, name=file.name)
