"""Config errors that teach: the file and line, the closest known key, and the keys other MCP clients use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ditto_tui.config import load_runtime_config_file, parse_runtime_config
from ditto_tui.errors import ConfigError

DATA = Path(__file__).parent.parent / "data"
CLAUDE_DESKTOP = DATA / "claude_desktop_config.json"
ENV = {"NOTES_TOKEN": "notes-token-123", "REMOTE_TOKEN": "remote-token-456"}


def file_error(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "ditto.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_runtime_config_file(path, env or {})
    return str(caught.value).replace(str(path), "ditto.yaml").splitlines()


def test_an_unknown_key_names_the_file_the_line_and_the_closest_key(tmp_path: Path) -> None:
    lines = file_error(tmp_path, "sandbox:\n  tools: [grep]\n  reed: true\n")
    assert lines == ["ditto.yaml:3: sandbox.reed: unknown key (did you mean `sandbox.read`?)"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "interaction:\n  commands:\n    maxEntrys: 5\n",
            "ditto.yaml:3: interaction.commands.maxEntrys: unknown key "
            "(did you mean `interaction.commands.maxEntries`?)",
        ),
        (
            "interaction:\n  commands:\n    max_entires: 5\n",
            "ditto.yaml:3: interaction.commands.max_entires: unknown key "
            "(did you mean `interaction.commands.max_entries`?)",
        ),
        ("mcpServer: {}\n", "ditto.yaml:1: mcpServer: unknown key (did you mean `mcpServers`?)"),
        ("sandbox:\n  read: sometimes\n", "ditto.yaml:2: sandbox.read: must be true or false"),
        (
            "approval:\n  rules:\n    - {tool: x, decision: allow}\n    - tool: y\n      decision: maybe\n",
            "ditto.yaml:5: approval.rules[1].decision: must be one of 'allow', 'ask' or 'deny'",
        ),
        ("approval:\n  rules:\n    - tool: x\n", "ditto.yaml:3: approval.rules[0].decision: is required"),
        ("bogus: 1\n", "ditto.yaml:1: bogus: unknown key"),
        ("- a\n- b\n", "ditto.yaml: the top level must be a mapping of sections, not a list"),
        (
            "infer:\n  apiKey: ${OPENAI_API_KEY}\n",
            "ditto.yaml:2: infer.apiKey: environment variable 'OPENAI_API_KEY' is not set",
        ),
    ],
)
def test_every_error_of_a_file_names_the_file_and_line(tmp_path: Path, text: str, line: str) -> None:
    assert file_error(tmp_path, text) == [line]


def test_several_errors_each_have_their_line(tmp_path: Path) -> None:
    text = "sandbox:\n  read: maybe\n  wirte: true\ninfer:\n  provider: anthropic\n"
    assert file_error(tmp_path, text) == [
        "ditto.yaml:2: sandbox.read: must be true or false",
        "ditto.yaml:3: sandbox.wirte: unknown key (did you mean `sandbox.write`?)",
        "ditto.yaml:5: infer.provider: must be one of 'scripted' or 'openai'",
    ]


def test_data_built_in_code_has_no_file_to_name() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_runtime_config({"sandbox": {"reed": True}}, {})
    assert str(caught.value) == "sandbox.reed: unknown key (did you mean `sandbox.read`?)"


# --- a Claude Desktop or Cursor file ---------------------------------------------------------------------


def test_a_claude_desktop_file_passed_as_the_config_is_read_as_mcp_servers() -> None:
    config = load_runtime_config_file(CLAUDE_DESKTOP, ENV)
    assert sorted(config.mcp.servers) == ["notes", "remote"]
    assert config.mcp.servers["notes"].env == {"NOTES_TOKEN": "notes-token-123"}
    assert config.mcp.servers["remote"].disabled
    assert config.mcp.enabled_servers().keys() == {"notes"}
    assert config.sandbox.mcp == ()  # defined, not granted: nothing starts until sandbox.mcp lists it
    assert "remote-token-456" in config.secret_values()


def test_a_pasted_mcp_servers_block_joins_the_servers_of_a_ditto_yaml(tmp_path: Path) -> None:
    pasted = json.loads(CLAUDE_DESKTOP.read_text(encoding="utf-8"))
    text = "sandbox:\n  mcp: [demo, notes]\nmcp:\n  servers:\n    demo: {command: demo-server}\n"
    path = tmp_path / "ditto.yaml"
    path.write_text(text + yaml.safe_dump(pasted), encoding="utf-8")
    config = load_runtime_config_file(path, ENV)
    assert sorted(config.mcp.servers) == ["demo", "notes", "remote"]
    assert config.sandbox.mcp == ("demo", "notes")


def test_errors_inside_a_pasted_block_keep_its_key_path(tmp_path: Path) -> None:
    text = 'mcpServers:\n  files:\n    command: npx\n    arg: ["-y"]\n'
    assert file_error(tmp_path, text) == [
        "ditto.yaml:4: mcpServers.files.arg: unknown key (did you mean `mcpServers.files.args`?)"
    ]


def test_a_server_defined_twice_is_refused(tmp_path: Path) -> None:
    text = "mcp:\n  servers:\n    a: {command: x}\nmcpServers:\n  a: {command: y}\n"
    assert file_error(tmp_path, text) == [
        "ditto.yaml:5: mcpServers.a: server 'a' is also defined under mcp.servers; keep one"
    ]


def test_auto_approve_is_refused_with_the_rules_to_paste(tmp_path: Path) -> None:
    text = 'mcpServers:\n  github:\n    command: gh-mcp\n    autoApprove: ["get_issue", "list_issues"]\n'
    lines = file_error(tmp_path, text)
    assert lines[0] == (
        "ditto.yaml:4: mcpServers.github.autoApprove: approval is decided by approval.rules, not per server;"
        " remove this key and add instead:"
    )
    pasted = yaml.safe_load("\n".join(lines[1:]))
    assert pasted == {
        "approval": {
            "rules": [
                {"mcp": "github:get_issue", "decision": "allow"},
                {"mcp": "github:list_issues", "decision": "allow"},
            ]
        }
    }
    parse_runtime_config({**pasted, "mcp": {"servers": {"github": {"command": "gh-mcp"}}}}, {})


def test_empty_always_allow_and_auto_approve_mean_nothing_and_are_accepted() -> None:
    data = {"mcpServers": {"a": {"command": "x", "alwaysAllow": [], "autoApprove": []}}}
    assert parse_runtime_config(data, {}).mcp.servers["a"].command == "x"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"command": "x", "envFile": ".env"},
            "mcpServers.a.envFile: not a ditto-tui key: ditto-tui reads no env",
        ),
        ({"serverUrl": "https://h/mcp"}, "mcpServers.a.serverUrl: not a ditto-tui key: write it as url"),
        (
            {"command": "x", "transportType": "stdio"},
            "mcpServers.a.transportType: not a ditto-tui key: write",
        ),
    ],
)
def test_keys_of_other_clients_say_what_to_write_instead(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_runtime_config({"mcpServers": {"a": entry}}, {})
    assert str(caught.value).startswith(message)


# --- grants ----------------------------------------------------------------------------------------------


def test_a_granted_server_that_no_entry_defines_names_both_keys(tmp_path: Path) -> None:
    text = (
        "sandbox:\n  mcp: [demo, serch]\nmcp:\n  servers:\n    demo: {command: a}\n    search: {command: b}\n"
    )
    assert file_error(tmp_path, text) == [
        "ditto.yaml:2: sandbox.mcp[1]: grants server 'serch', which no mcp.servers entry defines "
        "(did you mean 'search'?)"
    ]


def test_the_shipped_configs_define_every_server_they_grant() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in (root / "ditto.yaml", root / "ditto_tui" / "agent" / "ditto.yaml"):
        config = load_runtime_config_file(path, {})
        assert set(config.sandbox.mcp) <= set(config.mcp.servers)
