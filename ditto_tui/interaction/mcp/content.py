"""SDK tool results into McpToolResult fields: content blocks become message parts, once, here."""

from __future__ import annotations

from typing import Any, assert_never

from mcp.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from ditto_tui.contracts import JsonPart, MessagePart, Reference, ReferencePart, TextPart

MAX_TEXT_CHARS = 1_000_000
"""The most characters kept of one text block; longer text is cut and the result's metadata says so."""


def _base64_size(data: str) -> int:
    """The number of bytes a base64 string decodes to, without decoding it."""
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _text(text: str) -> TextPart:
    return TextPart(type="text", text=text[:MAX_TEXT_CHARS])


def _reference(uri: str, media_type: str | None) -> Reference:
    return Reference(uri=uri, media_type=media_type)


def content_parts(block: ContentBlock) -> tuple[list[MessagePart], Reference | None]:
    """The message parts for one content block, and the reference it carries (if any).

    Text stays text; images and audio become a JSON part with their type, media type and size, so base64
    never reaches the model as text; a resource link becomes a reference; an embedded resource becomes a
    reference followed by its text, or by a JSON part describing its binary content.
    """
    match block:
        case TextContent():
            return [_text(block.text)], None
        case ImageContent() | AudioContent():
            data = {"type": block.type, "mimeType": block.mime_type, "bytes": _base64_size(block.data)}
            return [JsonPart(type="json", data=data)], None
        case ResourceLink():
            link = _reference(block.uri, block.mime_type)
            return [ReferencePart(type="reference", reference=link)], link
        case EmbeddedResource():
            resource = block.resource
            embedded = _reference(resource.uri, resource.mime_type)
            head = ReferencePart(type="reference", reference=embedded)
            if isinstance(resource, TextResourceContents):
                return [head, _text(resource.text)], embedded
            described = {
                "type": "resource",
                "mimeType": resource.mime_type,
                "bytes": _base64_size(resource.blob),
            }
            return [head, JsonPart(type="json", data=described)], embedded
        case _:
            assert_never(block)


def _truncated(result: CallToolResult) -> bool:
    for block in result.content:
        if isinstance(block, TextContent) and len(block.text) > MAX_TEXT_CHARS:
            return True
        if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            if len(block.resource.text) > MAX_TEXT_CHARS:
                return True
    return False


def _first_text(result: CallToolResult) -> str | None:
    return next((block.text for block in result.content if isinstance(block, TextContent)), None)


def tool_result(result: CallToolResult) -> dict[str, Any]:
    """McpToolResult fields for an SDK ``CallToolResult``.

    ``structuredContent`` is kept as sent. An ``isError`` result carries its first text as the error
    message; the registry replaces it with a fixed message when it is not safe to show.
    """
    parts: list[MessagePart] = []
    references: list[Reference] = []
    for block in result.content:
        block_parts, reference = content_parts(block)
        parts.extend(block_parts)
        if reference is not None:
            references.append(reference)
    fields: dict[str, Any] = {"content": parts}
    if result.structured_content is not None:
        fields["structuredContent"] = result.structured_content
    if references:
        fields["references"] = references
    if _truncated(result):
        fields["metadata"] = {"truncated": True, "maxTextChars": MAX_TEXT_CHARS}
    if result.is_error:
        fields["isError"] = True
        message = _first_text(result)
        if message:
            fields["error"] = {"code": "MCP_TOOL_ERROR", "message": message}
    return fields
