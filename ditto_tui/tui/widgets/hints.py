"""What an MCP server claims about a tool (its ToolAnnotations), read with the spec's defaults (U-11).

The hints are the server's claims, never verified: they are shown so a person can weigh them. The MCP
spec gives each one a default for when the server does not say: ``readOnlyHint`` false,
``destructiveHint`` true, ``idempotentHint`` false, ``openWorldHint`` true; the last three mean
something only for a tool that is not read-only. A value that is not a JSON boolean counts as not said.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rich.text import Text

__all__ = ["HINTS", "Risk", "hint_line", "risk_of", "said"]

HINTS: tuple[tuple[str, str, bool], ...] = (
    ("readOnlyHint", "read-only", False),
    ("destructiveHint", "destructive", True),
    ("idempotentHint", "idempotent", False),
    ("openWorldHint", "open-world", True),
)
"""Each hint: its key, its label, and the spec's default when the server does not say."""

RiskKind = Literal["destructive", "read-only", "not-destructive"]

_RISK_WORDS: dict[RiskKind, str] = {
    "destructive": "destructive",
    "read-only": "read-only",
    "not-destructive": "not destructive",
}
_ONLY_FOR_WRITERS = ("destructiveHint", "idempotentHint")


@dataclass(frozen=True, kw_only=True)
class Risk:
    """How risky the server says a call is: ``kind``, and whether it said so or the default applies."""

    kind: RiskKind
    said: bool

    @property
    def label(self) -> str:
        """``destructive (server says)``, ``destructive (server default)``, ``read-only (server says)``…"""
        return f"{_RISK_WORDS[self.kind]} ({'server says' if self.said else 'server default'})"


def said(annotations: Mapping[str, Any] | None, key: str) -> bool | None:
    """The server's boolean for ``key``, or ``None`` when it did not say (or said something else)."""
    value = annotations.get(key) if annotations else None
    return value if isinstance(value, bool) else None


def risk_of(annotations: Mapping[str, Any] | None) -> Risk:
    """A tool is read-only only when the server says so; otherwise destructive unless it says it is not."""
    if said(annotations, "readOnlyHint") is True:
        return Risk(kind="read-only", said=True)
    destructive = said(annotations, "destructiveHint")
    if destructive is None:
        return Risk(kind="destructive", said=False)
    return Risk(kind="destructive" if destructive else "not-destructive", said=True)


def hint_line(annotations: Mapping[str, Any] | None) -> Text:
    """Every hint with its value, each marked as the server's word or the spec's default (the hints
    about writing are left out of a tool the server calls read-only, as the spec has it)."""
    read_only = said(annotations, "readOnlyHint") is True
    parts = []
    for key, label, default in HINTS:
        if read_only and key in _ONLY_FOR_WRITERS:
            parts.append(Text.assemble((label, "bold"), (" n/a (read-only)", "dim")))
            continue
        value = said(annotations, key)
        shown = default if value is None else value
        part = Text.assemble((label, "bold"), f" {'yes' if shown else 'no'} ")
        part.append("(server says)" if value is not None else "(default)", style="dim")
        parts.append(part)
    return Text(" · ").join(parts)
