"""Model turns for agent loops: INFER messages, providers, the INFER worker and ``react_loop``."""

from typing import TYPE_CHECKING, Any

from ditto_tui.infer.messages import (
    ACTION_REQUEST_ID,
    InferMessage,
    ToolSpec,
    mcp_tool_name,
    observation_to_infer_message,
    parse_mcp_tool_name,
)
from ditto_tui.infer.provider import DeltaCallback, InferError, ModelProvider, ModelTurn
from ditto_tui.infer.react import ReactState, react_loop, react_state
from ditto_tui.infer.scripted import ScriptedProvider, create_scripted_provider, load_scripted_provider
from ditto_tui.infer.setup import provider_from_config, resolve_provider
from ditto_tui.infer.worker import MESSAGE_DELTA, SAMPLE, SampleOutput, create_infer_worker

if TYPE_CHECKING:
    from ditto_tui.infer.openai import OpenAICompatibleProvider, create_openai_compatible_provider

__all__ = [
    "ACTION_REQUEST_ID",
    "MESSAGE_DELTA",
    "SAMPLE",
    "DeltaCallback",
    "InferError",
    "InferMessage",
    "ModelProvider",
    "ModelTurn",
    "OpenAICompatibleProvider",
    "ReactState",
    "SampleOutput",
    "ScriptedProvider",
    "ToolSpec",
    "create_infer_worker",
    "create_openai_compatible_provider",
    "create_scripted_provider",
    "load_scripted_provider",
    "mcp_tool_name",
    "observation_to_infer_message",
    "parse_mcp_tool_name",
    "provider_from_config",
    "react_loop",
    "react_state",
    "resolve_provider",
]


def __getattr__(name: str) -> Any:
    # The OpenAI-compatible provider imports httpx, which is slow to import: it loads on first use.
    if name in ("OpenAICompatibleProvider", "create_openai_compatible_provider"):
        from ditto_tui.infer import openai

        value = getattr(openai, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
