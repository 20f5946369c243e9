"""What a reviewer should look at twice: spans of a result's text that read like instructions to a model.

A tool or MCP result is data, but a model reads it as text, and a web page, file or server can plant
instructions in it (prompt injection). :func:`suspicious_spans` marks the usual shapes of such text so
the result review view can point at them. It is a heuristic, small on purpose: it flags

- ``override``: "ignore / disregard / forget (all) previous / prior / above instructions";
- ``new role``: "you are now", "from now on you", "pretend to be", "new instructions";
- ``system prompt``: any mention of "system prompt" or "developer message";
- ``chat template``: chat-template tokens a model treats as turn boundaries (``<|im_start|>``,
  ``<|eot_id|>``, ``[INST]``, ``<<SYS>>``);
- ``role marker``: ``system:``, ``assistant:``, ``user:``, ``developer:`` or ``human:`` at the start of
  a line;
- ``secrecy``: "do not tell / inform the user", "without telling the user";
- ``exfiltration``: "exfiltrate", or "send / post / upload / forward … to http(s)://";
- ``hidden text``: zero-width and other invisible format characters, Unicode tag characters;
- ``bidi``: bidirectional overrides and isolates, which show text in another order than it is read;
- ``terminal escape``: ESC and CSI characters, which can hide text on a terminal.

It finds shapes, not intent: a note *about* prompt injection is flagged too, and a well-disguised
attack is not. Nothing is decided by it; the person decides. It never raises, every span lies within
the text, and the time it takes is linear in the length of the text (bounded patterns only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ditto_tui.contracts import ExternalResult, JsonPart, ReferencePart, TextPart

MAX_SPANS = 200
"""At most this many spans are reported (the first ones): enough to point at a planted text."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Span:
    """``text[start:end]`` looks like an instruction to a model, of the kind ``label`` names."""

    start: int
    end: int
    label: str


_I = re.IGNORECASE
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "override",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|skip)\s+(?:(?:all|any|the|your|of|my|these|those)\s+){0,3}"
            r"(?:previous|prior|above|earlier|preceding|former|existing|original|system)\s+"
            r"(?:instructions?|prompts?|directions?|rules|messages?|context|guidelines)\b",
            _I,
        ),
    ),
    (
        "new role",
        re.compile(
            r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you|pretend\s+(?:to\s+be|you\s+are)|"
            r"new\s+instructions?\s*:)",
            _I,
        ),
    ),
    ("system prompt", re.compile(r"\b(?:system\s+prompt|developer\s+message)s?\b", _I)),
    (
        "chat template",
        re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>|\[/?INST\]|<</?SYS>>|</?(?:system|assistant)>", _I),
    ),
    (
        "role marker",
        re.compile(r"^[ \t>#*_-]{0,8}(?:system|assistant|user|developer|human)[ \t]*:", _I | re.MULTILINE),
    ),
    (
        "secrecy",
        re.compile(
            r"\b(?:(?:do\s+not|don'?t|never)\s+(?:tell|inform|show|mention\s+(?:this\s+)?to|"
            r"reveal\s+(?:this\s+)?to|let)|without\s+(?:telling|informing|asking))\s+the\s+user\b",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            r"\bexfiltrat\w{0,10}|\b(?:send|post|upload|forward|transmit|leak|curl)\b[^\n]{0,80}?https?://",
            _I,
        ),
    ),
    ("hidden text", re.compile("[\u00ad\u200b-\u200d\u2060-\u2064\ufeff\U000e0000-\U000e007f]+")),
    ("bidi", re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+")),
    ("terminal escape", re.compile("[\x1b\x9b]")),
)

LABELS: tuple[str, ...] = tuple(label for label, _pattern in _PATTERNS)
"""Every label a span can carry, in the order the module docstring explains them."""


def suspicious_spans(text: str) -> tuple[Span, ...]:
    """The spans of ``text`` that look like instructions to a model, ordered by where they start.

    Spans of different labels may overlap; at most :data:`MAX_SPANS` are returned. Anything that is not
    a string has no spans.
    """
    if not isinstance(text, str) or not text:
        return ()
    found: list[Span] = []
    for label, pattern in _PATTERNS:
        for count, match in enumerate(pattern.finditer(text)):
            if count >= MAX_SPANS:
                break
            found.append(Span(start=match.start(), end=match.end(), label=label))
    found.sort(key=lambda span: (span.start, span.end, span.label))
    return tuple(found[:MAX_SPANS])


def labels_of(spans: Iterable[Span]) -> list[str]:
    """The distinct labels of ``spans``, in the order they first occur."""
    return list(dict.fromkeys(span.label for span in spans))


def result_text(result: ExternalResult) -> str:
    """The text of ``result`` a model would read, as the review view shows it and the spans index it:
    its content (text parts as they are, JSON as JSON, references by address), then its structured
    content as JSON, then its error message, each on lines of its own."""
    pieces: list[str] = []
    content = result.content
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list) and all(isinstance(part, _PARTS) for part in content):
        pieces.extend(_part_text(part) for part in content)
    elif content is not None:
        pieces.append(_json(content))
    if result.structured_content is not None:
        pieces.append(_json(result.structured_content))
    if result.error is not None:
        pieces.append(result.error.message)
    return "\n".join(pieces)


_PARTS = (TextPart, JsonPart, ReferencePart)


def _part_text(part: object) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, JsonPart):
        return _json(part.data)
    if isinstance(part, ReferencePart):
        return part.reference.uri
    return _json(part)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=repr)


__all__ = ["LABELS", "MAX_SPANS", "Span", "labels_of", "result_text", "suspicious_spans"]
