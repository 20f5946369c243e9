"""``ditto-tui mcp import FILE``: the MCP servers of a Claude Desktop, Cursor or ditto.yaml file, merged
into a ``ditto.yaml`` with its comments kept where the file's shape allows it.

No value written in the source for an ``env`` variable, a header or ``auth.clientSecret`` is copied (V-02):
each becomes a ``${VAR}`` reference (an env variable's own name; ``SERVER_HEADER`` for a header), and the
preview names every variable the imported servers read. A value that already refers to a variable is kept.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ditto_tui.config import (
    MCP_SERVERS_KEY,
    STATE_VARIABLE,
    WORKSPACE_VARIABLE,
    AnyVariable,
    RuntimeConfig,
    is_variable_name,
    load_mcp_servers,
    parse_config_text,
    read_config_text,
    template_names,
)
from ditto_tui.errors import ConfigError
from ditto_tui.home import StateDirError, write_private


@dataclass(frozen=True, kw_only=True)
class Variable:
    """An environment variable the imported servers read, and where (``github env``)."""

    name: str
    where: tuple[str, ...]
    replaced: bool
    """True when the source wrote a value there, which the import did not copy."""


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
    variables: tuple[Variable, ...] = ()
    """The variables the servers read, in the order they first appear (to be set before a run)."""


def plan_import(source: Path, target: Path, *, replace: bool = False) -> ImportPlan:
    """The import of ``source``'s servers into ``target``; raises ``ConfigError`` for an invalid source, a
    server ``target`` already has (unless ``replace``), or a result that would not load."""
    if os.path.islink(target):
        raise StateDirError(f"{str(target)!r} is a symbolic link; refusing to write through it")
    servers, variables = without_values(load_mcp_servers(source))
    old = read_config_text(target) if target.exists() else ""
    existing = _existing_servers(old, target)
    replaced = tuple(name for name in servers if name in existing)
    if replaced and not replace:
        names = ", ".join(repr(name) for name in replaced)
        raise ConfigError(f"{target} already defines {names}; nothing written (--replace overwrites them)")
    text, rewritten = _merged(old, servers)
    granted = frozenset(_check(text, target).sandbox.mcp)
    return ImportPlan(
        target=target,
        servers=servers,
        replaced=replaced,
        text=text,
        rewritten=rewritten,
        granted=granted,
        variables=variables,
    )


def write_import(plan: ImportPlan) -> None:
    """Write the planned text (atomically, mode 0600, never through a link)."""
    write_private(plan.target, plan.text.encode("utf-8"))


def describe(plan: ImportPlan) -> list[str]:
    """One line per server: its name and how it starts, with environment and header names (never values);
    then the variables to set, naming those whose values the source wrote and the import left out."""
    lines = []
    for name, entry in plan.servers.items():
        start = entry.get("url") or shlex.join(
            [str(entry.get("command", "")), *map(str, entry.get("args", []))]
        )
        notes = [f"{key}: {', '.join(map(str, entry[key]))}" for key in ("env", "headers") if entry.get(key)]
        notes += ["disabled"] if entry.get("disabled") else []
        notes += ["replaces the entry of the same name"] if name in plan.replaced else []
        lines.append(f"  {name}: {start}" + (f"  ({'; '.join(notes)})" if notes else ""))
    left_out = [variable.name for variable in plan.variables if variable.replaced]
    if left_out:
        refs = ", ".join(f"${{{name}}}" for name in left_out)
        lines.append(f"The values the source writes are not copied; the config refers to them as {refs}.")
    if plan.variables:
        needed = ", ".join(f"{item.name} ({', '.join(item.where)})" for item in plan.variables)
        lines.append(
            "Set these in ditto-tui's environment before sandbox.mcp lists their servers (a run needs every "
            f"listed server's variables): {needed}."
        )
    return lines


# --- values become ${VAR} references -------------------------------------------------------------------

_NOT_ENVIRONMENT = frozenset({WORKSPACE_VARIABLE, STATE_VARIABLE})
_SECRET_FIELDS = ("clientSecret", "client_secret")


def without_values(
    servers: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], tuple[Variable, ...]]:
    """``servers`` with each value of ``env``, ``headers`` and ``auth.clientSecret`` that refers to no
    variable replaced by a ``${VAR}`` reference, and every variable the result reads.

    An env variable keeps its own name (``GITHUB_TOKEN: ${GITHUB_TOKEN}``), a header gets ``SERVER_HEADER``
    (``${GITHUB_AUTHORIZATION}``), a client secret ``SERVER_CLIENT_SECRET``; a name another server uses
    for a different value, or that a template already reads, gets the server's name in front (then a
    number). An empty value is kept.
    """
    reserved = {name for entry in servers.values() for name, _ in _references(entry, ())}
    names = _Names(reserved)
    out: dict[str, dict[str, Any]] = {}
    for server, entry in servers.items():
        copy = dict(entry)
        for key in ("env", "headers"):
            values = entry.get(key)
            if isinstance(values, Mapping):
                copy[key] = {
                    field: names.reference(server, key, str(field), value) for field, value in values.items()
                }
        auth = entry.get("auth")
        if isinstance(auth, Mapping):
            copy["auth"] = {
                field: names.reference(server, "auth", field, value) if field in _SECRET_FIELDS else value
                for field, value in auth.items()
            }
        out[server] = copy
    return out, _variables(out, names.replaced)


class _Names:
    """Chooses the variable of each value taken out; the same value under the same name shares one."""

    def __init__(self, reserved: set[str]) -> None:
        self._reserved = reserved
        self._values: dict[str, object] = {}
        self.replaced: set[str] = set()

    def reference(self, server: str, key: str, field: str, value: object) -> object:
        if value is None or value == "" or (isinstance(value, str) and _reads_variable(value)):
            return value
        own = field if key == "env" and is_variable_name(field) else None
        derived = _derived(server, "CLIENT_SECRET" if key == "auth" else field)
        name = self._free([own] if own else [], derived, value)
        self._values[name] = value
        self.replaced.add(name)
        return f"${{{name}}}"

    def _free(self, first: list[str], derived: str, value: object) -> str:
        taken = len(self._values) + len(self._reserved)
        candidates = [*first, derived, *(f"{derived}_{number}" for number in range(2, taken + 3))]
        for name in candidates:
            if name not in self._reserved and self._values.get(name, value) == value:
                return name
        raise AssertionError("unreachable: there is one more candidate than names taken")


def _reads_variable(text: str) -> bool:
    return next(template_names(text), None) is not None


def _derived(server: str, field: str) -> str:
    """``github`` + ``Authorization`` → ``GITHUB_AUTHORIZATION`` (a valid variable name)."""
    name = re.sub(r"[^A-Za-z0-9]", "_", f"{server}_{field}").upper()
    return f"_{name}" if name[0].isdigit() else name


def _references(value: object, where: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each environment variable ``value``'s strings read, with the keys that lead to it."""
    if isinstance(value, str):
        for name in template_names(value):
            if name not in _NOT_ENVIRONMENT:
                yield name, where
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _references(item, (*where, str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _references(item, where)


def _variables(servers: Mapping[str, Mapping[str, Any]], replaced: set[str]) -> tuple[Variable, ...]:
    found: dict[str, list[str]] = {}
    for server, entry in servers.items():
        for name, where in _references(entry, ()):
            place = _place(server, name, where)
            if place not in found.setdefault(name, []):
                found[name].append(place)
    return tuple(
        Variable(name=name, where=tuple(places), replaced=name in replaced) for name, places in found.items()
    )


def _place(server: str, name: str, where: tuple[str, ...]) -> str:
    """``github env`` (the variable of the same name), ``remote header Authorization``, ``x args``."""
    if where[:1] == ("env",) and where[1:] == (name,):
        return f"{server} env"
    if where[:1] == ("headers",) and len(where) == 2:
        return f"{server} header {where[1]}"
    return " ".join([server, *where[:1], ".".join(where[1:])]).rstrip()


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
