"""The OpenAI-compatible provider against a real loopback chat-completions server, byte for byte."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ditto_tui.contracts import ToolCall
from ditto_tui.demo.tools import read_text_tool, write_text_tool
from ditto_tui.errors import ValidationError
from ditto_tui.infer import (
    InferError,
    InferMessage,
    OpenAICompatibleProvider,
    ToolSpec,
    create_infer_worker,
    create_openai_compatible_provider,
    react_loop,
)
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.runtime import create_ditto
from ditto_tui.sanitize import unsafe_reason
from ditto_tui.session import PrintSink
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise import ApprovalGate, StaticApprover
from tests.infer.chat_server import ChatServer, Reply, chat_server, completion, tool_call

KEY = "sk-proj-" + "A1b2C3d4E5" * 5
READ = ToolSpec(
    name="read_text",
    description="Read a workspace file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
NOTES = ToolSpec(name="mcp__demo__list_notes", description="List the notes", input_schema={"type": "object"})


@pytest.fixture
async def server() -> AsyncIterator[ChatServer]:
    async with chat_server() as running:
        yield running


def provider(
    server: ChatServer, *, timeout_s: float = 5, api_key: str | None = KEY
) -> OpenAICompatibleProvider:
    return create_openai_compatible_provider(
        base_url=server.base_url, model="demo-model", api_key=api_key, timeout_s=timeout_s
    )


def user(text: str) -> list[InferMessage]:
    return [InferMessage(role="system", content="Be brief."), InferMessage(role="user", content=text)]


async def test_a_plain_answer_is_one_exact_request(server: ChatServer) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    server.replies.append(Reply(body=completion("Hello.", usage=usage)))
    turn = await provider(server).sample(user("Hi"), [])
    assert turn.message == InferMessage(role="assistant", content="Hello.")
    assert turn.finish_reason == "stop"
    assert turn.usage == {"promptTokens": 12, "completionTokens": 3, "totalTokens": 15}
    [request] = server.received
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "model": "demo-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    }


async def test_a_token_limit_is_sent_as_max_tokens(server: ChatServer) -> None:
    server.replies += [Reply(body=completion("Short.")), Reply(body=completion("Unlimited."))]
    chat = provider(server)
    await chat.sample(user("Hi"), [], max_tokens=42)
    await chat.sample(user("Hi"), [])
    limited, unlimited = (request.json for request in server.received)
    assert limited == {
        "model": "demo-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "max_tokens": 42,
    }
    assert "max_tokens" not in unlimited


async def test_no_key_sends_no_authorization(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("ok")))
    await provider(server, api_key=None).sample(user("Hi"), [])
    assert "authorization" not in server.received[0].headers


async def test_tools_go_out_as_functions_and_tool_calls_come_back_as_action_requests(
    server: ChatServer,
) -> None:
    calls = [tool_call("call_a", "read_text", '{"path": "README.md"}')]
    server.replies.append(Reply(body=completion(None, calls)))
    turn = await provider(server).sample(user("Read it"), [READ, NOTES])
    assert turn.finish_reason == "tool_calls"
    assert turn.message.action_requests == [
        ToolCall(id="call_a", name="read_text", arguments={"path": "README.md"})
    ]
    assert turn.message.content is None and turn.message.metadata == {}
    assert server.received[0].json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_text",
                "parameters": READ.input_schema,
                "description": "Read a workspace file",
            },
        },
        {
            "type": "function",
            "function": {
                "name": "mcp__demo__list_notes",
                "parameters": {"type": "object"},
                "description": "List the notes",
            },
        },
    ]


async def test_parallel_tool_calls_and_their_answers_round_trip(server: ChatServer) -> None:
    calls = [
        tool_call("call_a", "read_text", '{"path": "a.md"}'),
        tool_call("call_b", "mcp__demo__list_notes", "{}"),
    ]
    server.replies += [Reply(body=completion("Two at once.", calls)), Reply(body=completion("Done."))]
    chat = provider(server)
    first = await chat.sample(user("Go"), [READ, NOTES])
    assert [call.id for call in first.message.action_requests] == ["call_a", "call_b"]
    answers = [
        InferMessage(role="tool", content="text of a", metadata={"actionRequestId": "call_a"}),
        InferMessage(
            role="tool",
            content=[{"type": "json", "data": {"notes": ["n1"]}}],
            metadata={"actionRequestId": "call_b", "status": "success"},
        ),
    ]
    await chat.sample([*user("Go"), first.message, *answers], [READ, NOTES])
    messages = server.received[1].json["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": "Two at once.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_text", "arguments": '{"path": "a.md"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "mcp__demo__list_notes", "arguments": "{}"},
            },
        ],
    }
    assert messages[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "text of a"},
        {"role": "tool", "tool_call_id": "call_b", "content": '{"notes": ["n1"]}'},
    ]
    assert all(m["role"] != "user" or m["content"] == "Go" for m in messages)


async def test_malformed_tool_arguments_become_a_failed_action_not_a_crash(server: ChatServer) -> None:
    calls = [
        tool_call("call_a", "read_text", '{"path": "README.md"'),
        tool_call("call_b", "read_text", "[1, 2]"),
        tool_call("call_c", "read_text", '{"path": NaN}'),
        {"id": "call_d", "type": "function", "function": {"arguments": "{}"}},
        tool_call("call_e", "read_text", '{"path": "ok.md"}'),
    ]
    server.replies += [Reply(body=completion(None, calls)), Reply(body=completion("fine"))]
    chat = provider(server)
    turn = await chat.sample(user("Go"), [READ])
    message = turn.message
    assert [c.id for c in message.action_requests] == ["call_a", "call_b", "call_c", "call_d", "call_e"]
    assert message.action_requests[4].arguments == {"path": "ok.md"}
    for call_id in ("call_a", "call_b", "call_c"):
        invalid = message.invalid_action(call_id)
        assert invalid is not None and invalid["code"] == "INVALID_ARGUMENTS"
        assert unsafe_reason(invalid["message"]) is None
    assert message.invalid_action("call_d")["code"] == "INVALID_TOOL_CALL"  # type: ignore[index]
    assert message.invalid_action("call_e") is None
    # Sent back, the assistant message shows the model exactly what it produced.
    answers = [
        InferMessage(role="tool", content="failed", metadata={"actionRequestId": c.id})
        for c in message.action_requests
    ]
    await chat.sample([*user("Go"), message, *answers], [READ])
    sent = server.received[1].json["messages"][2]["tool_calls"]
    assert sent[0]["function"]["arguments"] == '{"path": "README.md"'
    assert sent[4]["function"]["arguments"] == '{"path": "ok.md"}'


async def test_missing_or_repeated_call_ids_get_fresh_ones(server: ChatServer) -> None:
    calls = [
        {"type": "function", "function": {"name": "read_text", "arguments": "{}"}},
        tool_call("same", "read_text", "{}"),
        tool_call("same", "read_text", "{}"),
    ]
    server.replies.append(Reply(body=completion(None, calls)))
    turn = await provider(server).sample(user("Go"), [READ])
    ids = [call.id for call in turn.message.action_requests]
    assert len(set(ids)) == 3 and ids[1] == "same"


@pytest.mark.parametrize(
    ("reply", "code", "status", "retryable"),
    [
        (
            Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {KEY}"}}),
            "INFER_HTTP_STATUS",
            401,
            False,
        ),
        (
            Reply(status=429, body={"error": {"message": "Rate limit reached"}}),
            "INFER_HTTP_STATUS",
            429,
            True,
        ),
        (Reply(status=500, body=b"<html>Internal Server Error</html>"), "INFER_HTTP_STATUS", 500, True),
        (Reply(status=307, headers={"Location": "http://169.254.169.254/"}), "INFER_HTTP_STATUS", 307, False),
        (Reply(body=b"{not json"), "INFER_BAD_RESPONSE", None, False),
        (Reply(body={"choices": []}), "INFER_BAD_RESPONSE", None, False),
        (Reply(body={"choices": [{"message": {"content": 3}}]}), "INFER_BAD_RESPONSE", None, False),
        (Reply(body=b'{"choices": [{"message": {"content": NaN}}]}'), "INFER_BAD_RESPONSE", None, False),
    ],
    ids=["401", "429", "500", "redirect", "bad-json", "no-choices", "bad-content", "nan"],
)
async def test_errors_are_structured_and_sanitised(
    server: ChatServer, reply: Reply, code: str, status: int | None, retryable: bool
) -> None:
    server.replies.append(reply)
    with pytest.raises(InferError) as caught:
        await provider(server).sample(user("Hi"), [])
    error = caught.value
    assert (error.code, error.status, error.retryable) == (code, status, retryable)
    assert unsafe_reason(error.message) is None and KEY not in error.message
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


async def test_e01_a_key_echoed_by_the_endpoint_is_redacted(server: ChatServer) -> None:
    server.replies.append(
        Reply(status=401, body={"error": {"message": f"bad key {KEY}; Authorization: Bearer {KEY}"}})
    )
    with pytest.raises(InferError) as caught:
        await provider(server).sample(user("Hi"), [])
    assert "HTTP 401" in caught.value.message and KEY not in caught.value.message
    assert KEY[8:20] not in caught.value.message


async def test_e02_the_key_is_never_logged(server: ChatServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.replies += [Reply(body=completion("ok")), Reply(status=403, body={"error": "forbidden"})]
    chat = provider(server)
    await chat.sample(user("Hi"), [])
    with pytest.raises(InferError):
        await chat.sample(user("Hi"), [])
    assert KEY not in caplog.text and KEY not in repr(chat)


async def test_a_slow_endpoint_hits_the_total_deadline(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("late"), delay=5))
    started = time.perf_counter()
    with pytest.raises(InferError) as caught:
        await provider(server, timeout_s=0.3).sample(user("Hi"), [])
    assert caught.value.code == "INFER_TIMEOUT" and caught.value.retryable
    assert time.perf_counter() - started < 2


async def test_a_trickling_body_hits_the_total_deadline_not_a_per_read_one(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("x" * 200), trickle=0.05))
    started = time.perf_counter()
    with pytest.raises(InferError) as caught:
        await provider(server, timeout_s=0.5).sample(user("Hi"), [])
    assert caught.value.code == "INFER_TIMEOUT"
    assert time.perf_counter() - started < 2


async def test_an_oversized_body_is_cut_before_parsing(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("x" * 2000)))
    small = OpenAICompatibleProvider(base_url=server.base_url, model="m", max_response_bytes=1000)
    with pytest.raises(InferError) as caught:
        await small.sample(user("Hi"), [])
    assert caught.value.code == "INFER_RESPONSE_TOO_LARGE"


async def test_an_unreachable_endpoint_is_a_connect_failure() -> None:
    async with chat_server() as running:
        base_url = running.base_url
    chat = create_openai_compatible_provider(base_url=base_url, model="m", api_key=KEY, timeout_s=2)
    with pytest.raises(InferError) as caught:
        await chat.sample(user("Hi"), [])
    assert caught.value.code == "INFER_CONNECT" and KEY not in caught.value.message


async def test_the_signal_cancels_a_pending_request(server: ChatServer) -> None:
    server.replies.append(Reply(body=completion("late"), delay=5))
    signal = CancelSignal()
    task = asyncio.ensure_future(provider(server).sample(user("Hi"), [], signal=signal))
    await asyncio.sleep(0.2)
    signal.cancel("stop")
    started = time.perf_counter()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 1


async def test_infer_sample_node_over_the_provider(server: ChatServer) -> None:
    server.replies.append(
        Reply(
            body=completion("Hello.", usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})
        )
    )
    async with create_ditto(workers=[create_infer_worker(provider=provider(server))]) as runtime:
        output = await runtime.invoke(
            "INFER.SAMPLE",
            {"messages": [{"role": "user", "content": "Hi"}], "tools": [READ.to_wire()]},
        )
    assert output == {
        "message": InferMessage(role="assistant", content="Hello."),
        "finishReason": "stop",
        "usage": {"promptTokens": 1, "completionTokens": 2, "totalTokens": 3},
    }
    assert json.loads(server.received[0].body)["tools"][0]["function"]["name"] == "read_text"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "ftp://x", "model": "m"},
        {"base_url": "http://127.0.0.1:1", "model": ""},
        {"base_url": "http://127.0.0.1:1", "model": "m", "timeout_s": 0},
    ],
)
def test_bad_settings_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        create_openai_compatible_provider(**kwargs)  # type: ignore[arg-type]


async def test_the_react_loop_on_the_openai_provider_end_to_end(server: ChatServer, tmp_path: Path) -> None:
    workspace = tmp_path
    (workspace / "README.md").write_text("# Demo\n", encoding="utf-8")
    server.replies += [
        Reply(
            body=completion(
                "Reading and writing.",
                [
                    tool_call("call_r", "read_text", '{"path": "README.md"}'),
                    tool_call("call_w", "write_text", '{"path": "note.md", "text": "hi"}'),
                    tool_call("call_x", "read_text", '{"path": '),
                ],
            )
        ),
        Reply(body=completion("The note could not be written.")),
    ]
    worker = create_interaction_worker(
        tools=[read_text_tool, write_text_tool],
        output=PrintSink(),
        approval=ApprovalGate(approver=StaticApprover("deny")),
    )
    async with create_ditto(
        sandbox={"tools": ["read_text", "write_text"], "read": True, "write": True},
        workspace=workspace,
        workers=[worker, create_infer_worker(provider=provider(server))],
    ) as runtime:
        state = await runtime.loop(
            react_loop(tools=["read_text", "write_text"], max_steps=4), "Note the README."
        )
    assert state.answer.content == "The note could not be written."
    assert not (workspace / "note.md").exists()
    second = server.received[1].json
    assert [f["function"]["name"] for f in second["tools"]] == ["read_text", "write_text"]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_r", "call_w", "call_x"]
    assert tool_messages[0]["content"] == "# Demo\n"
    assert (
        "APPROVAL_DENIED" in tool_messages[1]["content"] and "did not succeed" in tool_messages[1]["content"]
    )
    assert "INVALID_ARGUMENTS" in tool_messages[2]["content"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "tool", "tool"]
    assert second["messages"][0] == {"role": "user", "content": "Note the README."}
