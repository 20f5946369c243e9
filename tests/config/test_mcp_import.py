"""``ditto-tui mcp import FILE``: which file it writes, what it shows, what it refuses, what it keeps."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.config import load_runtime_config_file
from ditto_tui.trust import trust
from ditto_tui.workspace import user_config_file

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_DESKTOP = ROOT / "tests" / "data" / "claude_desktop_config.json"
FLOW_STYLE = ROOT / "tests" / "data" / "ditto.claude-desktop.yaml"


def _import(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["mcp", "import", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_import_into_the_repository_config_keeps_its_comments_and_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ditto.yaml"
    original = (ROOT / "ditto.yaml").read_text(encoding="utf-8")
    target.write_text(original, encoding="utf-8")
    code, out, _ = _import(capsys, str(CLAUDE_DESKTOP), "--config", str(target), "--yes")
    assert code == 0
    assert "  notes: python -m ditto_tui.demo.mcp_server --notes notes  (env: NOTES_TOKEN)" in out
    assert "  remote: https://mcp.example.com/mcp  (headers: Authorization; disabled)" in out
    assert "`mcp: [notes, remote]` under sandbox" in out
    text = target.read_text(encoding="utf-8")
    assert [line for line in original.splitlines() if line.startswith("#")] == [
        line for line in text.splitlines() if line.startswith("#")
    ]
    assert "${NOTES_TOKEN}" in text and "Bearer ${REMOTE_TOKEN}" in text  # templates, never values
    config = load_runtime_config_file(target, {"NOTES_TOKEN": "n", "REMOTE_TOKEN": "r"})
    assert list(config.mcp.servers) == ["demo", "notes", "remote"]
    assert "alwaysAllow" not in text


def test_without_config_an_untrusted_workspace_imports_into_the_users_own_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ditto.yaml").write_text("sandbox:\n  read: true\n", encoding="utf-8")
    code, out, _ = _import(capsys, str(CLAUDE_DESKTOP), "--workspace", str(tmp_path), "--yes")
    assert code == 0 and "the workspace is not trusted" in out
    assert (tmp_path / "ditto.yaml").read_text(encoding="utf-8") == "sandbox:\n  read: true\n"
    mine = user_config_file()
    assert mine.stat().st_mode & 0o777 == 0o600
    assert sorted(load_runtime_config_file(mine, {"NOTES_TOKEN": "n", "REMOTE_TOKEN": "r"}).mcp.servers) == [
        "notes",
        "remote",
    ]


def test_a_trusted_workspace_imports_into_its_own_ditto_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ditto.yaml").write_text("# mine\nsandbox:\n  mcp: [notes]\n", encoding="utf-8")
    with pytest.raises(Exception, match="grants server 'notes'"):
        load_runtime_config_file(tmp_path / "ditto.yaml", {})
    trust(tmp_path)
    code, out, _ = _import(capsys, str(CLAUDE_DESKTOP), "--workspace", str(tmp_path), "--yes")
    assert code == 0 and "trusted workspace" in out and "under sandbox" in out
    text = (tmp_path / "ditto.yaml").read_text(encoding="utf-8")
    assert text.startswith("# mine\nsandbox:\n  mcp: [notes]\n\nmcp:\n  servers:\n    notes:\n")
    assert not user_config_file().exists()


def test_an_existing_server_is_kept_unless_replace_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ditto.yaml"
    before = (
        "mcp:\n  servers:\n    # the old one\n    notes:\n      command: old-notes\n    other: {command: x}\n"
    )
    target.write_text(before, encoding="utf-8")
    code, _, err = _import(capsys, str(CLAUDE_DESKTOP), "--config", str(target), "--yes")
    assert code == 2 and "already defines 'notes'" in err and "--replace" in err
    assert target.read_text(encoding="utf-8") == before
    code, out, _ = _import(capsys, str(CLAUDE_DESKTOP), "--config", str(target), "--yes", "--replace")
    assert code == 0 and "replaces the entry of the same name" in out
    servers = load_runtime_config_file(target, {"NOTES_TOKEN": "n", "REMOTE_TOKEN": "r"}).mcp.servers
    assert servers["notes"].command == "python" and servers["other"].command == "x"
    assert "old-notes" not in target.read_text(encoding="utf-8")


def test_a_flow_style_servers_block_is_rewritten_and_it_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "cursor.json"
    source.write_text('{"mcpServers": {"notes": {"command": "notes-server"}}}', encoding="utf-8")
    target = tmp_path / "ditto.yaml"
    target.write_text(FLOW_STYLE.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, _ = _import(capsys, str(source), "--config", str(target), "--yes")
    assert code == 0 and "written anew: its comments and layout are not kept" in out
    config = load_runtime_config_file(target, {"GITHUB_PAT": "p"})
    assert sorted(config.mcp.servers) == ["filesystem", "github", "notes", "remote"]


def test_a_link_is_never_written_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real.yaml"
    real.write_text("sandbox: {}\n", encoding="utf-8")
    link = tmp_path / "ditto.yaml"
    link.symlink_to(real)
    code, _, err = _import(capsys, str(CLAUDE_DESKTOP), "--config", str(link), "--yes")
    assert code == 2 and "symbolic link" in err
    assert real.read_text(encoding="utf-8") == "sandbox: {}\n"


def test_auto_approve_in_the_source_is_refused_with_the_rule_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "claude_desktop_config.json"
    source.write_text('{"mcpServers": {"gh": {"command": "gh-mcp", "autoApprove": ["get_issue"]}}}')
    target = tmp_path / "ditto.yaml"
    code, _, err = _import(capsys, str(source), "--config", str(target), "--yes")
    assert (
        code == 2 and f"{source}:1: mcpServers.gh.autoApprove: approval is decided by approval.rules" in err
    )
    assert '      - mcp: "gh:get_issue"\n        decision: allow' in err
    assert not target.exists()


def test_without_a_terminal_and_without_yes_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115 - closed by pytest's monkeypatch undo
    target = tmp_path / "ditto.yaml"
    code, _, err = _import(capsys, str(CLAUDE_DESKTOP), "--config", str(target))
    sys.stdin.close()
    assert code == 2 and "not on a terminal" in err and "--yes" in err
    assert not target.exists()


@pytest.mark.parametrize(("answer", "written"), [("y\n", True), ("n\n", False)])
def test_on_a_terminal_it_asks_first(tmp_path: Path, answer: str, written: bool) -> None:
    target = tmp_path / "ditto.yaml"
    leader, follower = pty.openpty()
    command = [
        sys.executable,
        "-m",
        "ditto_tui",
        "mcp",
        "import",
        str(CLAUDE_DESKTOP),
        "--config",
        str(target),
    ]
    os.write(leader, answer.encode())
    done = subprocess.run(command, stdin=follower, capture_output=True, text=True, timeout=60, check=False)
    os.close(leader)
    os.close(follower)
    assert "Add 2 server(s) to" in done.stdout
    assert (done.returncode, target.exists()) == ((0, True) if written else (1, False))


@pytest.mark.parametrize("option", ["--headless", "--no-journal"])
def test_run_options_do_not_apply_to_mcp_import(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["mcp", "import", str(CLAUDE_DESKTOP), option])
    assert f"{option} does not apply to `ditto-tui mcp import`" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([option, "mcp"])
    assert f"{option} does not apply to `ditto-tui mcp`" in capsys.readouterr().err
