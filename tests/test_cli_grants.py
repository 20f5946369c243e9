"""``ditto-tui grants``: the project grants of the workspace listed, as JSON, and revoked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.supervise.grants import GrantStore


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def test_grants_lists_revokes_and_says_where_they_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path)
    assert main(["grants", "--workspace", str(workspace)]) == 0
    assert "No project grants" in capsys.readouterr().out
    store = GrantStore(workspace)
    grant = store.add(
        tool="write_text",
        tool_digest="d1",
        scope="rule",
        match={"args": {"path": "notes/**"}},
        lifetime="project",
        uses=3,
        origin="run 1a2b\x1b[31m",
    )
    store.add(tool="read_text", tool_digest="d2")  # a session grant: not kept, not listed
    assert main(["grants", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert grant.id in out and "write_text with path notes/**" in out and "3 uses left" in out
    assert "\x1b" not in out and "\\x1b[31m" in out and "read_text" not in out
    assert main(["grants", "--json", "--workspace", str(workspace)]) == 0
    [record] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["id"] == grant.id and record["usesLeft"] == 3 and record["scope"] == "rule"
    assert main(["grants", "--revoke", "g-nothing", "--workspace", str(workspace)]) == 1
    assert grant.id in capsys.readouterr().err
    assert main(["grants", "--revoke", grant.id, "--workspace", str(workspace)]) == 0
    assert f"revoked {grant.id}" in capsys.readouterr().out
    assert GrantStore(workspace).grants() == []


def test_grants_refuses_options_it_does_not_take(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = _workspace(tmp_path)
    with pytest.raises(SystemExit):
        main(["grants", "--headless", "--workspace", str(workspace)])
    assert "headless" in capsys.readouterr().err
