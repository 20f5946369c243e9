"""What a tool result carries besides text, and a server's log as it is written, against real servers.

Images, audio, resource links and embedded resources reach the browser as the server sent them (the
blocks of recent calls), while the model's result keeps only their type and size; content annotations are
kept in the result's metadata. Every line a server's log gets (ditto's notes, stderr, log notifications)
reaches the log listeners already sanitised, and ``logLevel`` in an entry is asked for once connected.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from ditto_tui.interaction import McpRegistry, open_mcp_servers
from ditto_tui.interaction.mcp import McpBlock, McpLogLine
from ditto_tui.interaction.mcp.blocks import MAX_MEDIA_BYTES, BlockShelf
from ditto_tui.sandbox import Sandbox
from tests.mcp.mcp_helpers import node_server, python_server, sandbox

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def registry(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpRegistry]:
    base = tmp_path_factory.mktemp("blocks")
    entries = {
        "everything": {**node_server("mcp-server-everything", "stdio"), "logLevel": "error"},
        "hostile": python_server("hostile.py"),
    }
    async with open_mcp_servers(entries, log_dir=base / "logs") as opened:
        yield opened


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return sandbox(tmp_path, "everything", "hostile")


async def _blocks(
    registry: McpRegistry, box: Sandbox, call_id: str, tool: str, **arguments: object
) -> tuple[McpBlock, ...]:
    result = await registry.invoke("everything", {"id": call_id, "name": tool, "arguments": arguments}, box)
    assert result.status == "success", result
    blocks = registry.call_blocks("everything", call_id)
    assert blocks is not None
    return blocks


async def test_an_image_reaches_the_browser_whole_and_the_model_as_its_type_and_size(
    registry: McpRegistry, box: Sandbox
) -> None:
    result = await registry.invoke(
        "everything", {"id": "img", "name": "get-tiny-image", "arguments": {}}, box
    )
    blocks = registry.call_blocks("everything", "img")
    assert blocks is not None
    image = next(block for block in blocks if block.kind == "image")
    data = image.payload()
    assert image.mime_type == "image/png" and data is not None and data.startswith(b"\x89PNG\r\n\x1a\n")
    assert image.size == len(data)
    dumped = result.model_dump_json()
    assert image.data is not None and image.data[:40] not in dumped  # no base64 for the model
    assert f'"bytes":{len(data)}' in dumped.replace(" ", "")


async def test_content_annotations_are_kept_with_the_block_they_came_with(
    registry: McpRegistry, box: Sandbox
) -> None:
    call = {
        "id": "ann",
        "name": "get-annotated-message",
        "arguments": {"messageType": "error", "includeImage": True},
    }
    result = await registry.invoke("everything", call, box)
    assert result.metadata is not None
    notes = result.metadata["annotations"]
    assert isinstance(notes, list) and notes[0] == {
        "block": 0,
        "priority": 1.0,
        "audience": ["user", "assistant"],
    }
    blocks = registry.call_blocks("everything", "ann")
    assert blocks is not None and blocks[0].annotations == {
        "priority": 1.0,
        "audience": ["user", "assistant"],
    }
    assert any(block.kind == "image" and block.annotations for block in blocks)


async def test_resource_links_keep_their_uri_and_name(registry: McpRegistry, box: Sandbox) -> None:
    blocks = await _blocks(registry, box, "links", "get-resource-links", count=3)
    links = [block for block in blocks if block.kind == "link"]
    assert [(link.uri, link.name) for link in links] == [
        ("demo://resource/dynamic/blob/1", "Blob Resource 1"),
        ("demo://resource/dynamic/text/2", "Text Resource 2"),
        ("demo://resource/dynamic/blob/3", "Blob Resource 3"),
    ]
    assert links[1].mime_type == "text/plain" and links[1].description == "Resource 2: plaintext resource"


async def test_an_embedded_resource_keeps_its_uri_and_text(registry: McpRegistry, box: Sandbox) -> None:
    blocks = await _blocks(registry, box, "ref", "get-resource-reference", resourceType="Text", resourceId=2)
    embedded = next(block for block in blocks if block.kind == "resource")
    assert (
        embedded.uri == "demo://resource/dynamic/text/2" and embedded.text and "Resource 2" in embedded.text
    )


async def test_a_call_of_text_only_is_not_kept(registry: McpRegistry, box: Sandbox) -> None:
    result = await registry.invoke(
        "everything", {"id": "echo", "name": "echo", "arguments": {"message": "hi"}}, box
    )
    assert result.status == "success" and registry.call_blocks("everything", "echo") is None


async def test_the_shelf_keeps_the_latest_calls_within_its_bounds() -> None:
    image = McpBlock(kind="image", mime_type="image/png", data="QUJD" * 10)
    shelf = BlockShelf(calls=2, limit=100)
    for n in range(3):
        shelf.keep("s", f"c{n}", (image,))
    assert shelf.get("s", "c0") is None and shelf.get("s", "c2") == (image,)
    shelf.keep("s", "huge", (McpBlock(kind="audio", data="A" * 200),))
    assert shelf.get("s", "huge") is None and shelf.get("s", "c1") == (image,)


async def test_a_block_over_the_size_bound_or_not_base64_gives_no_bytes() -> None:
    assert McpBlock(kind="image", data="not base64!").payload() is None
    assert McpBlock(kind="image", data="A" * (MAX_MEDIA_BYTES * 4 // 3 + 8)).payload() is None
    assert McpBlock(kind="audio", data="QUJD").payload() == b"ABC"


async def test_log_listeners_hear_stderr_and_log_notifications_sanitised(
    registry: McpRegistry, box: Sandbox
) -> None:
    heard: list[McpLogLine] = []
    stop = registry.on_log(heard.append)
    try:
        await registry.invoke("hostile", {"id": "e", "name": "echo", "arguments": {"text": "x"}}, box)
        call = {"id": "f", "name": "flood", "arguments": {"count": 2, "secret": "s\x1b]52;c;AAAA\x07"}}
        await registry.invoke("hostile", call, box)
        for _ in range(50):
            if sum(line.label == "[log]" for line in heard) >= 2:
                break
            await asyncio.sleep(0.05)
    finally:
        assert stop()
    assert any(line == McpLogLine("hostile", "[stderr]", "called echo") for line in heard)
    logged = [line.text for line in heard if line.label == "[log]"]
    # a secret-looking value is redacted before any listener (or the file) sees it
    assert logged == ["info flood: line 0 token=[REDACTED]", "info flood: line 1 token=[REDACTED]"]
    assert all("\x1b" not in line.text and "\x07" not in line.text for line in heard)


async def test_the_configured_log_level_is_asked_for_once_connected(registry: McpRegistry) -> None:
    status = registry.status("everything")
    assert status is not None and status.log_path is not None
    text = Path(status.log_path).read_text(encoding="utf-8")
    assert "[ditto] asked for log messages of level 'error' and above (logLevel)" in text


async def test_a_log_level_the_server_cannot_set_is_noted_and_the_server_still_used(tmp_path: Path) -> None:
    entries = {"hostile": {**python_server("hostile.py"), "logLevel": "debug"}}
    async with open_mcp_servers(entries, log_dir=tmp_path / "logs") as opened:
        result = await opened.invoke(
            "hostile", {"id": "e", "name": "echo", "arguments": {"text": "x"}}, sandbox(tmp_path, "hostile")
        )
        status = opened.status("hostile")
    assert result.status == "success" and status is not None and status.log_path is not None
    text = Path(status.log_path).read_text(encoding="utf-8")
    assert "logLevel 'debug'" in text
