"""Group U: an untrusted workspace cannot choose what an MCP server runs, where its log goes, what the log
says, or what the demo server reads and writes. Every attack is planted for real and real servers run."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.interaction import McpRegistry, open_mcp_servers
from ditto_tui.interaction.mcp.connect import NEUTRAL_DIR_PREFIX
from tests.mcp.mcp_helpers import ROOT, python_server, sandbox

SECRET = "s3cr3t-value-9f2b7c"


def call(call_id: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": tool, "arguments": arguments}


def text_of(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content or [])


def executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def plant_package(workspace: Path, marker: Path) -> None:
    """A ``ditto_tui`` package in the workspace whose import writes ``marker``."""
    package = workspace / "ditto_tui"
    (package / "demo").mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    (package / "demo" / "__init__.py").write_text("")
    (package / "demo" / "mcp_server.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")


async def notes_listed(registry: McpRegistry, server: str, workspace: Path) -> str:
    result = await registry.invoke(server, call("l", "list_notes"), sandbox(workspace, server))
    assert result.status == "success", result.error
    return text_of(result)


# -- U-02: what runs ------------------------------------------------------------------------------------


async def test_u02_workspace_package_not_imported(tmp_path: Path) -> None:
    workspace, marker = tmp_path / "w", tmp_path / "planted-code-ran"
    plant_package(workspace, marker)
    entry = {
        "command": "python",
        "args": ["-m", "ditto_tui.demo.mcp_server", "--root", str(workspace), "--notes", ".ditto/notes"],
    }
    # The default working directory is a private empty one; an entry that sets cwd to the workspace
    # still cannot put it on sys.path (-P).
    servers = {"neutral": entry, "in-w": entry | {"cwd": str(workspace)}}
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        for server in servers:
            assert "welcome.md" in await notes_listed(registry, server, workspace)
    assert not marker.exists()
    assert (workspace / ".ditto" / "notes" / "welcome.md").is_file()  # the real server, inside --root
    log = (tmp_path / "logs" / "in-w.log").read_text()
    assert "'-P', '-m', 'ditto_tui.demo.mcp_server'" in log


async def test_u02_npx_not_resolved_from_workspace(tmp_path: Path) -> None:
    workspace, marker = tmp_path / "w", tmp_path / "planted-bin-ran"
    package = workspace / "node_modules" / "@modelcontextprotocol" / "server-everything"
    package.mkdir(parents=True)
    (workspace / "package.json").write_text('{"name": "w", "version": "1.0.0"}')
    (package / "package.json").write_text(
        '{"name": "@modelcontextprotocol/server-everything", "version": "9.9.9",'
        ' "bin": {"mcp-server-everything": "evil.js"}}'
    )
    executable(
        package / "evil.js", f"#!/usr/bin/env node\nrequire('fs').writeFileSync({str(marker)!r}, 'x')\n"
    )
    (workspace / "node_modules" / ".bin").mkdir()
    (workspace / "node_modules" / ".bin" / "mcp-server-everything").symlink_to(package / "evil.js")
    # Offline, so that outside the workspace npx fails at once instead of downloading the package.
    pasted: dict[str, Any] = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}
    pasted |= {"env": {"npm_config_offline": "true"}}
    servers = {"pasted": pasted, "trusted": pasted | {"cwd": str(ROOT)}}
    async with open_mcp_servers(
        servers, log_dir=tmp_path / "logs", workspace=workspace, startup_timeout=60
    ) as registry:
        found = await registry.discover("trusted", sandbox(workspace, "trusted"))
        pasted_status = registry.status("pasted")
    assert not marker.exists()
    assert any(capability.name == "echo" for capability in found)  # the real server, from ROOT's node_modules
    # Outside the workspace, offline, npx finds nothing to run (or only its own cache), never the plant.
    assert pasted_status is not None and pasted_status.state in ("failed", "connected")


async def test_u02_relative_command_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, marker = tmp_path / "w", tmp_path / "planted-bin-ran"
    planted = f"#!/bin/sh\ntouch {marker}\n"
    executable(workspace / "server", planted)
    executable(workspace / "node_modules" / ".bin" / "mcp-planted", planted)
    executable(workspace / ".venv" / "bin" / "mcp-venv", planted)
    monkeypatch.chdir(workspace)  # ditto-tui started in the workspace, as a user would
    path = os.environ["PATH"]
    servers: dict[str, dict[str, Any]] = {
        "dot-slash": {"command": "./server"},
        "relative-path": {"command": "mcp-planted", "env": {"PATH": f"node_modules/.bin:.:{path}"}},
        "path-in-w": {"command": "mcp-venv", "env": {"PATH": f"{workspace / '.venv' / 'bin'}:{path}"}},
        "bare-python": python_server("noisy.py") | {"command": "python"},
    }
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        statuses = {name: registry.status(name) for name in servers}
        shouted = await registry.invoke(
            "bare-python", call("s", "shout", text="hi\n"), sandbox(tmp_path, "bare-python")
        )
    assert not marker.exists()
    states = {name: status.state for name, status in statuses.items() if status is not None}
    errors = {name: status.error or "" for name, status in statuses.items() if status is not None}
    assert states == {name: "failed" for name in servers} | {"bare-python": "connected"}
    assert "'./server' is a relative path" in errors["dot-slash"]
    assert "only in a relative PATH entry or in the workspace" in errors["relative-path"]
    assert "only in a relative PATH entry or in the workspace" in errors["path-in-w"]
    assert (
        "relative path" in (tmp_path / "logs" / "dot-slash.log").read_text()
    )  # the reason is in the log too
    assert shouted.status == "success" and text_of(shouted) == "shouted"


async def test_u02_neutral_working_directory_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    env = {"PATH": f".:node_modules/.bin::{workspace / 'bin'}:{os.environ['PATH']}"}
    servers = {"noisy": python_server("noisy.py") | {"env": env}}
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        result = await registry.invoke("noisy", call("s", "shout", text="up\n"), sandbox(tmp_path, "noisy"))
    assert result.status == "success"
    log = (tmp_path / "logs" / "noisy.log").read_text().splitlines()
    cwd = next(line.removeprefix("[stderr] cwd ") for line in log if line.startswith("[stderr] cwd "))
    child_path = next(
        line.removeprefix("[stderr] path ") for line in log if line.startswith("[stderr] path ")
    )
    assert os.path.basename(cwd).startswith(NEUTRAL_DIR_PREFIX) and not os.path.exists(cwd)  # removed on exit
    assert not cwd.startswith(str(workspace))
    entries = child_path.split(":")
    assert all(os.path.isabs(entry) for entry in entries) and str(workspace / "bin") not in entries
    assert os.path.dirname(sys.executable) in entries or entries  # the rest of PATH is kept


# -- U-03: where the log goes ---------------------------------------------------------------------------


async def test_u03_symlinked_log_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    logs = tmp_path / "state" / "logs"
    logs.mkdir(parents=True)
    (logs / "linked.log").symlink_to(victim)
    servers = {"linked": python_server("noisy.py"), "fine": python_server("noisy.py")}
    async with open_mcp_servers(servers, log_dir=logs) as registry:
        linked, fine = registry.status("linked"), registry.status("fine")
        result = await registry.invoke("fine", call("s", "shout", text="ok\n"), sandbox(tmp_path, "fine"))
    assert victim.read_text() == "keep me\n"
    assert linked is not None and linked.state == "failed" and linked.log_path is None
    assert "log file cannot be written" in (linked.error or "") and "symbolic link" in (linked.error or "")
    assert fine is not None and fine.state == "connected" and result.status == "success"
    assert "[stderr] ok" in (logs / "fine.log").read_text()


async def test_u03_symlinked_log_directory_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    (state / "logs").symlink_to(outside, target_is_directory=True)
    async with open_mcp_servers({"noisy": python_server("noisy.py")}, log_dir=state / "logs") as registry:
        status = registry.status("noisy")
    assert list(outside.iterdir()) == []
    assert status is not None and status.state == "failed" and "symbolic link" in (status.error or "")
    # Also a link further up: a planted parent of a log directory that does not exist yet.
    async with open_mcp_servers(
        {"noisy": python_server("noisy.py")}, log_dir=state / "logs" / "deeper"
    ) as registry:
        deeper = registry.status("noisy")
    assert list(outside.iterdir()) == [] and deeper is not None and deeper.state == "failed"
    async with open_mcp_servers({"noisy": python_server("noisy.py")}, log_dir=state / "real") as registry:
        working = registry.status("noisy")
    assert working is not None and working.state == "connected"
    assert stat.S_IMODE(os.stat(state / "real" / "noisy.log").st_mode) == 0o600


# -- U-04: what the log says ----------------------------------------------------------------------------

HOSTILE = (
    "plain line\n"
    "[ditto] connected (forged)\n"
    "\x1b[2J\x1b]0;title\x07erased\rover\n"
    "bidi \u202egnp.exe\u202c zero\u200bwidth tag\U000e0041 c1\x9b done\n"
    f"token {SECRET} here\n"
    "no newline at the end"
)


def check_log_lines(log: str) -> list[str]:
    """Every line carries a label; no raw control, bidi or invisible character survives; returns the lines."""
    lines = log.split("\n")[:-1]
    assert log.endswith("\n")
    for line in lines:
        assert line.startswith(("[ditto] ", "[stderr] ", "[log] ")), repr(line)
        assert line.isprintable(), repr(line)
    assert SECRET not in log
    return lines


async def test_u04_stderr_control_chars_escaped(tmp_path: Path) -> None:
    servers = {"noisy": python_server("noisy.py", "--banner", HOSTILE) | {"env": {"API_TOKEN": SECRET}}}
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs", secrets=[SECRET]) as registry:
        result = await registry.invoke("noisy", call("s", "shout", text=HOSTILE), sandbox(tmp_path, "noisy"))
    assert result.status == "success" and text_of(result) == "shouted"
    lines = check_log_lines((tmp_path / "logs" / "noisy.log").read_text(encoding="utf-8"))
    assert sum(line.startswith("[ditto] connected") for line in lines) == 1  # only ditto's own
    assert lines.count("[stderr] [ditto] connected (forged)") == 2
    assert "[stderr] \\x1b[2J\\x1b]0;title\\x07erased\\x0dover" in lines
    assert "[stderr] bidi \\u202egnp.exe\\u202c zero\\u200bwidth tag\\U000e0041 c1\\x9b done" in lines
    assert "[stderr] token [REDACTED] here" in lines
    assert "[stderr] no newline at the end" in lines[-3:]  # the last partial line is kept too


async def test_u04_log_notification_sanitised(tmp_path: Path) -> None:
    servers = {"noisy": python_server("noisy.py")}
    async with open_mcp_servers(servers, log_dir=tmp_path / "logs", secrets=[SECRET]) as registry:
        logged = await registry.invoke(
            "noisy", call("l", "log", text=HOSTILE, logger="evil\n[ditto] x"), sandbox(tmp_path, "noisy")
        )
    assert logged.status == "success" and text_of(logged) == "logged"
    lines = check_log_lines((tmp_path / "logs" / "noisy.log").read_text(encoding="utf-8"))
    prefix = "[log] warning evil\\x0a[ditto] x: "
    server_lines = [line for line in lines if line.startswith("[log] ")]
    assert server_lines[0] == f"{prefix}plain line" and len(server_lines) == 6
    assert f"{prefix}[ditto] connected (forged)" in server_lines
    assert f"{prefix}bidi \\u202egnp.exe\\u202c zero\\u200bwidth tag\\U000e0041 c1\\x9b done" in server_lines
    assert f"{prefix}token [REDACTED] here" in server_lines
    assert sum(line.startswith("[ditto] connected") for line in lines) == 1


# -- U-05: the demo server stays in its notes folder ----------------------------------------------------


def demo_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose notes folder exists, and a folder outside it holding a secret and a victim."""
    workspace, outside = tmp_path / "w", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n{SECRET}\n")
    (outside / "victim.txt").write_text("keep me\n")
    return workspace, outside


