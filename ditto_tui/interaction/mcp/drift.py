"""Tool-definition drift: each server's known tools, their first-seen pins, and the changes between them."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ditto_tui.contracts import McpCapability
from ditto_tui.digest import canonical_json, sha256_hex

ChangeTrigger = Literal["discovery", "notification"]

MAX_DIFF_CHARS = 20_000
"""The longest diff text kept for one changed tool; the rest is replaced by a note."""

_FIELDS = ("description", "input_schema", "output_schema", "annotations", "title")


def definition(capability: McpCapability) -> dict[str, Any]:
    """The parts of a tool that define what it does: name, description, schemas, annotations and title
    (the words a person reads in the approval view)."""
    return {
        "name": capability.name,
        "description": capability.description,
        "inputSchema": capability.input_schema,
        "outputSchema": capability.output_schema,
        "annotations": capability.annotations,
        "title": capability.title,
    }


def definition_digest(capability: McpCapability) -> str:
    """sha256 hex of the canonical JSON of the tool's definition (see :func:`definition`)."""
    return sha256_hex(canonical_json(definition(capability)))


def _same(before: McpCapability, after: McpCapability) -> bool:
    return before is after or all(getattr(before, field) == getattr(after, field) for field in _FIELDS)


def _diff_text(before: McpCapability, after: McpCapability) -> str:
    def lines(capability: McpCapability) -> list[str]:
        text = json.dumps(definition(capability), indent=2, sort_keys=True, ensure_ascii=False)
        return text.splitlines()

    text = "\n".join(difflib.unified_diff(lines(before), lines(after), "before", "after", lineterm="", n=2))
    if len(text) > MAX_DIFF_CHARS:
        return text[:MAX_DIFF_CHARS] + f"\n… diff cut at {MAX_DIFF_CHARS} characters"
    return text


@dataclass(frozen=True, kw_only=True)
class McpToolChange:
    """One known tool whose definition differs from what was seen before."""

    name: str
    fields: tuple[str, ...]
    before_digest: str
    after_digest: str
    diff: str

    def to_json(self) -> dict[str, Any]:
        """The change as JSON (camelCase keys, like the wire contracts)."""
        return {
            "name": self.name,
            "fields": list(self.fields),
            "beforeDigest": self.before_digest,
            "afterDigest": self.after_digest,
            "diff": self.diff,
        }


def compare(before: McpCapability, after: McpCapability) -> McpToolChange | None:
    """The change from ``before`` to ``after``, or ``None`` when the definitions are the same."""
    if _same(before, after):
        return None
    fields = tuple(field for field in _FIELDS if getattr(before, field) != getattr(after, field))
    return McpToolChange(
        name=after.name,
        fields=fields,
        before_digest=definition_digest(before),
        after_digest=definition_digest(after),
        diff=_diff_text(before, after),
    )


@dataclass(frozen=True, kw_only=True)
class McpToolsChanged:
    """What changed in one server's tool list since it was last listed."""

    server: str
    trigger: ChangeTrigger
    changed: tuple[McpToolChange, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The report as JSON, for events and the journal."""
        return {
            "server": self.server,
            "trigger": self.trigger,
            "changed": [change.to_json() for change in self.changed],
            "added": list(self.added),
            "removed": list(self.removed),
        }


class ToolCatalog:
    """Known tool definitions per server, the definition first seen for each tool, and open changes.

    A tool whose definition differs from the one first seen stays *changed* until :meth:`accept` pins the
    new definition; the registry refuses to invoke a changed tool meanwhile.
    """

    def __init__(self) -> None:
        self._known: dict[str, dict[str, McpCapability]] = {}
        self._pins: dict[tuple[str, str], McpCapability] = {}
        self._changed: dict[tuple[str, str], McpToolChange] = {}

    def known(self, server: str, name: str) -> McpCapability | None:
        """The definition of ``name`` as last listed by ``server``."""
        tools = self._known.get(server)
        return tools.get(name) if tools is not None else None

    def listed(self, server: str) -> bool:
        """Whether ``server`` has a complete listing on record."""
        return server in self._known

    def tools(self, server: str) -> list[McpCapability]:
        """Every tool ``server`` listed last time, in listing order."""
        return list(self._known.get(server, {}).values())

    def changed(self, server: str, name: str) -> McpToolChange | None:
        """The open change of ``server``'s tool ``name``, if its definition moved from the pinned one."""
        return self._changed.get((server, name)) if self._changed else None

    def pending(self, server: str | None = None) -> list[tuple[str, McpToolChange]]:
        """Open changes as ``(server, change)``, for one server or all."""
        return [(key[0], change) for key, change in self._changed.items() if server in (None, key[0])]

    def accept(self, server: str, names: Iterable[str] | None = None) -> list[str]:
        """Pin the current definitions of ``names`` (default: every changed tool of ``server``)."""
        wanted = None if names is None else set(names)
        accepted = []
        for key in [key for key in self._changed if key[0] == server]:
            if wanted is None or key[1] in wanted:
                del self._changed[key]
                current = self.known(*key)
                if current is not None:
                    self._pins[key] = current
                accepted.append(key[1])
        return accepted

    def forget(self, server: str) -> None:
        """Drop what ``server`` listed (pins and open changes stay): its tools are unknown until relisted."""
        self._known.pop(server, None)

    def update(
        self, server: str, capabilities: Iterable[McpCapability], trigger: ChangeTrigger
    ) -> McpToolsChanged | None:
        """Record a complete listing of ``server``; report what differs from the previous listing."""
        previous = self._known.get(server)
        current = {capability.name: capability for capability in capabilities}
        self._known[server] = current
        for capability in current.values():
            self._track(server, capability)
        if previous is None:
            return None
        moved = tuple(
            change
            for change in (compare(previous[name], cap) for name, cap in current.items() if name in previous)
            if change is not None
        )
        added = tuple(name for name in current if name not in previous)
        removed = tuple(name for name in previous if name not in current)
        if not (moved or added or removed):
            return None
        return McpToolsChanged(server=server, trigger=trigger, changed=moved, added=added, removed=removed)

    def _track(self, server: str, capability: McpCapability) -> None:
        key = (server, capability.name)
        pin = self._pins.get(key)
        if pin is None:
            self._pins[key] = capability
            return
        change = compare(pin, capability)
        if change is None:
            self._changed.pop(key, None)
        else:
            self._changed[key] = change
