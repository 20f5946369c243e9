"""Streaming: the OpenAI-compatible provider over server-sent events from a real loopback server, the
scripted provider's pieces, and INFER.SAMPLE turning pieces into ``message_delta`` events."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import InferConfig
from ditto_tui.contracts import ToolCall
from ditto_tui.infer import (
    MESSAGE_DELTA,
    SAMPLE,
    InferError,
    InferMessage,
    OpenAICompatibleProvider,
    create_infer_worker,
    create_openai_compatible_provider,
    create_scripted_provider,
)
from ditto_tui.infer.setup import provider_from_config
from ditto_tui.runtime import CustomEvent, ExecutionEvent, NodeStarted, create_ditto, graph
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise.journal import RunJournal
from tests.infer.chat_server import ChatServer, Reply, chat_server, chunk, completion, text_stream

KEY = "sk-proj-" + "Z9y8X7w6V5" * 5


@pytest.fixture
async def server() -> AsyncIterator[ChatServer]:
    async with chat_server() as running:
        yield running


def streaming(server: ChatServer, *, timeout_s: float = 5) -> OpenAICompatibleProvider:
    return create_openai_compatible_provider(
        base_url=server.base_url, model="demo-model", api_key=KEY, timeout_s=timeout_s, stream=True
    )


def user(text: str) -> list[InferMessage]:
    return [InferMessage(role="user", content=text)]


class Pieces:
    """An ``on_delta`` that keeps every piece, with when it came."""

    def __init__(self) -> None:
        self.pieces: list[Mapping[str, Any]] = []
        self.times: list[float] = []

    def __call__(self, piece: Mapping[str, Any]) -> None:
        self.pieces.append(piece)
        self.times.append(time.perf_counter())

    @property
    def text(self) -> str:
        return "".join(piece["text"] for piece in self.pieces if "text" in piece)


async def test_text_arrives_in_pieces_as_it_is_written(server: ChatServer) -> None:
    text = "Streaming answers show up while the model writes them."
    server.replies.append(Reply(events=text_stream(text, size=5), gap=0.02))
    seen = Pieces()
    turn = await streaming(server).sample(user("Hi"), [], on_delta=seen)
    assert turn.message == InferMessage(role="assistant", content=text) and turn.finish_reason == "stop"
    assert seen.text == text and len(seen.pieces) == len(range(0, len(text), 5))
    assert seen.times[-1] - seen.times[0] > 0.1, "pieces were handed over as they arrived, not at the end"
    request = server.received[0]
    assert request.json["stream"] is True and request.json["stream_options"] == {"include_usage": True}
    assert request.headers["accept"].startswith("text/event-stream")
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_parallel_tool_calls_split_across_deltas_are_put_together(server: ChatServer) -> None:
    first, second = '{"path": "README.md", "lines": 5}', '{"query": "approval"}'
    events = [
        chunk("Looking at two things."),
        chunk(tool_calls=[{"index": 0, "id": "c-1", "type": "function", "function": {"name": "head"}}]),
        chunk(tool_calls=[{"index": 1, "id": "c-2", "function": {"name": "mcp__demo__", "arguments": ""}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": first[:9]}}]),
        chunk(tool_calls=[{"index": 1, "function": {"name": "search_notes", "arguments": second[:4]}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": first[9:]}}]),
        chunk(tool_calls=[{"index": 1, "function": {"arguments": second[4:]}}]),
        chunk(finish_reason="tool_calls"),
    ]
    server.replies.append(Reply(events=events))
    seen = Pieces()
    turn = await streaming(server).sample(user("Go"), [], on_delta=seen)
    assert turn.message.content == "Looking at two things."
    assert turn.message.action_requests == [
        ToolCall(id="c-1", name="head", arguments={"path": "README.md", "lines": 5}),
        ToolCall(id="c-2", name="mcp__demo__search_notes", arguments={"query": "approval"}),
    ]
    assert turn.finish_reason == "tool_calls"
    calls = [piece["toolCall"] for piece in seen.pieces if "toolCall" in piece]
    assert calls[0] == {"index": 0, "id": "c-1", "name": "head"}
    assert "".join(call.get("arguments", "") for call in calls if call["index"] == 0) == first


async def test_usage_comes_in_the_last_chunk(server: ChatServer) -> None:
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    server.replies.append(Reply(events=[*text_stream("Done."), chunk(usage=usage)]))
    turn = await streaming(server).sample(user("Hi"), [])
    assert turn.usage == {"promptTokens": 7, "completionTokens": 3, "totalTokens": 10}


async def test_a_stream_cut_in_the_middle_is_a_failure_not_a_short_answer(server: ChatServer) -> None:
    server.replies.append(Reply(events=[chunk("The first half of an ans"), chunk("wer that")], done=False))
    seen = Pieces()
    with pytest.raises(InferError) as caught:
        await streaming(server).sample(user("Hi"), [], on_delta=seen)
    assert caught.value.code == "INFER_STREAM_CUT" and caught.value.retryable
    assert "after 2 pieces" in caught.value.message
    assert seen.text == "The first half of an answer that"


async def test_a_finished_stream_without_done_is_whole(server: ChatServer) -> None:
    server.replies.append(Reply(events=text_stream("All of it."), done=False))
    turn = await streaming(server).sample(user("Hi"), [])
    assert turn.message.content == "All of it." and turn.finish_reason == "stop"


async def test_a_server_that_does_not_stream_is_read_whole(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("One body, no events.")))
    seen = Pieces()
    turn = await streaming(server).sample(user("Hi"), [], on_delta=seen)
    assert turn.message.content == "One body, no events."
    assert seen.pieces == [{"text": "One body, no events."}]


async def test_an_error_event_in_the_stream_fails_the_turn_without_the_key(server: ChatServer) -> None:
    error = {"error": {"message": f"overloaded, key {KEY} throttled", "type": "server_error"}}
    server.replies.append(Reply(events=[chunk("Hal"), error], done=False))
    with pytest.raises(InferError) as caught:
        await streaming(server).sample(user("Hi"), [])
    assert caught.value.code == "INFER_STREAM_ERROR" and "overloaded" in caught.value.message
    assert KEY not in caught.value.message


async def test_a_malformed_event_is_a_bad_response(server: ChatServer) -> None:
    server.replies.append(Reply(events=[chunk("ok"), b"{not json"]))
    with pytest.raises(InferError) as caught:
        await streaming(server).sample(user("Hi"), [])
    assert caught.value.code == "INFER_BAD_RESPONSE"


async def test_an_endless_stream_is_cut_at_the_size_limit(server: ChatServer) -> None:
    server.replies.append(Reply(events=[chunk("x" * 1000) for _ in range(200)]))
    small = OpenAICompatibleProvider(
        base_url=server.base_url, model="m", stream=True, max_response_bytes=50_000
    )
    with pytest.raises(InferError) as caught:
        await small.sample(user("Hi"), [])
    assert caught.value.code == "INFER_RESPONSE_TOO_LARGE"


async def test_the_signal_stops_a_stream_in_the_middle(server: ChatServer) -> None:
    server.replies.append(Reply(events=text_stream("word " * 200, size=5), gap=0.02))
    signal = CancelSignal()
    seen = Pieces()
    task = asyncio.ensure_future(streaming(server).sample(user("Hi"), [], signal=signal, on_delta=seen))
    while len(seen.pieces) < 3:
        await asyncio.sleep(0.01)
    signal.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen.pieces) < 50


async def test_a_stream_refused_by_status_is_the_usual_status_error(server: ChatServer) -> None:
    server.replies.append(Reply(status=429, body={"error": {"message": "slow down"}}))
    with pytest.raises(InferError) as caught:
        await streaming(server).sample(user("Hi"), [])
    assert caught.value.code == "INFER_HTTP_STATUS" and caught.value.status == 429


def test_the_config_streams_by_default_and_can_turn_it_off() -> None:
    on = provider_from_config(
        InferConfig.model_validate({"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}),
        workspace=Path("."),
    )
    off = provider_from_config(
        InferConfig.model_validate(
            {"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m", "stream": False}
        ),
        workspace=Path("."),
    )
    assert isinstance(on, OpenAICompatibleProvider) and on.stream
    assert isinstance(off, OpenAICompatibleProvider) and not off.stream


# -- the scripted provider -------------------------------------------------------------------------------


async def test_a_scripted_turn_streams_word_by_word_then_its_calls() -> None:
    script = create_scripted_provider(
        [
            {
                "content": "Reading the README now.",
                "stream": True,
                "delaySeconds": 0.01,
                "actions": [{"id": "r-1", "name": "read_text", "arguments": {"path": "README.md"}}],
            }
        ]
    )
    seen = Pieces()
    started = time.perf_counter()
    turn = await script.sample(user("Hi"), [], on_delta=seen)
    words = [piece["text"] for piece in seen.pieces if "text" in piece]
    assert words == ["Reading ", "the ", "README ", "now."]
    calls = [piece["toolCall"] for piece in seen.pieces if "toolCall" in piece]
    assert calls[0] == {"index": 0, "id": "r-1", "name": "read_text"}
    assert json.loads("".join(call.get("arguments", "") for call in calls)) == {"path": "README.md"}
    assert time.perf_counter() - started >= 0.01 * len(seen.pieces)
    assert turn.message.content == "Reading the README now."
    read = ToolCall(id="r-1", name="read_text", arguments={"path": "README.md"})
    assert turn.message.action_requests == [read]


async def test_a_script_that_does_not_stream_hands_over_nothing() -> None:
    script = create_scripted_provider([{"content": "Whole."}])
    seen = Pieces()
    turn = await script.sample(user("Hi"), [], on_delta=seen)
    assert turn.message.content == "Whole." and seen.pieces == []


# -- INFER.SAMPLE ----------------------------------------------------------------------------------------


async def test_infer_sample_emits_message_deltas_and_outputs_the_whole_message(
    server: ChatServer, tmp_path: Path
) -> None:
    text = "Pieces become events."
    server.replies.append(Reply(events=text_stream(text, size=4)))
    events: list[ExecutionEvent] = []
    journal = RunJournal(tmp_path / "runs")
    plan = graph("chat").node("sample", SAMPLE)
    async with create_ditto(workers=[create_infer_worker(provider=streaming(server))]) as runtime:
        runtime.subscribe(events.append)
        runtime.subscribe(journal)
        outputs = await runtime.run(plan, {"messages": [{"role": "user", "content": "Hi"}]})
    output = outputs["sample"]
    assert output["message"] == InferMessage(role="assistant", content=text)
    deltas = [event for event in events if isinstance(event, CustomEvent) and event.name == MESSAGE_DELTA]
    assert "".join(event.data["text"] for event in deltas) == text
    started = next(event for event in events if isinstance(event, NodeStarted))
    assert {event.data["executionId"] for event in deltas} == {started.execution_id}
    recorded = "".join(path.read_text() for path in (tmp_path / "runs").glob("*.jsonl"))
    assert text in recorded and "run_finished" in recorded
    assert MESSAGE_DELTA not in recorded, "streamed pieces are not journaled: the output holds the message"