async def test_u05_demo_read_symlink_refused(tmp_path: Path) -> None:
    workspace, outside = demo_workspace(tmp_path)
    entry = demo_server_entry(".ditto/notes", root=workspace)
    async with open_mcp_servers({"demo": entry}, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        box = sandbox(workspace, "demo")
        notes = workspace / ".ditto" / "notes"
        await notes_listed(registry, "demo", workspace)  # the server made the folder with the samples
        (notes / "leak.md").symlink_to(outside / "secret.md")
        (notes / "alias.md").symlink_to("welcome.md")  # a link that stays inside is fine
        leak = await registry.invoke("demo", call("r", "read_note", name="leak"), box)
        search = await registry.invoke("demo", call("s", "search_notes", query=SECRET), box)
        alias = await registry.invoke("demo", call("a", "read_note", name="alias"), box)
        listed = await notes_listed(registry, "demo", workspace)
    assert leak.status == "failed" and SECRET not in str(leak)
    assert "links outside the notes folder" in text_of(leak) or "outside" in str(leak.error)
    assert search.status == "success" and search.structured_content == {
        "query": SECRET,
        "count": 0,
        "matches": [],
    }
    assert alias.status == "success" and text_of(alias) == (notes / "welcome.md").read_text()
    assert "leak.md" not in listed and "welcome.md" in listed


async def test_u05_demo_write_symlink_refused(tmp_path: Path) -> None:
    workspace, outside = demo_workspace(tmp_path)
    notes = workspace / "notes"
    notes.mkdir(parents=True)
    (notes / "victim.md").symlink_to(outside / "victim.txt")
    (notes / "dangling.md").symlink_to(outside / "created.txt")
    entry = demo_server_entry("notes", root=workspace)
    async with open_mcp_servers({"demo": entry}, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        box = sandbox(workspace, "demo")
        over = await registry.invoke("demo", call("v", "write_note", name="victim", text="pwned"), box)
        new = await registry.invoke("demo", call("d", "write_note", name="dangling", text="pwned"), box)
        fine = await registry.invoke("demo", call("f", "write_note", name="fresh", text="# Fresh\n"), box)
    assert over.status == "failed" and new.status == "failed"
    assert (outside / "victim.txt").read_text() == "keep me\n" and not (outside / "created.txt").exists()
    assert (notes / "victim.md").is_symlink()  # not replaced either
    assert fine.status == "success" and (notes / "fresh.md").read_text() == "# Fresh\n"


async def test_u05_demo_notes_folder_link_out_of_root_refused(tmp_path: Path) -> None:
    workspace, outside = demo_workspace(tmp_path)
    workspace.mkdir()
    (workspace / ".ditto").symlink_to(outside, target_is_directory=True)
    planted = {"demo": demo_server_entry(".ditto/demo-notes", root=workspace)}
    async with open_mcp_servers(planted, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        status = registry.status("demo")
    assert status is not None and status.state == "failed"
    assert sorted(path.name for path in outside.iterdir()) == [
        "secret.md",
        "victim.txt",
    ]  # nothing made there
    assert "outside" in (tmp_path / "logs" / "demo.log").read_text()
    (workspace / ".ditto").unlink()
    async with open_mcp_servers(planted, log_dir=tmp_path / "logs", workspace=workspace) as registry:
        assert "welcome.md" in await notes_listed(registry, "demo", workspace)
    assert (workspace / ".ditto" / "demo-notes" / "welcome.md").is_file()
