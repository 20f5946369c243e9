"""Canonical JSON and the sha256 digests that bind approvals to exact arguments and tool definitions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def canonical_json(value: Any) -> str:
    """The canonical text of a JSON value: sorted keys, no spaces, non-ASCII kept, NaN refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    """The sha256 hex digest of ``text`` encoded as UTF-8 (lone surrogates kept byte for byte)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a call's arguments."""
    return sha256_hex(canonical_json(arguments))


def tool_digest(
    *, name: str, description: str | None, input_schema: Mapping[str, Any] | None, effects: Iterable[str]
) -> str:
    """sha256 hex of the canonical JSON of a tool's name, description, input schema and effects."""
    return sha256_hex(
        canonical_json(
            {
                "name": name,
                "description": description,
                "inputSchema": input_schema,
                "effects": sorted(effects),
            }
        )
    )
