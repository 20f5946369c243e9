"""Journal lines: an event as one JSON object with its call and delivery links, secrets redacted."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ditto_tui.runtime.events import ExecutionEvent, NodeInfo
from ditto_tui.sanitize import SecretRedactor

JOURNAL_FORMAT = "ditto-tui/run-journal"
JOURNAL_VERSION = 1
EVERY_DECISION = "every"
"""The header's ``decisions``: this journal has a line for every decision, the policy's too (a call with
none never reached one: it was refused first). Older journals leave the policy's decisions out."""
HEADER_KIND = "journal"
"""The ``kind`` of a journal's first line: what the run ran under (policy, tools, approver)."""

LINKS_KEY = "links"
REDACTED_KEY = "secretsRedacted"
"""Marks a line whose values had a secret replaced (``true``); camelCase, so no event field shares it."""
OLD_REDACTED_KEY = "redacted"
"""The marker's name in journals written before; read only where its value is literally ``true``."""
IDENTITY_FIELDS = ("kind", "run_id", "seq", "format", "version")
"""What a line is (the event's kind, run and place; the header's format): never redacted, so a secret that
happens to equal or sit inside one cannot make a line unreadable."""
INTERACTION_PREFIX = "INTERACTION."
ACT_TOOL = "INTERACTION.ACT.TOOL"
ACT_MCP = "INTERACTION.ACT.MCP"
OBSERVE = "INTERACTION.OBSERVE"
OUTPUT = "INTERACTION.OUTPUT"

Links = dict[str, str]


def field_of(value: Any, name: str, wire: str | None = None) -> Any:
    """``value.name`` of a contract, or ``value[name]``/``value[wire]`` of a mapping (either spelling;
    ``wire`` defaults to the camelCase of ``name``)."""
    if isinstance(value, Mapping):
        found = value.get(name)
        if found is None:
            head, *rest = name.split("_")
            found = value.get(wire or head + "".join(part.title() for part in rest))
        return found
    return getattr(value, name, None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def input_links(node_type: str, input: Any) -> Links | None:
    """The call id or delivery id a node's input names (INTERACTION nodes only)."""
    if node_type == ACT_TOOL or node_type == ACT_MCP:
        call_id = _text(field_of(field_of(input, "call", "call"), "id", "id"))
        return {"callId": call_id} if call_id else None
    if node_type == OBSERVE:
        call_id = _text(field_of(field_of(input, "result", "result"), "call_id", "callId"))
        return {"callId": call_id} if call_id else None
    if node_type == OUTPUT:
        delivery_id = _text(field_of(input, "delivery_id", "deliveryId"))
        return {"deliveryId": delivery_id} if delivery_id else None
    return None


def output_links(node_type: str, output: Any) -> Links | None:
    """The call id or delivery id a node's output carries: result, observation or receipt."""
    if node_type == OUTPUT:
        delivery_id = _text(field_of(output, "delivery_id", "deliveryId"))
        return {"deliveryId": delivery_id} if delivery_id else None
    if node_type == ACT_MCP:
        output = field_of(output, "result", "result") or output
    call_id = _text(field_of(output, "call_id", "callId"))
    return {"callId": call_id} if call_id else None


def wire_form(value: Any) -> Any:
    """The JSON form of a value ``json`` does not know: contracts as on the wire, else ``repr``.

    The one ``default=`` of every event encoder (journal lines and the headless JSON lines alike).
    """
    if isinstance(value, NodeInfo):  # every node of every run_started: worth a shortcut past model_dump
        return {"id": value.id, "type": value.type, "deps": list(value.deps)}
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json", by_alias=True)
    return repr(value)


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as strict JSON data: non-finite floats and odd keys as text, cycles cut."""
    if depth > 64:
        return "<too deep>"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {_key(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    return _plain(wire_form(value), depth + 1)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, int | float | bool):
        return json.dumps(key)
    return repr(key)


class LineEncoder:
    """Turns events into journal lines: the fields of ``event_json`` plus links, redacted when needed."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self._redactor = SecretRedactor(secrets)
        self._encode = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=wire_form
        ).encode

    def encode(self, event: ExecutionEvent, links: Links | None = None) -> str:
        """One line (without its newline) for ``event``."""
        fields: dict[str, Any] = dict(event.__dict__)
        if links:
            fields[LINKS_KEY] = links
        return self.encode_fields(fields)

    def encode_fields(self, fields: dict[str, Any]) -> str:
        """One line for a mapping of fields; string values holding secrets are redacted and the line says
        so. Redaction works on the values (the line is parsed back, never rewritten as text): field names
        and the :data:`IDENTITY_FIELDS` stay as they are."""
        try:
            line = self._encode(fields)
        except (TypeError, ValueError, RecursionError):
            line = self._encode(_plain(fields))
        if not self._redactor.may_redact(line):
            return line
        original = json.loads(line)
        redacted = self._redactor.redact_fields(original, keep=IDENTITY_FIELDS)
        if redacted == original:
            return line
        redacted[REDACTED_KEY] = True
        return self._encode(redacted)
