"""The scripted provider: canned turns from YAML, deterministic, offline; and the provider from ditto.yaml."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ditto_tui.config import InferConfig, load_runtime_config_file
from ditto_tui.contracts import ToolCall
from ditto_tui.errors import ConfigError
from ditto_tui.infer import (
    InferError,
    InferMessage,
    OpenAICompatibleProvider,
    ScriptedProvider,
    create_scripted_provider,
    load_scripted_provider,
    provider_from_config,
    resolve_provider,
)
from ditto_tui.signal import CancelSignal

SCRIPT = """\
turns:
  - content: Reading first.
    actions:
      - {id: read-1, name: read_text, arguments: {path: README.md}}
      - {name: mcp__demo__list_notes}
    usage: {promptTokens: 10, completionTokens: 4}
  - choose:
      - when: {call: read-1, status: success}
        content: The README is there.
      - when: {call: read-1, status: [failed, timeout], code: APPROVAL_DENIED}
        content: I was not allowed to read it.
      - content: Something else happened.
"""

USER = InferMessage(role="user", content="Go")


def answered(status: str, code: str | None = None) -> InferMessage:
    metadata: dict[str, object] = {"actionRequestId": "read-1", "status": status}
    if code is not None:
        metadata["error"] = {"code": code, "message": "no"}
    return InferMessage(role="tool", content="…", metadata=metadata)


@pytest.fixture
def script(tmp_path: Path) -> ScriptedProvider:
    path = tmp_path / "agent.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    return load_scripted_provider(path)


async def test_turns_come_in_order_with_their_tool_calls(script: ScriptedProvider) -> None:
    first = await script.sample([USER], [])
    assert first.finish_reason == "tool_calls"
    assert first.usage == {"promptTokens": 10, "completionTokens": 4}
    assert first.message.content == "Reading first."
    assert first.message.action_requests == [
        ToolCall(id="read-1", name="read_text", arguments={"path": "README.md"}),
        ToolCall(id="call-1-2", name="mcp__demo__list_notes", arguments={}),
    ]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (answered("success"), "The README is there."),
        (answered("failed", "APPROVAL_DENIED"), "I was not allowed to read it."),
        (answered("failed", "OTHER"), "Something else happened."),
    ],
)
async def test_choose_answers_according_to_the_results(
    script: ScriptedProvider, answer: InferMessage, expected: str
) -> None:
    first = (await script.sample([USER], [])).message
    second = await script.sample([USER, first, answer], [])
    assert second.message.content == expected and second.finish_reason == "stop"


async def test_the_same_conversation_gets_the_same_turns(script: ScriptedProvider) -> None:
    runs = [await script.sample([USER], []) for _ in range(3)]
    assert all(run == runs[0] for run in runs)


async def test_a_token_limit_leaves_the_scripted_turn_as_written(script: ScriptedProvider) -> None:
    assert await script.sample([USER], [], max_tokens=1) == await script.sample([USER], [])


async def test_an_exhausted_script_raises_and_repeat_last_does_not() -> None:
    once = create_scripted_provider([{"content": "only"}])
    conversation = [USER, InferMessage(role="assistant", content="only")]
    with pytest.raises(InferError) as caught:
        await once.sample(conversation, [])
    assert caught.value.code == "INFER_SCRIPT_EXHAUSTED"
    forever = create_scripted_provider({"turns": [{"actions": [{"name": "ls"}]}], "repeatLast": True})
    turn = await forever.sample([*conversation, *conversation[1:]], [])
    assert turn.message.action_requests[0].id == "call-3-1"


async def test_a_delay_honours_the_signal() -> None:
    slow = create_scripted_provider([{"content": "late", "delaySeconds": 30}])
    signal = CancelSignal()
    task = asyncio.ensure_future(slow.sample([USER], [], signal=signal))
    await asyncio.sleep(0.05)
    signal.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("turns: []\n", "turns"),
        ("turns:\n  - {content: x, bogus: 1}\n", "bogus"),
        ("turns:\n  - {when: {call: a}, content: x}\n", "only alternatives under choose"),
        ("turns:\n  - {actions: [{arguments: {}}]}\n", "name"),
        ("turns: [\n", "not valid YAML"),
        ("just text\n", "list of turns"),
    ],
)
def test_a_bad_script_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as caught:
        load_scripted_provider(path)
    assert "bad.yaml" in caught.value.message and str(tmp_path) not in caught.value.message


def test_provider_from_config(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text(SCRIPT, encoding="utf-8")
    assert provider_from_config(InferConfig(), workspace=tmp_path) is None
    scripted = provider_from_config(InferConfig(script="script.yaml"), workspace=tmp_path)
    assert isinstance(scripted, ScriptedProvider)
    default = create_scripted_provider([{"content": "x"}])
    assert resolve_provider(InferConfig(), workspace=tmp_path, default=default) is default
    assert (
        resolve_provider(InferConfig(script="script.yaml"), workspace=tmp_path, default=default)
        is not default
    )


def test_openai_provider_from_ditto_yaml_with_the_key_from_the_environment(tmp_path: Path) -> None:
    config_file = tmp_path / "ditto.yaml"
    config_file.write_text(
        "infer:\n  provider: openai\n  baseUrl: http://127.0.0.1:11434/v1\n  model: llama3.2\n"
        "  apiKey: ${MODEL_API_KEY}\n  timeoutSeconds: 30\n",
        encoding="utf-8",
    )
    config = load_runtime_config_file(config_file, {"MODEL_API_KEY": "secret-value"})
    provider = provider_from_config(config.infer, workspace=tmp_path)
    assert isinstance(provider, OpenAICompatibleProvider)
    assert (provider.endpoint, provider.model, provider.api_key, provider.timeout_s) == (
        "http://127.0.0.1:11434/v1/chat/completions",
        "llama3.2",
        "secret-value",
        30,
    )
    assert "secret-value" not in repr(provider) and "secret-value" in config.secret_values()


def test_openai_without_url_or_model_names_the_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        provider_from_config(InferConfig(provider="openai"), workspace=tmp_path)
    assert caught.value.message.splitlines() == [
        "infer.baseUrl: is required when infer.provider is openai",
        "infer.model: is required when infer.provider is openai",
    ]
