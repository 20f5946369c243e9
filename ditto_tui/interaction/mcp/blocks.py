"""Tool-result content blocks as the server sent them, and the blocks of recent calls kept for the browser.

Nothing here imports the SDK: the SDK adapter makes the blocks (``content.content_blocks``), the registry
keeps them, the browser shows images, offers audio and binary resources for saving, and follows links.
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

MAX_MEDIA_BYTES = 16 * 1024 * 1024
"""The largest image, audio or binary resource kept for the browser to show or save (decoded size)."""

BLOCKS_KEY = "ditto.blocks"
"""The key under which the SDK adapter hands the registry a result's content as :class:`McpBlock` values
(never part of the McpToolResult fields, never journaled)."""

RAW_KEY = "ditto.raw"
"""The key under which the SDK adapter hands the registry a tool result as the SDK parsed it, for a
:class:`CallTap` (the gateway passes it on to its client unchanged); never journaled."""

BlockKind = Literal["text", "image", "audio", "link", "resource"]


@dataclass(frozen=True, kw_only=True, slots=True)
class McpBlock:
    """One content block of a tool result as the server sent it, for the browser to show.

    ``data`` is the block's base64 text (an image, audio or binary resource), decoded by :meth:`payload`
    only when shown or saved. ``annotations`` are the block's content annotations in wire form.
    """

    kind: BlockKind
    text: str | None = None
    mime_type: str | None = None
    data: str | None = None
    uri: str | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: dict[str, Any] | None = None

    @property
    def size(self) -> int | None:
        """The decoded size of ``data`` in bytes, without decoding it."""
        return None if self.data is None else base64_size(self.data)

    def payload(self) -> bytes | None:
        """The decoded bytes of ``data``; ``None`` when there are none, they are not valid base64, or they
        are over ``MAX_MEDIA_BYTES``."""
        if self.data is None or base64_size(self.data) > MAX_MEDIA_BYTES:
            return None
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            return None


def base64_size(data: str) -> int:
    """The number of bytes a base64 string decodes to, without decoding it."""
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


SHELF_CALLS = 32
"""How many recent calls' blocks are kept."""

SHELF_BYTES = 64 * 1024 * 1024
"""The most base64 text kept over all of them; the oldest calls go first."""


def _weight(blocks: tuple[McpBlock, ...]) -> int:
    return sum(len(block.data or "") + len(block.text or "") for block in blocks)


class BlockShelf:
    """The blocks of the last ``SHELF_CALLS`` calls (by server and call id) that sent more than text."""

    def __init__(self, calls: int = SHELF_CALLS, limit: int = SHELF_BYTES) -> None:
        self.calls = calls
        self.limit = limit
        self._kept: OrderedDict[tuple[str, str], tuple[McpBlock, ...]] = OrderedDict()
        self._weight = 0

    def keep(self, server: str, call_id: str, blocks: tuple[McpBlock, ...]) -> None:
        """Keep ``blocks`` of one call (the adapter hands over only blocks that are more than plain text);
        drop the oldest calls while over either bound. A call over the byte bound on its own is not kept."""
        weight = _weight(blocks)
        if weight > self.limit:
            return
        key = (server, call_id)
        if key in self._kept:
            self._weight -= _weight(self._kept.pop(key))
        self._kept[key] = blocks
        self._weight += weight
        while len(self._kept) > self.calls or self._weight > self.limit:
            _, dropped = self._kept.popitem(last=False)
            self._weight -= _weight(dropped)

    def get(self, server: str, call_id: str) -> tuple[McpBlock, ...] | None:
        """The blocks of one call, or ``None`` when it sent only text or is no longer kept."""
        return self._kept.get((server, call_id))


class CallTap:
    """What one call's watcher (the gateway) receives besides its result: each progress notification, as
    the server sent it (not thinned as the run's events are), and the result as the server sent it."""

    def __init__(self, progress: Callable[[float, float | None, str | None], object] | None = None) -> None:
        self.progress = progress
        self.raw: Any = None
