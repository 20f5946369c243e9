"""SDK tool results into McpToolResult fields: content blocks become message parts, once, here."""

from __future__ import annotations

from typing import Any, assert_never

from mcp.types import (
    Annotations,
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
from ditto_tui.interaction.mcp.blocks import McpBlock, base64_size

MAX_TEXT_CHARS = 1_000_000
"""The most characters kept of one text block; longer text is cut and the result's metadata says so."""


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
            data = {"type": block.type, "mimeType": block.mime_type, "bytes": base64_size(block.data)}
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
                "bytes": base64_size(resource.blob),
            }
            return [head, JsonPart(type="json", data=described)], embedded
        case _:
            assert_never(block)


def _annotations(value: Annotations | None) -> dict[str, Any] | None:
    if value is None:
        return None
    dumped = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped or None


def content_block(block: ContentBlock) -> McpBlock:
    """One SDK content block as an :class:`McpBlock` (text cut at ``MAX_TEXT_CHARS``)."""
    notes = _annotations(block.annotations)
    match block:
        case TextContent():
            return McpBlock(kind="text", text=block.text[:MAX_TEXT_CHARS], annotations=notes)
        case ImageContent() | AudioContent():
            return McpBlock(kind=block.type, mime_type=block.mime_type, data=block.data, annotations=notes)
        case ResourceLink():
            return McpBlock(
                kind="link",
                uri=block.uri,
                name=block.name,
                title=block.title,
                description=block.description,
                mime_type=block.mime_type,
                annotations=notes,
            )
        case EmbeddedResource():
            resource = block.resource
            text = resource.text[:MAX_TEXT_CHARS] if isinstance(resource, TextResourceContents) else None
            data = None if isinstance(resource, TextResourceContents) else resource.blob
            return McpBlock(
                kind="resource",
                uri=resource.uri,
                mime_type=resource.mime_type,
                text=text,
                data=data,
                annotations=notes,
            )
        case _:
            assert_never(block)


def content_blocks(result: CallToolResult) -> tuple[McpBlock, ...] | None:
    """The blocks of ``result`` for the browser, or ``None`` when they are plain text without annotations
    (the result's own text then shows everything, so nothing is built or kept)."""
    if all(isinstance(block, TextContent) and block.annotations is None for block in result.content):
        return None
    return tuple(map(content_block, result.content))


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

    ``structuredContent`` is kept as sent; content annotations are kept in ``metadata.annotations``, each
    with the index of its block. An ``isError`` result carries its first text as the error message; the
    registry replaces it with a fixed message when it is not safe to show.
    """
    parts: list[MessagePart] = []
    references: list[Reference] = []
    annotations: list[dict[str, Any]] = []
    for index, block in enumerate(result.content):
        block_parts, reference = content_parts(block)
        parts.extend(block_parts)
        if reference is not None:
            references.append(reference)
        found = _annotations(block.annotations)
        if found:
            annotations.append({"block": index, **found})
    fields: dict[str, Any] = {"content": parts}
    if result.structured_content is not None:
        fields["structuredContent"] = result.structured_content
    if references:
        fields["references"] = references
    metadata: dict[str, Any] = {}
    if _truncated(result):
        metadata.update(truncated=True, maxTextChars=MAX_TEXT_CHARS)
    if annotations:
        metadata["annotations"] = annotations
    if metadata:
        fields["metadata"] = metadata
    if result.is_error:
        fields["isError"] = True
        message = _first_text(result)
        if message:
            fields["error"] = {"code": "MCP_TOOL_ERROR", "message": message}
    return fields
