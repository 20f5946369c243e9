"""V-02: ``mcp import`` never writes a literal secret (an env or header value) into a workspace file; each
becomes a ``${VAR}`` reference, and the printout names the variables to set, never their values."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.config import load_runtime_config_file
from ditto_tui.errors import ConfigError
from ditto_tui.mcp_import import without_values
from ditto_tui.workspace import resolve_config

GITHUB_SECRET = "ghp_abc123DEF456ghi789JKL012mno345PQR678"
BEARER_SECRET = "sk-live-0123456789abcdefSECRET"
SET_THESE = (
    "Set these in ditto-tui's environment before sandbox.mcp lists their servers (a run needs every "
    "listed server's variables): GITHUB_TOKEN (github env), REMOTE_AUTHORIZATION (remote header "
    "Authorization)."
)


def _claude_desktop(tmp_path: Path) -> Path:
    source = tmp_path / "claude_desktop_config.json"
    servers = {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": GITHUB_SECRET},
        },
        "remote": {
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": f"Bearer {BEARER_SECRET}"},
        },
    }
    source.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return source


def _import(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["mcp", "import", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_v02_literal_env_and_header_values_become_references_and_are_never_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ditto.yaml"
    code, out = _import(capsys, str(_claude_desktop(tmp_path)), "--config", str(target), "--yes")
    assert code == 0
    text = target.read_text(encoding="utf-8")
    assert GITHUB_SECRET not in text and BEARER_SECRET not in text and "Bearer" not in text
    assert "GITHUB_TOKEN: ${GITHUB_TOKEN}" in text.replace("'", "")
    assert "Authorization: ${REMOTE_AUTHORIZATION}" in text.replace("'", "")
    assert GITHUB_SECRET not in out and BEARER_SECRET not in out
    assert SET_THESE in out
    assert "not copied; the config refers to them as ${GITHUB_TOKEN}, ${REMOTE_AUTHORIZATION}." in out


def test_v02_the_preview_names_the_variables_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115 - closed below
    target = tmp_path / "ditto.yaml"
    code, out = _import(capsys, str(_claude_desktop(tmp_path)), "--config", str(target))
    sys.stdin.close()
    assert code == 2 and not target.exists()  # not on a terminal: asked nothing, wrote nothing
    assert "  github: npx -y @modelcontextprotocol/server-github  (env: GITHUB_TOKEN)" in out
    assert "  remote: https://mcp.example.com/mcp  (headers: Authorization)" in out
    assert SET_THESE in out
    assert GITHUB_SECRET not in out and BEARER_SECRET not in out


def test_v02_the_imported_config_reads_the_values_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ditto.yaml"
    assert _import(capsys, str(_claude_desktop(tmp_path)), "--config", str(target), "--yes")[0] == 0
    target.write_text(f"sandbox:\n  mcp: [github, remote]\n{target.read_text()}", encoding="utf-8")
    with pytest.raises(ConfigError, match="environment variable 'GITHUB_TOKEN' is not set"):
        load_runtime_config_file(target, {"REMOTE_AUTHORIZATION": "x"})
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_SECRET)
    monkeypatch.setenv("REMOTE_AUTHORIZATION", f"Bearer {BEARER_SECRET}")
    servers = resolve_config(str(target), tmp_path).config.mcp.servers
    assert servers["github"].env == {"GITHUB_TOKEN": GITHUB_SECRET}
    assert servers["remote"].headers == {"Authorization": f"Bearer {BEARER_SECRET}"}
    assert servers["github"].shown(GITHUB_SECRET) == "${GITHUB_TOKEN}"  # screens show the reference


def test_v02_a_value_that_already_is_a_reference_is_kept_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = Path(__file__).resolve().parents[1] / "data" / "claude_desktop_config.json"
    target = tmp_path / "ditto.yaml"
    code, out = _import(capsys, str(source), "--config", str(target), "--yes")
    assert code == 0
    text = target.read_text(encoding="utf-8")
    assert "${NOTES_TOKEN}" in text and "Bearer ${REMOTE_TOKEN}" in text
    assert (
        "Set these in ditto-tui's environment before sandbox.mcp lists their servers (a run needs every "
        "listed server's variables): NOTES_TOKEN (notes env), REMOTE_TOKEN (remote header "
        "Authorization)." in out
    )
    assert "not copied" not in out


def test_v02_names_are_derived_and_never_shared_by_two_different_values() -> None:
    servers, variables = without_values(
        {
            "my-server": {"url": "https://a.example/mcp", "headers": {"X-Api-Key": "k1", "Trace": ""}},
            "github": {"command": "gh", "env": {"GITHUB_TOKEN": "t1", "my-var": "v"}},
            "github2": {"command": "gh", "env": {"GITHUB_TOKEN": "t2"}},
            "github3": {"command": "gh", "env": {"GITHUB_TOKEN": "t1"}},  # the same value: the same name
            "templated": {
                "command": "x",
                "env": {"HOME_DIR": "${workspaceFolder}/h", "API": "${env:API_KEY}"},
            },
            "9lives": {"url": "https://b.example/mcp", "headers": {"Authorization": "Basic Zm9v"}},
            "oauth": {"url": "https://c.example/mcp", "auth": {"clientId": "id", "clientSecret": "shh"}},
        }
    )
    assert servers["my-server"]["headers"] == {"X-Api-Key": "${MY_SERVER_X_API_KEY}", "Trace": ""}
    assert servers["github"]["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "my-var": "${GITHUB_MY_VAR}"}
    assert servers["github2"]["env"] == {"GITHUB_TOKEN": "${GITHUB2_GITHUB_TOKEN}"}
    assert servers["github3"]["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    assert servers["templated"]["env"] == {"HOME_DIR": "${workspaceFolder}/h", "API": "${env:API_KEY}"}
    assert servers["9lives"]["headers"] == {"Authorization": "${_9LIVES_AUTHORIZATION}"}
    assert servers["oauth"]["auth"] == {"clientId": "id", "clientSecret": "${OAUTH_CLIENT_SECRET}"}
    named = {variable.name: (variable.where, variable.replaced) for variable in variables}
    assert named["GITHUB_TOKEN"] == (("github env", "github3 env"), True)
    assert named["GITHUB2_GITHUB_TOKEN"] == (("github2 env GITHUB_TOKEN",), True)
    assert named["API_KEY"] == (("templated env API",), False)
    assert "workspaceFolder" not in named
    assert named["OAUTH_CLIENT_SECRET"] == (("oauth auth clientSecret",), True)


def test_v02_a_name_a_template_already_reads_is_not_reused_for_a_literal() -> None:
    servers, _ = without_values(
        {
            "a": {"command": "a", "env": {"TOKEN": "${TOKEN}"}},
            "b": {"command": "b", "env": {"TOKEN": "literal"}},
        }
    )
    assert servers["a"]["env"] == {"TOKEN": "${TOKEN}"} and servers["b"]["env"] == {"TOKEN": "${B_TOKEN}"}


def test_v02_an_imported_server_not_yet_listed_does_not_stop_the_next_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ditto.yaml"
    target.write_text("sandbox:\n  read: true\n", encoding="utf-8")
    code, _out = _import(capsys, str(_claude_desktop(tmp_path)), "--config", str(target), "--yes")
    assert code == 0
    config = load_runtime_config_file(target, {})  # neither variable is set: the servers cannot start
    assert config.unset_variables("github") == ("GITHUB_TOKEN",)
    assert config.unset_variables("remote") == ("REMOTE_AUTHORIZATION",)
    assert config.mcp.servers["github"].env == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    code, out = _sign_in(capsys, "remote", "--config", str(target))
    assert code == 1 and "reads REMOTE_AUTHORIZATION, not set" in out
    listed = target.read_text(encoding="utf-8").replace("read: true", "read: true\n  mcp: [github]")
    target.write_text(listed, encoding="utf-8")
    with pytest.raises(ConfigError, match="environment variable 'GITHUB_TOKEN' is not set"):
        load_runtime_config_file(target, {})
    assert load_runtime_config_file(target, {"GITHUB_TOKEN": GITHUB_SECRET}).unset_variables("github") == ()


def _sign_in(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["mcp", "login", *argv, "--no-browser"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err
