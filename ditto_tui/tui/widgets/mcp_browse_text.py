"""What the MCP browser shows of a server's info, resources and prompts, as plain ``Text`` (no Textual)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args
from urllib.parse import quote

from rich.text import Text

from ditto_tui.config import McpLogLevel
from ditto_tui.interaction.mcp import McpServerInfo
from ditto_tui.tui.text import render_untrusted, untrusted_json
from ditto_tui.tui.widgets.mcp_image import picture

__all__ = [
    "LOGGING_LEVELS",
    "MAX_RESULT_CHARS",
    "MAX_RESULT_LINES",
    "MAX_COMPLETIONS",
    "bounded",
    "capability_summary",
    "completion_page",
    "expand_template",
    "ReadContent",
    "item_label",
    "prompt_messages_text",
    "read_contents",
    "resource_text",
    "server_info_text",
    "template_variables",
    "unfilled_variables",
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


LOGGING_LEVELS: tuple[McpLogLevel, ...] = get_args(McpLogLevel)
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
    """A read resource: each content's URI and type, then its text, or its size when it is binary (and
    under that the picture, when it is an image)."""
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
            if (content.mime_type or "").lower().startswith("image/"):
                text.append_text(picture(content.data)).append("\n")
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


# -- resource templates (RFC 6570) ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class _Operator:
    """How one kind of ``{…}`` expression expands (RFC 6570 appendix A); a value given empty is
    treated as undefined, so the table needs no "if empty" column."""

    first: str
    separator: str
    named: bool
    reserved: bool


_OPERATORS = {
    "": _Operator(first="", separator=",", named=False, reserved=False),
    "+": _Operator(first="", separator=",", named=False, reserved=True),
    "#": _Operator(first="#", separator=",", named=False, reserved=True),
    ".": _Operator(first=".", separator=".", named=False, reserved=False),
    "/": _Operator(first="/", separator="/", named=False, reserved=False),
    ";": _Operator(first=";", separator=";", named=True, reserved=False),
    "?": _Operator(first="?", separator="&", named=True, reserved=False),
    "&": _Operator(first="&", separator="&", named=True, reserved=False),
}
_RESERVED = ":/?#[]@!$&'()*+,;="
_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
_EXPRESSION = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Variable:
    name: str
    prefix: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Expression:
    raw: str
    operator: str
    variables: tuple[_Variable, ...]


def _variable(spec: str) -> _Variable | None:
    spec = spec.strip().removesuffix("*")  # explode only changes lists and maps; values here are strings
    name, colon, length = spec.partition(":")
    if not name:
        return None
    prefix = int(length) if colon and length.isdigit() and 0 < int(length) < 10_000 else None
    return _Variable(name=name, prefix=prefix)


def _expression(raw: str, body: str) -> _Expression | None:
    """One ``{…}``; ``None`` for one with no variable or an operator RFC 6570 reserves (kept as text)."""
    first = body[:1]
    if first and first in "=,!@|":
        return None
    operator = first if first and first in _OPERATORS else ""
    found = (_variable(spec) for spec in body[len(operator) :].split(","))
    variables = tuple(variable for variable in found if variable is not None)
    return _Expression(raw=raw, operator=operator, variables=variables) if variables else None


def _parts(template: str) -> list[str | _Expression]:
    parts: list[str | _Expression] = []
    end = 0
    for match in _EXPRESSION.finditer(template):
        expression = _expression(match.group(0), match.group(1))
        if expression is not None:
            parts += [template[end : match.start()], expression]
            end = match.end()
    parts.append(template[end:])
    return [part for part in parts if part != ""]


def template_variables(template: str) -> list[str]:
    """The variable names of a URI template, in order of first use (``{a}``, ``{+a}``, ``{?a,b}``, …)."""
    names: dict[str, None] = {}
    for part in _parts(template):
        if isinstance(part, _Expression):
            names.update((variable.name, None) for variable in part.variables)
    return list(names)


def unfilled_variables(template: str, values: Mapping[str, str]) -> list[str]:
    """Variables a read cannot do without: those of plain ``{a}`` and ``{+a}`` expressions still empty.

    The other forms (``{/a}``, ``{.a}``, ``{#a}``, ``{;a}``, ``{?a}``, ``{&a}``) are optional parts of a
    URI and expand to nothing when empty.
    """
    needed = [
        variable.name
        for part in _parts(template)
        if isinstance(part, _Expression) and part.operator in ("", "+")
        for variable in part.variables
    ]
    return [name for name in dict.fromkeys(needed) if not values.get(name)]


def _encoded(value: str, reserved: bool) -> str:
    """``value`` percent-encoded as UTF-8: only unreserved characters kept, or reserved ones and ``%XX``."""
    if not reserved:
        return quote(value, safe="", errors="replace")
    pieces = _TRIPLET.split(value)
    triplets = [*_TRIPLET.findall(value), ""]
    return "".join(
        quote(piece, safe=_RESERVED, errors="replace") + triplet
        for piece, triplet in zip(pieces, triplets, strict=True)
    )


def _expanded(expression: _Expression, values: Mapping[str, str], keep_unfilled: bool) -> str:
    operator = _OPERATORS[expression.operator]
    items = []
    for variable in expression.variables:
        value = values.get(variable.name)
        if not value:
            continue
        encoded = _encoded(value[: variable.prefix], operator.reserved)
        items.append(f"{variable.name}={encoded}" if operator.named else encoded)
    if not items:
        return expression.raw if keep_unfilled else ""
    return operator.first + operator.separator.join(items)


def expand_template(template: str, values: Mapping[str, str], *, keep_unfilled: bool = False) -> str:
    """The URI ``template`` names with ``values`` put in, each percent-encoded as its operator requires.

    An empty or missing value is undefined (RFC 6570): its part expands to nothing; with
    ``keep_unfilled`` an expression none of whose variables has a value stays as written, so a preview
    still shows what is left to fill in.
    """
    return "".join(
        _expanded(part, values, keep_unfilled) if isinstance(part, _Expression) else part
        for part in _parts(template)
    )


MAX_COMPLETIONS = 100
"""The most completion values offered at once (the most a ``completion/complete`` result may hold)."""


def completion_page(result: Mapping[str, Any]) -> tuple[list[str], int]:
    """A ``completion/complete`` result: its string values (at most 100), and how many more it says exist.

    ``hasMore`` without a ``total`` counts as one more.
    """
    found = result.get("values")
    values = [value for value in found if isinstance(value, str)] if isinstance(found, list) else []
    shown = values[:MAX_COMPLETIONS]
    total = result.get("total")
    more = total - len(shown) if isinstance(total, int) and not isinstance(total, bool) else 0
    more = max(more, len(values) - len(shown))
    if more <= 0 and result.get("hasMore") is True:
        more = 1
    return shown, max(more, 0)
