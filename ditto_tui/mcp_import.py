"""``ditto-tui mcp import FILE``: the MCP servers of a Claude Desktop, Cursor or ditto.yaml file, merged
into a ``ditto.yaml`` with its comments kept where the file's shape allows it."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ditto_tui.config import (
    MCP_SERVERS_KEY,
    AnyVariable,
    RuntimeConfig,
    load_mcp_servers,
    parse_config_text,
    read_config_text,
)
from ditto_tui.errors import ConfigError
from ditto_tui.home import StateDirError, write_private


@dataclass(frozen=True, kw_only=True)
class ImportPlan:
    """What an import would write: the servers, the ones it replaces, the new text of ``target``."""

    target: Path
    servers: dict[str, dict[str, Any]]
    replaced: tuple[str, ...]
    text: str
    rewritten: bool
    """True when the file had to be written anew (its comments and layout are not kept)."""
    granted: frozenset[str]
    """The servers the new text's ``sandbox.mcp`` grants."""


def plan_import(source: Path, target: Path, *, replace: bool = False) -> ImportPlan:
    """The import of ``source``'s servers into ``target``; raises ``ConfigError`` for an invalid source, a
    server ``target`` already has (unless ``replace``), or a result that would not load."""
    if os.path.islink(target):
        raise StateDirError(f"{str(target)!r} is a symbolic link; refusing to write through it")
    servers = load_mcp_servers(source)
    old = read_config_text(target) if target.exists() else ""
    existing = _existing_servers(old, target)
    replaced = tuple(name for name in servers if name in existing)
    if replaced and not replace:
        names = ", ".join(repr(name) for name in replaced)
        raise ConfigError(f"{target} already defines {names}; nothing written (--replace overwrites them)")
    text, rewritten = _merged(old, servers)
    granted = frozenset(_check(text, target).sandbox.mcp)
    return ImportPlan(
        target=target, servers=servers, replaced=replaced, text=text, rewritten=rewritten, granted=granted
    )


def write_import(plan: ImportPlan) -> None:
    """Write the planned text (atomically, mode 0600, never through a link)."""
    write_private(plan.target, plan.text.encode("utf-8"))


def describe(plan: ImportPlan) -> list[str]:
    """One line per server: its name and how it starts, with environment and header names (never values)."""
    lines = []
    for name, entry in plan.servers.items():
        start = entry.get("url") or shlex.join(
            [str(entry.get("command", "")), *map(str, entry.get("args", []))]
        )
        notes = [f"{key}: {', '.join(map(str, entry[key]))}" for key in ("env", "headers") if entry.get(key)]
        notes += ["disabled"] if entry.get("disabled") else []
        notes += ["replaces the entry of the same name"] if name in plan.replaced else []
        lines.append(f"  {name}: {start}" + (f"  ({'; '.join(notes)})" if notes else ""))
    return lines


def _existing_servers(text: str, target: Path) -> set[str]:
    """The server names ``text`` defines (read as YAML only: the file may still grant one it lacks)."""
    try:
        data = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        _check(text, target)  # raises, naming the file and line
        raise
    if not isinstance(data, dict):
        return set()
    mcp = data.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    names = set(servers) if isinstance(servers, dict) else set()
    pasted = data.get(MCP_SERVERS_KEY)
    return names | (set(pasted) if isinstance(pasted, dict) else set())


def _check(text: str, target: Path) -> RuntimeConfig:
    try:
        return parse_config_text(text, AnyVariable(), name=str(target))
    except ConfigError as exc:
        raise ConfigError(
            f"the import would leave a config that does not load; nothing written:\n{exc}"
        ) from None


# --- merging text --------------------------------------------------------------------------------------


def _merged(text: str, servers: dict[str, dict[str, Any]]) -> tuple[str, bool]:
    """``text`` with ``servers`` added to (or replacing entries of) its servers block; True if rewritten."""
    if not text.strip():
        return "mcp:\n  servers:\n" + _entries(servers, 4), False
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    block = _servers_block(root)
    if block is not None:
        return _into_block(text, block, servers), False
    mcp = _value(root, "mcp") if isinstance(root, yaml.MappingNode) else None
    if isinstance(root, yaml.MappingNode) and mcp is None and _value(root, MCP_SERVERS_KEY) is None:
        return text.rstrip("\n") + "\n\nmcp:\n  servers:\n" + _entries(servers, 4), False
    if (
        isinstance(mcp, yaml.MappingNode)
        and not mcp.flow_style
        and mcp.value
        and _value(mcp, "servers") is None
    ):
        indent = mcp.value[0][0].start_mark.column
        end = _content_end(text.splitlines(keepends=True), mcp.value[-1][0].start_mark.line, mcp.end_mark)
        return _insert(text, end, " " * indent + "servers:\n" + _entries(servers, 2 * indent)), False
    return _rewritten(text, servers), True


def _servers_block(root: yaml.Node | None) -> yaml.MappingNode | None:
    """The block-style mapping of servers (``mcp.servers`` or ``mcpServers``), if the file has one."""
    if not isinstance(root, yaml.MappingNode):
        return None
    mcp = _value(root, "mcp")
    for node in (
        _value(mcp, "servers") if isinstance(mcp, yaml.MappingNode) else None,
        _value(root, MCP_SERVERS_KEY),
    ):
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            return node
    return None


def _value(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found: yaml.Node = value_node
            return found
    return None


def _into_block(text: str, block: yaml.MappingNode, servers: dict[str, dict[str, Any]]) -> str:
    lines = text.splitlines(keepends=True)
    indent = block.value[0][0].start_mark.column
    starts = [key.start_mark.line for key, _ in block.value]
    end = _content_end(lines, starts[-1], block.end_mark)
    spans = [(start, nxt) for start, nxt in zip(starts, [*starts[1:], end], strict=True)]
    names = [key.value for key, _ in block.value]
    drop = {index for index, name in enumerate(names) if name in servers}
    kept = [
        line for index, (start, stop) in enumerate(spans) if index not in drop for line in lines[start:stop]
    ]
    head, tail = lines[: starts[0]], lines[end:]
    return "".join([*head, *kept, _entries(servers, indent), *tail])


def _content_end(lines: list[str], first: int, end_mark: yaml.Mark) -> int:
    """The line after the last line of a block, not counting the blank and comment lines that follow it
    (they belong to what comes next)."""
    end = end_mark.line + (1 if end_mark.column > 0 else 0)
    end = min(end, len(lines))
    while end > first + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _insert(text: str, line: int, block: str) -> str:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join([*lines[:line], block, *lines[line:]])


def _entries(servers: dict[str, dict[str, Any]], indent: int) -> str:
    dumped = yaml.safe_dump(servers, sort_keys=False, default_flow_style=None, allow_unicode=True, width=4096)
    return "".join(" " * indent + line if line.strip() else line for line in dumped.splitlines(keepends=True))


def _rewritten(text: str, servers: dict[str, dict[str, Any]]) -> str:
    data: dict[str, Any] = yaml.safe_load(text) or {}
    pasted: dict[str, Any] = data.pop(MCP_SERVERS_KEY, None) or {}
    mcp: dict[str, Any] = data["mcp"] if isinstance(data.get("mcp"), dict) else {}
    data["mcp"] = {**mcp, "servers": {**pasted, **(mcp.get("servers") or {}), **servers}}
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True, width=4096)
