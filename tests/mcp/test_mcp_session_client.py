"""mcp_session_client over an official mcp.Client (in-process demo server), and the lazy public names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from ditto_tui.demo.mcp_server import build_server, prepare_notes
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import McpRegistry, mcp_session_client
from tests.mcp.mcp_helpers import sandbox


async def test_an_mcp_client_is_adapted_to_the_port(tmp_path: Path) -> None:
    prepare_notes(tmp_path / "notes")
    async with Client(build_server(tmp_path / "notes", catalogue=150), mode="legacy") as client:
        registry = McpRegistry()
        registry.register("demo", mcp_session_client(client, timeout=5))
        found = await registry.discover("demo", sandbox(tmp_path, "demo"))
        call = {"id": "1", "name": "search_notes", "arguments": {"query": "approval"}}
        result = await registry.invoke("demo", call, sandbox(tmp_path, "demo"))
    assert len(found) == 155 and registry.status("demo").pages == 2  # type: ignore[union-attr]
    assert result.status == "success" and isinstance(result.structured_content, dict)


def test_anything_else_is_refused() -> None:
    with pytest.raises(ValidationError):
        mcp_session_client(object())  # type: ignore[arg-type]


def test_importing_the_interaction_package_does_not_load_the_sdk() -> None:
    code = (
        "import sys, ditto_tui.interaction as i; print('mcp' in sys.modules); "
        "i.open_mcp_servers; print('mcp' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["False", "True"]
