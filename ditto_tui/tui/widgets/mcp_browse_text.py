"""What the MCP browser shows of a server's info, resources and prompts, as plain ``Text`` (no Textual)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from ditto_tui.interaction.mcp import McpServerInfo
from ditto_tui.tui.text import render_untrusted, untrusted_json

__all__ = [
    "LOGGING_LEVELS",
    "MAX_RESULT_CHARS",
    "MAX_RESULT_LINES",
    "bounded",
    "capability_summary",
    "ReadContent",
    "item_label",
    "prompt_messages_text",
    "read_contents",
    "resource_text",
    "server_info_text",
]

MAX_RESULT_LINES = 2000
"""The most lines of a result the browser lays out; the rest is announced, not silently dropped."""

MAX_RESULT_CHARS = 200_000
"""The most characters of a result the browser lays out."""


def bounded(text: Text, max_lines: int = MAX_RESULT_LINES, max_chars: int = MAX_RESULT_CHARS) -> Text:
    """``text`` cut to the limits, with a note saying how much was left out (layout stays fast)."""
    plain = text.plain
    cut = min(len(plain), max_chars)
    newline = -1
    for _ in range(max_lines):
        newline = plain.find("\n", newline + 1, cut)
        if newline < 0:
            break
    else:
        cut = newline
    if cut >= len(plain):
        return text
    shown = text[:cut]
    hidden_lines = plain.count("\n", cut)
    shown.append(
        f"\n… {len(plain) - cut:,} more characters ({hidden_lines:,} more lines) not shown here",
        style="bold yellow",
    )
    return shown


LOGGING_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The MCP logging levels, most verbose first."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadContent:
    """One content of a read resource: its text, or its bytes when the server sent a base64 blob."""

    uri: str
    mime_type: str | None
    text: str | None = None
    data: bytes | None = None
    problem: str | None = None


def page_items(page: Mapping[str, Any], key: str) -> tuple[list[Mapping[str, Any]], str | None]:
    """One listing page: its items under ``key`` (objects only) and its next cursor, if any."""
    listed = page.get(key)
    items = [item for item in listed if isinstance(item, Mapping)] if isinstance(listed, list) else []
    cursor = page.get("nextCursor")
    return items, cursor if isinstance(cursor, str) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _field(text: Text, label: str, value: Text | str) -> None:
    text.append(f"{label}: ", style="bold")
    text.append_text(value if isinstance(value, Text) else render_untrusted(value, newlines="visible"))
    text.append("\n")


def capability_summary(capabilities: Mapping[str, Any]) -> Text:
    """``resources (subscribe, listChanged), tools, ...``: each capability with the flags it sets."""
    parts = []
    for name, value in capabilities.items():
        part = render_untrusted(str(name), newlines="visible")
        flags = [str(flag) for flag, on in value.items() if on is True] if isinstance(value, Mapping) else []
        if flags:
            part.append(" (")
            part.append_text(render_untrusted(", ".join(flags), newlines="visible", style="dim"))
            part.append(")")
        parts.append(part)
    return Text(", ").join(parts) if parts else Text("none", style="dim")


def server_info_text(info: McpServerInfo, ping: str | None, log_level: str | None = None) -> Text:
    """What the server said about itself when it connected, the last ping's round trip, its log level."""
    text = Text("\nserver info\n", style="bold underline")
    _field(text, "name", info.name)
    if info.title:
        _field(text, "title", info.title)
    _field(text, "version", info.version or "?")
    _field(text, "protocol version", info.protocol_version)
    if ping is not None:
        _field(text, "ping", ping)
    if log_level is not None:
        _field(text, "log level", log_level)
    _field(text, "capabilities", capability_summary(info.capabilities))
    if info.instructions:
        text.append("\ninstructions\n", style="bold")
        text.append_text(render_untrusted(info.instructions))
        text.append("\n")
    return text


def item_label(item: Mapping[str, Any], *, key: str = "uri", marked: bool = False) -> Text:
    """One listed resource, template or prompt: its title (or name), its name, its URI, its type."""
    name = _str(item.get("name")) or "?"
    title = _str(item.get("title"))
    label = Text("◉ " if marked else "")
    label.append_text(render_untrusted(title or name, newlines="visible", style="bold"))
    if title:
        label.append("  ")
        label.append_text(render_untrusted(name, newlines="visible", style="dim"))
    where = _str(item.get(key))
    if where:
        label.append("  ")
        label.append_text(render_untrusted(where, newlines="visible", style="cyan"))
    mime = _str(item.get("mimeType"))
    if mime:
        label.append("  ")
        label.append_text(render_untrusted(mime, newlines="visible", style="dim"))
    return label


def _decoded(blob: str) -> bytes | None:
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None


def read_contents(result: Mapping[str, Any]) -> list[ReadContent]:
    """The contents of a ``resources/read`` result, blobs decoded."""
    contents = result.get("contents")
    found = []
    for content in contents if isinstance(contents, Sequence) else []:
        if not isinstance(content, Mapping):
            continue
        uri, mime = _str(content.get("uri")) or "?", _str(content.get("mimeType"))
        blob = _str(content.get("blob"))
        if blob is not None:
            data = _decoded(blob)
            problem = None if data is not None else "the server sent a blob that is not valid base64"
            found.append(ReadContent(uri=uri, mime_type=mime, data=data, problem=problem))
        else:
            found.append(ReadContent(uri=uri, mime_type=mime, text=_str(content.get("text")) or ""))
    return found


def resource_text(contents: Sequence[ReadContent], subscribed: bool) -> Text:
    """A read resource: each content's URI and type, then its text, or its size when it is binary."""
    text = Text()
    if subscribed:
        text.append("◉ subscribed (u unsubscribes)\n", style="green")
    if not contents:
        text.append("(the resource has no contents)", style="dim")
    for content in contents:
        text.append_text(render_untrusted(content.uri, newlines="visible", style="bold cyan"))
        text.append("  ")
        text.append_text(render_untrusted(content.mime_type or "no type", newlines="visible", style="dim"))
        text.append("\n")
        if content.problem:
            text.append(f"{content.problem}\n", style="red")
        elif content.data is not None:
            text.append(f"binary, {len(content.data):,} bytes: ", style="yellow")
            text.append("w saves it under the workspace\n")
        else:
            text.append_text(render_untrusted(content.text or ""))
            text.append("\n")
    return text


def _message_part(content: object) -> Text:
    if not isinstance(content, Mapping):
        return untrusted_json(content)
    if content.get("type") == "text":
        return render_untrusted(_str(content.get("text")) or "")
    if content.get("type") == "resource" and isinstance(content.get("resource"), Mapping):
        (read,) = read_contents({"contents": [content["resource"]]})
        return resource_text([read], False)
    shown = {key: value for key, value in content.items() if key != "data"}
    if "data" in content:
        shown["data"] = f"({len(str(content['data'])):,} base64 characters)"
    return untrusted_json(shown)


def prompt_messages_text(result: Mapping[str, Any]) -> Text:
    """A ``prompts/get`` result: its description, then each message with its role."""
    text = Text()
    description = _str(result.get("description"))
    if description:
        text.append_text(render_untrusted(description, style="italic"))
        text.append("\n\n")
    messages = result.get("messages")
    for message in messages if isinstance(messages, Sequence) else []:
        role = _str(message.get("role")) if isinstance(message, Mapping) else None
        text.append_text(render_untrusted(role or "?", newlines="visible", style="bold magenta"))
        text.append("\n")
        text.append_text(_message_part(message.get("content") if isinstance(message, Mapping) else message))
        text.append("\n\n")
    text.rstrip()
    return text
