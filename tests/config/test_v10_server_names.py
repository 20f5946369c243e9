"""An MCP server name with a control or invisible character is refused when the config loads (V-10).

A server's name is shown on screen, in approval prompts and on the record; one holding an escape
sequence, a line break, a bidi override or a zero-width character could repaint the terminal, forge a
line, or read as another server's name. The files are real ``ditto.yaml`` (and Claude Desktop JSON)
files, loaded the way the CLI loads them; the error names the server with those characters escaped.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from ditto_tui.config import load_mcp_servers, load_runtime_config_file
from ditto_tui.errors import ConfigError, ValidationError
from ditto_tui.mcp_import import plan_import

HOSTILE = {
    "escape": ("ev\x1b[31mil", "ev\\x1b[31mil"),
    "newline": ("notes\nfiles", "notes\\x0afiles"),
    "bidi override": ("files\u202etxt.exe", "files\\u202etxt.exe"),
    "zero-width space": ("no\u200btes", "no\\u200btes"),
    "bell": ("bell\x07", "bell\\x07"),
    "C1 control": ("csi\x9b2J", "csi\\x9b2J"),
    "line separator": ("two\u2028lines", "two\\u2028lines"),
}


def ditto_yaml(tmp_path: Path, name: str) -> Path:
    """A ditto.yaml whose one stdio server is called ``name`` (a JSON string is a YAML string)."""
    path = tmp_path / "ditto.yaml"
    key = json.dumps(name)
    path.write_text(
        f"sandbox:\n  mcp: [{key}]\nmcp:\n  servers:\n    {key}:\n      command: srv\n", encoding="utf-8"
    )
    return path


def assert_names_escaped(error: ConfigError, path: Path, escaped: str, raw: str) -> None:
    message = error.message
    assert isinstance(error, ValidationError)
    assert message.startswith(f"{path}:5: mcp.servers.{escaped}: name '{escaped}'"), message
    assert "control or invisible characters" in message and "must be visible text" in message
    assert not any(unicodedata.category(char).startswith("C") for char in message.replace("\n", ""))
    assert raw not in message


@pytest.mark.parametrize(("name", "escaped"), list(HOSTILE.values()), ids=list(HOSTILE))
def test_v10_a_server_name_with_control_characters_is_refused_at_load(
    tmp_path: Path, name: str, escaped: str
) -> None:
    path = ditto_yaml(tmp_path, name)
    with pytest.raises(ConfigError) as caught:
        load_runtime_config_file(path, {}, workspace=tmp_path)
    assert_names_escaped(caught.value, path, escaped, name)
    assert caught.value.message.count("\n") == 0  # one problem, one line: the grant is not blamed too


def test_v10_a_bidi_override_written_raw_in_the_file_is_refused(tmp_path: Path) -> None:
    """YAML lets a bidi override or a zero-width space stand as written; the name still may not."""
    path = tmp_path / "ditto.yaml"
    path.write_text("mcp:\n  servers:\n    x\u202ey\u200b:\n      command: srv\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"mcp\.servers\.x\\u202ey\\u200b: name 'x\\u202ey\\u200b' holds"):
        load_runtime_config_file(path, {}, workspace=tmp_path)


def test_v10_a_pasted_mcp_servers_block_is_held_to_the_same_rule(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps({"mcpServers": {"fi\x1b]0;pwned\x07les": {"command": "srv"}}}), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"mcpServers\.fi\\x1b\]0;pwned\\x07les: name 'fi\\x1b"):
        load_runtime_config_file(path, {}, workspace=tmp_path)


def test_v10_a_name_of_unicode_letters_still_loads(tmp_path: Path) -> None:
    config = load_runtime_config_file(ditto_yaml(tmp_path, "ünïcode-srv"), {}, workspace=tmp_path)
    assert list(config.mcp.servers) == ["ünïcode-srv"]
    assert list(config.sandbox.mcp) == ["ünïcode-srv"]
    assert config.mcp.enabled_servers()["ünïcode-srv"]["command"] == "srv"


def test_v10_mcp_import_does_not_bring_such_a_name_in(tmp_path: Path) -> None:
    """``mcp import`` reads its source with the same validation: nothing is planned, nothing written."""
    source = tmp_path / "cursor.json"
    source.write_text(json.dumps({"mcpServers": {"no\u200btes": {"command": "srv"}}}), encoding="utf-8")
    target = tmp_path / "ditto.yaml"
    with pytest.raises(ConfigError, match=r"name 'no\\u200btes' holds control or invisible characters"):
        load_mcp_servers(source)
    with pytest.raises(ConfigError, match=r"name 'no\\u200btes' holds control or invisible characters"):
        plan_import(source, target)
    assert not target.exists()
    source.write_text(json.dumps({"mcpServers": {"ünïcode-srv": {"command": "srv"}}}), encoding="utf-8")
    assert list(plan_import(source, target).servers) == ["ünïcode-srv"]
