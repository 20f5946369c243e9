"""Every configuration error is one ConfigError whose message names the key path as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import load_runtime_config_file, parse_runtime_config
from ditto_tui.errors import ConfigError


def config_error(data: object, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_runtime_config(data, env or {})
    return str(caught.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"interaction": {"commands": {"maxEntries": 20000}}},
            "interaction.commands.maxEntries: must be ≤ 10000",
        ),
        ({"interaction": {"commands": {"max_entries": 0}}}, "interaction.commands.max_entries: must be ≥ 1"),
        (
            {"interaction": {"commands": {"maxEntries": "many"}}},
            "interaction.commands.maxEntries: must be an integer",
        ),
        ({"interaction": {"webSearch": {"timeoutMs": 0}}}, "interaction.webSearch.timeoutMs: must be ≥ 1"),
        (
            {"interaction": {"webSearch": {"maxResponseBytes": 16777217}}},
            "interaction.webSearch.maxResponseBytes: must be ≤ 16777216",
        ),
        (
            {"interaction": {"webSearch": {"baseUrl": "ftp://x"}}},
            "interaction.webSearch.baseUrl: must be an http:// or https:// URL",
        ),
        ({"bogus": 1}, "bogus: unknown key"),
        ({"sandbox": {"tool": ["x"]}}, "sandbox.tool: unknown key"),
        ({"sandbox": {"read": "sometimes"}}, "sandbox.read: must be true or false"),
        ({"sandbox": {"tools": "grep"}}, "sandbox.tools: must be a list"),
        ({"sandbox": []}, "sandbox: must be a mapping"),
        (
            {"mcp": {"servers": {"files": {"command": ["npx"]}}}},
            "mcp.servers.files.command: must be a string",
        ),
        ({"mcp": {"servers": {"files": {"command": ""}}}}, "mcp.servers.files.command: must not be empty"),
        (
            {"mcp": {"servers": {"files": {}}}},
            "mcp.servers.files: needs exactly one of command (stdio) or url (HTTP)",
        ),
        (
            {"mcp": {"servers": {"files": {"command": "x", "url": "https://h"}}}},
            "mcp.servers.files: needs exactly one of command (stdio) or url (HTTP)",
        ),
        (
            {"mcp": {"servers": {"files": {"command": "x", "alwaysAllow": ["read"]}}}},
            "mcp.servers.files.alwaysAllow: approval is decided by approval.rules, not per server",
        ),
        (
            {"mcp": {"servers": {"files": {"command": "x", "type": "http"}}}},
            "mcp.servers.files: type 'http' needs url, not command",
        ),
        (
            {"mcp": {"servers": {"files": {"url": "https://h", "args": ["x"]}}}},
            "mcp.servers.files: args, env and cwd apply only to stdio servers (command)",
        ),
        (
            {"mcp": {"servers": {"files": {"command": "x", "headers": {"A": "b"}}}}},
            "mcp.servers.files: headers apply only to HTTP servers (url)",
        ),
        (
            {"mcp": {"servers": {"files": {"command": "x", "type": "ws"}}}},
            "mcp.servers.files.type: must be one of",
        ),
        (
            {"mcp": {"servers": {"a:b": {"command": "x"}}}},
            "mcp.servers.a:b: name must not contain ':'",
        ),
        ({"mcp": {"timeoutSeconds": 0}}, "mcp.timeoutSeconds: must be > 0"),
        (
            {"mcp": {"servers": {"files": {"command": "x", "logLevel": "loud"}}}},
            "mcp.servers.files.logLevel: must be one of 'debug'",
        ),
        ({"mcp": {"maxCapabilities": 0}}, "mcp.maxCapabilities: must be ≥ 1"),
        (
            {"approval": {"rules": [{"tool": "x", "decision": "maybe"}]}},
            "approval.rules[0].decision: must be one of 'allow', 'ask' or 'deny'",
        ),
        ({"approval": {"rules": [{"tool": "x"}]}}, "approval.rules[0].decision: is required"),
        (
            {"approval": {"rules": [{"tool": "x", "decision": "allow"}, {"decision": "deny"}]}},
            "approval.rules[1]: needs exactly one of tool or mcp",
        ),
        (
            {"approval": {"rules": [{"tool": "x", "mcp": "s:t", "decision": "deny"}]}},
            "approval.rules[0]: needs exactly one of tool or mcp",
        ),
        (
            {"approval": {"rules": [{"mcp": "files", "decision": "deny"}]}},
            "approval.rules[0].mcp: must be a SERVER:TOOL glob",
        ),
        ({"approval": {"timeoutSeconds": float("inf")}}, "approval.timeoutSeconds: must be a finite number"),
        ({"infer": {"provider": "anthropic"}}, "infer.provider: must be one of 'scripted' or 'openai'"),
        ({"infer": {"timeoutSeconds": -1}}, "infer.timeoutSeconds: must be > 0"),
        ({"workspace": 3}, "workspace: must be a string"),
        ({1: 2}, "1: keys must be strings"),
        ({"mcp": {"servers": {1: {"command": "x"}}}}, "mcp.servers.1: name must be a string"),
        ({"mcp": {"servers": {"": {"command": "x"}}}}, "mcp.servers.: name must not be empty"),
        (
            {"interaction": {"commands": {"maxEntries": True}}},
            "interaction.commands.maxEntries: must be a number",
        ),
        ({"infer": {"timeoutSeconds": True}}, "infer.timeoutSeconds: must be a number, not true or false"),
        ({"approval": {"rules": [5]}}, "approval.rules[0]: must be a mapping"),
    ],
)
def test_each_error_names_its_key_path(data: dict[str, Any], message: str) -> None:
    assert config_error(data).startswith(message)


def test_all_errors_are_collected_into_one_with_the_first_leading() -> None:
    message = config_error(
        {"interaction": {"commands": {"maxEntries": 0, "maxErrorBytes": 70000}}, "unknown": True}
    )
    lines = message.splitlines()
    assert lines[0] == "interaction.commands.maxEntries: must be ≥ 1"
    assert "interaction.commands.maxErrorBytes: must be ≤ 65536" in lines
    assert "unknown: unknown key" in lines


def test_error_messages_do_not_echo_values() -> None:
    message = config_error({"infer": {"apiKey": ["sk-secret-value"]}})
    assert message == "infer.apiKey: must be a string"


def test_missing_variable_names_the_key_path_and_the_variable() -> None:
    message = config_error({"interaction": {"webSearch": {"apiKey": "${BRAVE_API_KEY}"}}})
    assert message == "interaction.webSearch.apiKey: environment variable 'BRAVE_API_KEY' is not set"


def test_variable_problems_are_all_reported() -> None:
    data = {"sandbox": {"tools": ["${A}", "${1x}", "${B"]}, "infer": {"model": "${}"}}
    assert config_error(data).splitlines() == [
        "sandbox.tools[0]: environment variable 'A' is not set",
        "sandbox.tools[1]: invalid variable name '1x' in '${…}'",
        "sandbox.tools[2]: unterminated '${' (write '$${' for a literal '${')",
        "infer.model: invalid variable name '' in '${…}'",
    ]


@pytest.mark.parametrize("data", [[1, 2], "text", 3])
def test_top_level_must_be_a_mapping(data: object) -> None:
    assert config_error(data).startswith("the top level must be a mapping")


def test_invalid_yaml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "ditto.yaml"
    path.write_text("sandbox:\n  tools: [a\n", encoding="utf-8")
    problem = r"invalid YAML: (did not find )?expected ',' or '\]'"  # libyaml's words, or PyYAML's own
    with pytest.raises(ConfigError, match=rf"ditto\.yaml:3:1: {problem}"):
        load_runtime_config_file(path, {})


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "ditto.yaml"
    path.write_text("sandbox:\n  read: true\n  read: false\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="duplicate key 'read'"):
        load_runtime_config_file(path, {})


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_runtime_config_file(tmp_path / "missing.yaml", {})
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"infer:\n  model: caf\xe9\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_runtime_config_file(path, {})


def test_alias_bombs_are_bounded(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="more than 100000 values"):
        load_runtime_config_file(path, {})


def test_the_log_levels_are_named_in_their_order_when_the_mcp_sdk_was_imported_first() -> None:
    """The MCP SDK defines the same levels alphabetically; typing caches ``Literal[...] | None`` by an
    equality that ignores order, so a process that imported the SDK first still names them in order."""
    script = (
        "import mcp\n"
        "from tests.config.test_config_errors import config_error\n"
        "print(config_error({'mcp': {'servers': {'files': {'command': 'x', 'logLevel': 'loud'}}}}))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.startswith("mcp.servers.files.logLevel: must be one of 'debug', 'info'"), done.stderr
