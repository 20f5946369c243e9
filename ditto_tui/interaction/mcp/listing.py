"""Reading a server's tool list page by page: cursors, the shared budget, and checks on every tool."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pydantic

from ditto_tui.contracts import McpCapability
from ditto_tui.errors import McpError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.signal import CancelSignal

TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""Tool names the registry accepts (the MCP specification's SEP-986 charset and length)."""

MAX_DESCRIPTION_CHARS = 65_536
"""The longest tool description accepted; a longer one fails the discovery. Schemas are bounded by the
transport's message size and by the JSON depth limit of the contracts."""


class PageSource(Protocol):
    """The part of the ``McpClient`` port that discovery uses."""

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        """One page: ``{"tools": [...], "nextCursor"?: str}``."""
        ...


class Budget:
    """The page and capability budget of one discover call, shared across servers."""

    def __init__(self, pages: int, capabilities: int) -> None:
        self.pages = pages
        self.capabilities = capabilities

    def take_page(self, server: str) -> None:
        """Spend one page, or fail when none is left."""
        if self.pages <= 0:
            raise McpError(
                f"discovery needs more than the page limit (at server {server!r})", code="MCP_PAGE_LIMIT"
            )
        self.pages -= 1

    def take_capabilities(self, server: str, count: int) -> None:
        """Spend ``count`` capabilities before they are merged, or fail when that would exceed the limit."""
        if count > self.capabilities:
            raise McpError(
                f"discovery exceeds the capability limit (at server {server!r})", code="MCP_CAPABILITY_LIMIT"
            )
        self.capabilities -= count


def _label(name: str) -> str:
    """A tool name fit for an error message: short, and repr-escaped when it is not a plain name."""
    return repr(name) if TOOL_NAME.fullmatch(name) else repr(name[:40]) + ("…" if len(name) > 40 else "")


def _invalid(server: str, name: str, problem: str, code: str = "MCP_INVALID_TOOL") -> McpError:
    return McpError(f"server {server!r} tool {_label(name)} {problem}", code=code)


def _check_sizes(server: str, name: str, tool: Mapping[str, Any]) -> None:
    description = tool.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION_CHARS:
        raise _invalid(server, name, f"has a description over {MAX_DESCRIPTION_CHARS} characters")


def _schema(server: str, name: str, tool: Mapping[str, Any], key: str, alias: str) -> Any:
    schema = tool.get(key, tool.get(alias))
    if schema is not None and not isinstance(schema, Mapping):
        what = alias.replace("_", " ")
        raise _invalid(server, name, f"has an {what} that is not an object", "MCP_INVALID_SCHEMA")
    return schema


def _input_schema(server: str, name: str, tool: Mapping[str, Any]) -> Mapping[str, Any]:
    schema: Mapping[str, Any] | None = _schema(server, name, tool, "inputSchema", "input_schema")
    if schema is None:
        raise _invalid(server, name, "has no input schema object", "MCP_INVALID_SCHEMA")
    if schema.get("type") != "object":
        raise _invalid(server, name, 'has an input schema whose type is not "object"', "MCP_INVALID_SCHEMA")
    return schema


Known = Callable[[str], McpCapability | None]
"""The capability a tool name had at the server's previous listing, if any."""


def _unknown(_name: str) -> None:
    return None


TASKS_UNSUPPORTED = (
    "it must run as a task (execution.taskSupport: required), and task-augmented calls are not supported"
)


def _unsupported(tool: Mapping[str, Any]) -> str | None:
    """Why the client cannot call ``tool``: only a tool that requires task augmentation, for now."""
    execution = tool.get("execution")
    if isinstance(execution, Mapping) and execution.get("taskSupport") == "required":
        return TASKS_UNSUPPORTED
    return None


def _title(tool: Mapping[str, Any]) -> str | None:
    title = tool.get("title")
    return title if isinstance(title, str) and title else None


def _unchanged(previous: McpCapability, tool: Mapping[str, Any]) -> bool:
    """Whether a listed tool is exactly the capability already known (so it need not be validated again)."""
    return (
        previous.description == tool.get("description")
        and previous.title == _title(tool)
        and previous.unsupported == _unsupported(tool)
        and previous.input_schema == tool.get("inputSchema", tool.get("input_schema"))
        and previous.output_schema == tool.get("outputSchema", tool.get("output_schema"))
        and previous.annotations == tool.get("annotations")
    )


def capability(server: str, tool: Any, known: Known = _unknown) -> McpCapability:
    """Check one listed tool and turn it into an ``McpCapability``; an invalid tool fails the discovery.

    A tool listed exactly as ``known`` last saw it is the known capability again (a relisting is cheap).
    """
    if not isinstance(tool, Mapping):
        raise McpError(f"server {server!r} listed a tool that is not an object", code="MCP_INVALID_TOOL")
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise McpError(f"server {server!r} listed a tool without a name", code="MCP_INVALID_TOOL")
    if not TOOL_NAME.fullmatch(name):
        raise _invalid(server, name, "has a name outside [A-Za-z0-9._-]{1,128}")
    _check_sizes(server, name, tool)
    previous = known(name)
    if previous is not None and _unchanged(previous, tool):
        return previous
    schema = _input_schema(server, name, tool)
    output_schema = _schema(server, name, tool, "outputSchema", "output_schema")
    try:
        return McpCapability.model_validate(
            {
                "server": server,
                "name": name,
                "description": tool.get("description"),
                "input_schema": schema,
                "output_schema": output_schema,
                "annotations": tool.get("annotations"),
                "title": _title(tool),
                "unsupported": _unsupported(tool),
            }
        )
    except pydantic.ValidationError as exc:
        raise _invalid(server, name, f"is invalid: {validation_summary(exc)}") from None


def _page(server: str, page: Any) -> tuple[Sequence[Any], str | None]:
    if not isinstance(page, Mapping) or not isinstance(page.get("tools"), list | tuple):
        raise McpError(
            f"server {server!r} returned a discovery page without a tools list", code="MCP_INVALID_PAGE"
        )
    cursor = page.get("nextCursor", page.get("next_cursor"))
    if cursor is not None and not isinstance(cursor, str):
        raise McpError(f"server {server!r} returned a cursor that is not a string", code="MCP_INVALID_PAGE")
    return page["tools"], cursor


def _merge(server: str, found: dict[str, McpCapability], tools: Sequence[Any], known: Known) -> None:
    for tool in tools:
        parsed = capability(server, tool, known)
        if parsed.name in found:
            raise _invalid(server, parsed.name, "is listed twice", "MCP_DUPLICATE_TOOL")
        found[parsed.name] = parsed


async def list_server(
    server: str, client: PageSource, budget: Budget, signal: CancelSignal | None, known: Known = _unknown
) -> tuple[list[McpCapability], int]:
    """Every tool of ``server`` and the number of pages read.

    Cursors are remembered in a seen-set (the empty string is a cursor too): a repeated one fails before its
    page is requested again, so no page is ever merged twice. Limits are checked before a page is merged.
    """
    found: dict[str, McpCapability] = {}
    seen: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        if signal is not None:
            signal.raise_if_cancelled()
        budget.take_page(server)
        page = await client.list_tools(cursor=cursor, signal=signal)
        pages += 1
        if signal is not None:
            signal.raise_if_cancelled()
        tools, cursor = _page(server, page)
        budget.take_capabilities(server, len(tools))
        _merge(server, found, tools, known)
        if cursor is None:
            return list(found.values()), pages
        if cursor in seen:
            raise McpError(f"server {server!r} repeated a discovery cursor", code="MCP_REPEATED_CURSOR")
        seen.add(cursor)
