"""Loading ditto.yaml: the full example, a pasted mcpServers block, defaults and ${VAR} substitution."""

from __future__ import annotations

from pathlib import Path

import pytest

from ditto_tui.config import (
    ApprovalRule,
    RuntimeConfig,
    load_runtime_config_file,
    parse_runtime_config,
)

DATA = Path(__file__).parent.parent / "data"
ENV = {
    "BRAVE_API_KEY": "brave-key-123",
    "GITHUB_TOKEN": "gh-token-456",
    "MCP_TOKEN": "mcp-token-789",
    "OPENAI_API_KEY": "openai-key-000",
    "GITHUB_PAT": "pat-111",
}


def test_full_file_loads_every_section() -> None:
    config = load_runtime_config_file(DATA / "ditto.full.yaml", ENV)
    assert config.workspace == "/srv/project"
    assert config.sandbox.to_permissions_kwargs() == {
        "tools": ["read_text", "grep", "cat", "web_search"],
        "mcp": ["files", "search"],
        "read": True,
        "write": False,
        "execute": True,
        "network": ["https://api.search.brave.com"],
    }
    assert config.interaction.commands.as_kwargs() == {
        "max_entries": 200,
        "max_output_bytes": 32768,
        "max_error_bytes": 4096,
    }
    assert config.interaction.web_search.as_kwargs() == {
        "api_key": "brave-key-123",
        "timeout_ms": 10000,
        "max_response_bytes": 524288,
        "base_url": "https://api.search.brave.com",
    }
    assert config.approval.timeout_seconds == 120
    assert config.approval.rules[2] == ApprovalRule(mcp="files:*", decision="ask")
    assert config.infer.provider == "openai" and config.infer.api_key == "openai-key-000"
    assert config.infer.timeout_seconds == 45


def test_full_file_mcp_section() -> None:
    mcp = load_runtime_config_file(DATA / "ditto.full.yaml", ENV).mcp
    assert mcp.registry_kwargs() == {"max_discovery_pages": 10, "max_capabilities": 200}
    assert mcp.timeout_seconds == 30
    assert mcp.servers["files"].timeout == 20
    assert mcp.servers["legacy"].disabled
    assert mcp.enabled_servers() == {
        "files": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
            "env": {"GITHUB_TOKEN": "gh-token-456", "LOG_LEVEL": "info"},
            "cwd": ".",
        },
        "search": {
            "type": "streamable-http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer mcp-token-789"},
        },
    }


def test_full_file_round_trips_through_the_wire_form() -> None:
    config = load_runtime_config_file(DATA / "ditto.full.yaml", ENV)
    camel = config.model_dump(by_alias=True)
    # The parsed copy holds no ${VAR} any more, so only the values (not the substitution record) compare.
    assert parse_runtime_config(camel, {}).model_dump() == config.model_dump()
    assert parse_runtime_config(config.model_dump(), {}).model_dump() == config.model_dump()
    assert "maxEntries" in camel["interaction"]["commands"]


def test_secrets_stay_out_of_repr_and_are_listed_for_redaction() -> None:
    config = load_runtime_config_file(DATA / "ditto.full.yaml", ENV)
    text = repr(config)
    for secret in ENV.values():
        assert secret not in text
    assert set(config.secret_values()) == {
        "brave-key-123",
        "openai-key-000",
        "gh-token-456",
        "Bearer mcp-token-789",
        "mcp-token-789",  # substituted from ${VAR} (U-07): a secret wherever it lands
    }


def test_pasted_claude_desktop_block_parses_unchanged() -> None:
    config = load_runtime_config_file(DATA / "ditto.claude-desktop.yaml", ENV)
    servers = config.mcp.servers
    assert servers["filesystem"].command == "npx"
    assert servers["filesystem"].args[-1] == "/Users/username/Downloads"
    assert servers["github"].env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "pat-111"}
    assert servers["remote"].to_params() == {
        "url": "https://mcp.example.com/mcp",
        "headers": {"API_KEY": "value"},
    }
    assert config.sandbox.mcp == ("filesystem", "github", "remote")


def test_snake_case_keys_and_empty_sections() -> None:
    config = load_runtime_config_file(DATA / "ditto.snake.yaml", {})
    assert config.interaction.commands.max_entries == 50
    assert config.interaction.commands.max_output_bytes == 65536
    assert config.interaction.web_search.timeout_ms == 5000
    assert config.approval.timeout_seconds == 5
    assert config.sandbox.to_permissions_kwargs()["tools"] == []


def test_empty_file_gives_defaults() -> None:
    config = load_runtime_config_file(DATA / "ditto.empty.yaml", {})
    assert config == RuntimeConfig()
    assert config.interaction.commands.as_kwargs() == {
        "max_entries": 1000,
        "max_output_bytes": 65536,
        "max_error_bytes": 8192,
    }
    assert config.interaction.web_search.base_url == "https://api.search.brave.com"
    assert config.mcp.registry_kwargs() == {"max_discovery_pages": 100, "max_capabilities": 1000}
    assert config.infer.provider == "scripted"
    assert config.sandbox.to_permissions_kwargs() == {
        "tools": [],
        "mcp": [],
        "read": False,
        "write": False,
        "execute": False,
        "network": [],
    }
    assert parse_runtime_config(None, {}) == config
    assert parse_runtime_config(config, {}) is config


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${KEY}", "v1"),
        ("pre-${KEY}-post", "pre-v1-post"),
        ("${KEY}${OTHER}", "v1v2"),
        ("${env:KEY}", "v1"),
        ("$${KEY}", "${KEY}"),
        ("a$${b} ${KEY}", "a${b} v1"),
        ("cost $5", "cost $5"),
        ("no vars", "no vars"),
    ],
)
def test_variable_substitution(value: str, expected: str) -> None:
    data = {"infer": {"apiKey": value}}
    config = parse_runtime_config(data, {"KEY": "v1", "OTHER": "v2"})
    assert config.infer.api_key == expected


def test_substitution_reaches_lists_and_numbers_are_coerced_from_text() -> None:
    data = {
        "sandbox": {"tools": ["${TOOL}"]},
        "interaction": {"commands": {"maxEntries": "${MAX}"}},
        "mcp": {"servers": {"s": {"command": "x", "env": {"PORT": 8080, "DEBUG": True}}}},
    }
    config = parse_runtime_config(data, {"TOOL": "grep", "MAX": "500"})
    assert config.sandbox.tools == ("grep",)
    assert config.interaction.commands.max_entries == 500
    assert config.mcp.servers["s"].env == {"PORT": "8080", "DEBUG": "true"}


def test_substituted_values_are_not_substituted_again() -> None:
    config = parse_runtime_config({"infer": {"model": "${A}"}}, {"A": "${B}", "B": "nope"})
    assert config.infer.model == "${B}"


def test_every_section_and_key_is_documented() -> None:
    from pydantic import BaseModel

    from ditto_tui import config

    for name in config.__all__:
        value = getattr(config, name)
        if isinstance(value, type) and issubclass(value, BaseModel):
            assert value.__doc__, name
            for field_name, field in value.model_fields.items():
                assert field.description, f"{name}.{field_name}"
