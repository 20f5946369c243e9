"""One-line public error messages: no secrets, controls, absolute paths or stack frames (ADVERSARIAL E)."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ditto_tui.errors import DittoError, GraphExecutionError

if TYPE_CHECKING:
    from ditto_tui.contracts import InteractionError

__all__ = [
    "MAX_PUBLIC_MESSAGE_LENGTH",
    "MIN_SECRET_SUBSTRING_LENGTH",
    "REDACTED",
    "SecretRedactor",
    "escape_controls",
    "escape_unprintable",
    "exception_label",
    "public_message_from_exception",
    "safe_error",
    "sanitize_public_message",
    "unsafe_reason",
]

MAX_PUBLIC_MESSAGE_LENGTH = 512
"""The longest public message ``unsafe_reason`` accepts, in code points."""

REDACTED = "[REDACTED]"
"""What a credential or a configured secret is replaced with."""

MIN_SECRET_SUBSTRING_LENGTH = 8
"""From this length on :class:`SecretRedactor` replaces a secret wherever it occurs in kept text; a shorter
one only where a whole string value equals it (a substring that short would hit ordinary words and keys)."""

_PATH = "<path>"
_FRAME = "<frame>"
_ELLIPSIS = "…"
_WITHHELD = "message withheld"
# Work on a bounded prefix: the public message keeps at most 512 characters, so anything past this
# point can never be shown, and every pattern below stays linear on what is left.
_WORKING_LIMIT = 65_536
_ROUNDS = 3

# --- characters --------------------------------------------------------------------------------------

_LINE_BREAKS = re.compile(r"[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]+")
_ESCAPE_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, DCS, SOS, PM, APC with a terminator
)
# C0, DEL, C1, lone surrogates, and every format (Cf) or invisible character that can reorder or hide
# text: bidi controls, zero-width characters, fillers, variation selectors and Unicode tags.
_FORBIDDEN_CHARS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)

# --- stack frames --------------------------------------------------------------------------------------

# Characters Python counts as printable but that render as nothing (fillers, joiners, selectors): they
# could hide text just as a zero-width space does.
_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)
_NOT_PLAIN_ASCII = re.compile(r"[^\x20-\x7e]")


def _hidden(char: str) -> bool:
    return not char.isprintable() or _INVISIBLE.match(char) is not None


def _plain(text: str) -> bool:
    return text.isprintable() and (text.isascii() or not _INVISIBLE.search(text))


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _hidden(char):
        return char
    point = ord(char)
    if point > 0xFFFF:  # a surrogate pair, so the escape also reads back as JSON
        point -= 0x10000
        return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"
    return f"\\u{point:04x}"


def _text_escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _hidden(char):
        return char
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def escape_unprintable(text: str) -> str:
    """A line of JSON with every character a terminal could act on or hide written as a JSON escape.

    The characters are those of :func:`escape_controls`; the escapes are JSON escapes, so the line still
    parses to the same value and shows literally on any terminal.
    """
    return text if _plain(text) else _NOT_PLAIN_ASCII.sub(_json_escape, text)


def escape_controls(text: str) -> str:
    """``text`` with every character that is not visible text shown as an escape (``\\x1b``, ``\\u202e``).

    That is C0 and C1 controls (line breaks, CR and ESC included), DEL, format characters (bidi controls,
    zero-width characters), line and paragraph separators, surrogates, unassigned code points, spaces
    other than the plain one, and the invisible fillers and variation selectors: printed, the text shows
    literally, and nothing in it can move the cursor, set the title or the clipboard, or hide a word.
    """
    return text if _plain(text) else _NOT_PLAIN_ASCII.sub(_text_escape, text)


_TRACEBACK_HEADER = "Traceback (most recent call last):"
# A JavaScript frame's location is one token ending in :line:column after a name-like character (so a
# clock time, "at 10:30:00", is not one). Text glued on after the column ("y.js:1:2File") does not hide the
# location, and neither does punctuation glued on before it ("at )@https://x/y.js:1:2"). Anchored on "at "
# or on the start of a token (never inside one: text dense with "@" would start a scan at each), each
# pattern scans at most 512 characters from there.
_JS_END = r"(?<=[A-Za-z_$/\\>]):\d+:\d+(?!\d)"
_JS_LOCATION = rf"[^()\s]{{0,512}}{_JS_END}"
_FRAME_PATTERN = re.compile(
    r'File "[^"]{0,512}", line \d+'  # Python
    r"|\bat +(?:async +)?(?:new +)?[^\s()]{1,512}(?: \[as [^\]\s]{1,256}\])?"  # V8: at f (where)
    rf" \((?:{_JS_LOCATION}|native|<anonymous>|index \d+)\)"
    rf"|\bat +(?:async +)?\S{{0,512}}{_JS_END}"  # V8: at where
    rf"|(?<![^\s(])[^\w\s$.<>/*@]{{0,8}}[\w$.<>/*]{{0,256}}@{_JS_LOCATION}"  # SpiderMonkey, JSC: f@where
)

# --- credentials (E-01 .. E-03) ------------------------------------------------------------------------

_VALUE = r"(?:\[REDACTED\]|[^\s\"'`,;<>(){}\[\]…]+)"
_TOKEN_PATTERN = re.compile(
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|$)"
    r"|\bsk-[A-Za-z0-9_\-]{16,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|\b(?:AKIA|ASIA)[A-Z0-9]{16,}"
    r"|\bAIza[A-Za-z0-9_\-]{30,}"
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
)
# The same block across line breaks, for text that keeps them.
_PEM_BLOCK = re.compile(
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)", re.S
)
_HEADER_PATTERN = re.compile(
    r"(?i)(?<![A-Za-z0-9_-])((?:proxy-)?authorization|x-api-key|x-goog-api-key|x-auth-token"
    r"|x-subscription-token|api-key|(?:set-)?cookie)"
    r"([\"']?\s*[:=]\s*[\"']?)"
    r"((?:bearer|basic|token|digest)\s+)?"
    rf"({_VALUE}(?:;\s?{_VALUE})*)"
)
_BEARER_PATTERN = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]{12,}=*)")
_USERINFO_PATTERN = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://)([^\s/@\"'<>]+)@")
_QUERY_PATTERN = re.compile(
    r"(?i)(?<![A-Za-z0-9])(access_token|refresh_token|client_secret|api_key|apikey|x-amz-signature"
    r"|x-amz-credential|signature|password|passwd|secret|token|key|sig)"
    r"( ?= ?[\"']?)((?:\[REDACTED\]|[^\s&\"'`#<>…]+))"
)

# A cheap first look: every credential pattern above needs one of these substrings.
_MAYBE_CREDENTIAL = re.compile(
    r"(?i)sk-|github_pat_|gh[pousr]_|xox[abprs]-|akia|asia|aiza|eyj|-----begin"
    r"|authorization|api-key|token|cookie|bearer|=|://"
)
# A string kept under a key like these is a credential whatever it looks like (``{"api_key": "x"}``).
_SECRET_KEY = re.compile(
    r"(?i)api[-_]?key|apikey|secret|passw(?:or)?d|token|authori[sz]ation|credential|cookie"
)
# Both first looks at once, for ASCII text already lowercased (ASCII case folding is plain lowercasing).
_MAYBE_SECRET_LOWER = re.compile(
    _MAYBE_CREDENTIAL.pattern.removeprefix("(?i)") + "|" + _SECRET_KEY.pattern.removeprefix("(?i)")
)

# --- absolute paths (E-05) -------------------------------------------------------------------------------

_PATH_CHARS = r"[^\s\"'`<>|,;(){}\[\]…]"


def _build_path_pattern() -> re.Pattern[str]:
    """Absolute paths, with ``scheme://host`` URLs matched first so the slashes inside them are skipped.

    A path starts after a delimiter (``[`` excluded, so markup such as ``[/b]`` stays text) and does not
    end with sentence punctuation.
    """
    boundary = (
        r"(?:(?<![\w.\-~/%+*@#$&?!^\[])"
        r"|(?<=\\[nrtvfab0])|(?<=\\x[0-9a-fA-F]{2})|(?<=\\u[0-9a-fA-F]{4}))"  # after a repr() escape
    )
    body = rf"{_PATH_CHARS}*(?<![.:!?])"
    return re.compile(
        rf"(?P<file>(?i:\bfile:)/+{body})"
        r"|(?P<url>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://(?!/))"
        rf"|(?P<home>{boundary}~[\w.\-]*/{body})"
        rf"|(?P<drive>{boundary}[A-Za-z]:[\\/]{body})"
        rf"|(?P<unc>{boundary}\\\\{_PATH_CHARS}{body})"
        rf"|(?P<posix>{boundary}/{_PATH_CHARS}{body})"
    )


_PATH_PATTERN = _build_path_pattern()
_PLACEHOLDERS = re.compile(r"\[REDACTED\]|<path>|<frame>")
_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# Cutting inside one of these could leave a prefix that looks like a fresh credential marker.
_UNCUTTABLE = (_PLACEHOLDERS, _HEADER_PATTERN, _QUERY_PATTERN, _USERINFO_PATTERN, _BEARER_PATTERN)


def unsafe_reason(message: str) -> str | None:
    """Why ``message`` may not be shown as a public error message, or ``None`` when it is safe.

    A safe message has at most 512 characters, no line break, no C0/DEL/C1/ESC control, no bidi or
    invisible character, no credential marker (known token prefixes, credential headers, URL userinfo or
    secret query parameters not already ``[REDACTED]``), no absolute path and no stack frame.
    """
    if not isinstance(message, str):
        return "message is not a string"
    if len(message) > MAX_PUBLIC_MESSAGE_LENGTH:
        return f"message is longer than {MAX_PUBLIC_MESSAGE_LENGTH} characters"
    if "\n" in message or "\r" in message:
        return "message contains a line break"
    if _FORBIDDEN_CHARS.search(message):
        return "message contains control, bidi or invisible characters"
    if _TRACEBACK_HEADER in message or _FRAME_PATTERN.search(message):
        return "message contains a stack frame"
    if _MAYBE_CREDENTIAL.search(message) and _redact_credentials(message) != message:
        return "message contains a credential marker"
    if ("/" in message or "\\" in message) and _replace_paths(message, None) != message:
        return "message contains an absolute path"
    return None


def sanitize_public_message(
    message: object,
    *,
    secrets: Iterable[str] = (),
    workspace: str | os.PathLike[str] | None = None,
    limit: int = MAX_PUBLIC_MESSAGE_LENGTH,
) -> str:
    """Turn anything into a one-line public message that ``unsafe_reason`` accepts; never raises.

    In order: a Python traceback keeps only its final ``Type: text`` line; line breaks become spaces and
    control, escape-sequence, bidi and invisible characters are removed; stack frames become ``<frame>``;
    configured ``secrets`` (also URL-encoded and base64), known token prefixes, credential headers and
    URL secrets become ``[REDACTED]``; absolute paths become ``<path>``, or a workspace-relative path when
    inside ``workspace``; last, the text is cut to ``limit`` (at most 512) characters ending with ``…``.
    Exceptions are summarised by ``public_message_from_exception``.
    """
    try:
        forms = _secret_forms((secrets,) if isinstance(secrets, str) else tuple(secrets))
        root = _workspace_root(workspace)
        if isinstance(message, BaseException):
            text = _exception_text(message, forms, root)
        else:
            text = _to_text(message)
        return _settle(text, forms, root, _clamp(limit))
    except Exception:  # totality: a public message must always be produced
        return _WITHHELD


def public_message_from_exception(
    exc: BaseException,
    *,
    secrets: Iterable[str] = (),
    workspace: str | os.PathLike[str] | None = None,
) -> str:
    """``"what failed: sanitised message"`` for ``exc``, on one line, in words; never raises.

    What failed is :func:`exception_label` (``cancelled``, ``MCP call failed``…), never a class name;
    without one the message stands alone, and an exception without a message is an ``unexpected error``.
    Only ``str(exc)`` is read: ``__cause__``, ``__context__`` and tracebacks are never serialised, and
    the ``repr`` of the arguments that ``str`` may produce is sanitised like any other text.
    """
    return sanitize_public_message(exc, secrets=secrets, workspace=workspace)


_LABELS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    ((asyncio.CancelledError, concurrent.futures.CancelledError), "cancelled"),
    (TimeoutError, "timed out"),
    (KeyError, "missing key"),
)
_UNEXPECTED = "unexpected error"


def exception_label(exc: BaseException) -> str | None:
    """What kind of failure ``exc`` is, in a few words (``cancelled``, ``Permission denied``, ``MCP call
    failed``), or ``None`` when its message says it alone.

    A ditto-tui error is named by its ``title``, except one that only reports another (a graph whose
    node failed says which node and why); a few Python exceptions whose text alone would mislead
    (an empty cancellation, a bare key) have a label of their own; any other is told by its message.
    """
    if isinstance(exc, DittoError):
        plain_title = exc.title == DittoError.title or isinstance(exc, GraphExecutionError)
        return None if plain_title else exc.title
    for kinds, label in _LABELS:
        if isinstance(exc, kinds):
            return label
    return None


def safe_error(
    code: str,
    message: object,
    *,
    secrets: Iterable[str] = (),
    retryable: bool | None = None,
) -> InteractionError:
    """An ``InteractionError`` whose message is ``message`` sanitised; an invalid ``code`` raises."""
    # contracts validates messages with unsafe_reason, so it imports this module, not the reverse.
    from ditto_tui.contracts import InteractionError
    from ditto_tui.errors import ValidationError

    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise ValidationError(f"invalid error code {code!r}: expected ^[A-Za-z0-9_.-]{{1,64}}$")
    text = sanitize_public_message(message, secrets=secrets)
    return InteractionError(code=code, message=text, retryable=retryable)


class SecretRedactor:
    """Redacts text and JSON data that are kept rather than shown as an error (the run journal, for one).

    Configured ``secrets`` in every form :func:`sanitize_public_message` knows, private key blocks and
    credential markers become ``[REDACTED]``; nothing else changes: no cut, line breaks and paths stay.

    A form of at least :data:`MIN_SECRET_SUBSTRING_LENGTH` characters is replaced wherever it occurs; a
    shorter one (an API key ``k``, a port) would hit ordinary words and JSON keys, so it is replaced only
    where a whole string value equals it.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms = _secret_forms((secrets,) if isinstance(secrets, str) else tuple(secrets))
        self._forms = tuple(form for form in forms if len(form) >= MIN_SECRET_SUBSTRING_LENGTH)
        self._whole = frozenset(form for form in forms if len(form) < MIN_SECRET_SUBSTRING_LENGTH)
        escaped = {json.dumps(form, ensure_ascii=False)[1:-1] for form in self._forms}
        quoted = {json.dumps(form, ensure_ascii=False) for form in self._whole}
        self._probes = tuple(sorted(set(self._forms) | escaped | quoted))

    def redact(self, text: str) -> str:
        """``text`` with every secret and credential marker replaced by ``[REDACTED]``."""
        if text in self._whole:
            return REDACTED
        return self._redact_text(text)

    def _redact_text(self, text: str) -> str:
        # A replacement can join its neighbours into another secret ("…ED]" + "xyz"): go again, a few
        # times at most, then give up on the string rather than keep a secret.
        for _ in range(_ROUNDS):
            text = _redact_secrets(text, self._forms)
            if _MAYBE_CREDENTIAL.search(text):
                text = _redact_credentials(_PEM_BLOCK.sub(REDACTED, text))
            if not self._forms or _secret_pattern(self._forms).search(text) is None:
                return text
        return REDACTED

    def redact_data(self, value: Any) -> Any:
        """JSON data with every string value redacted, and every nonempty string kept under a key that
        names a credential (``api_key``, ``token``, ``password``…) replaced whole.

        A key is data too: one holding a secret (of :data:`MIN_SECRET_SUBSTRING_LENGTH` characters or
        more) or a credential marker is redacted like a value, numbered when two keys would collide
        (``[REDACTED]#2``); short secrets never touch keys.
        """
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_data(item) for item in value]
        if isinstance(value, dict):
            return self._redact_mapping(value)
        return value

    def redact_fields(self, fields: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
        """A record's fields: their names as they are, the values named in ``keep`` untouched, every
        other value redacted as :meth:`redact_data` does (a journal line keeps its ``kind``, ``run_id``
        and ``seq`` whatever the secrets)."""
        kept = frozenset(keep)
        return {
            name: value if name in kept else self._redact_item(name, value) for name, value in fields.items()
        }

    def _redact_mapping(self, value: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in value.items():
            name = self._redact_text(key)
            if name in result:
                name = _unused_name(name, result)
            result[name] = self._redact_item(key, item)
        return result

    def _redact_item(self, key: str, item: Any) -> Any:
        if isinstance(item, str) and item and _SECRET_KEY.search(key):
            return REDACTED
        return self.redact_data(item)

    def may_redact(self, text: str) -> bool:
        """A cheap first look: False when :meth:`redact_data` leaves unchanged ``text`` and every JSON
        value ``text`` holds encoded (JSON escaping never splits a secret, a marker or a key name)."""
        if any(probe in text for probe in self._probes):
            return True
        if text.isascii():
            return _MAYBE_SECRET_LOWER.search(text.lower()) is not None
        return _MAYBE_CREDENTIAL.search(text) is not None or _SECRET_KEY.search(text) is not None


def _unused_name(name: str, taken: dict[str, Any]) -> str:
    """``name#2``, ``name#3``…: the first not in ``taken`` (two keys redacted alike both stay)."""
    number = 2
    while f"{name}#{number}" in taken:
        number += 1
    return f"{name}#{number}"


# --- the pipeline --------------------------------------------------------------------------------------


def _settle(text: str, forms: tuple[str, ...], root: str | None, limit: int) -> str:
    """Run the pipeline until its output is safe; fall back to a fixed message that is."""
    for _ in range(_ROUNDS):
        text = _pipeline(text, forms, root, limit)
        if _is_public(text, forms):
            return text
    return _WITHHELD if _is_public(_WITHHELD, forms) else ""


def _is_public(text: str, forms: tuple[str, ...]) -> bool:
    return unsafe_reason(text) is None and not any(form in text for form in forms)


def _pipeline(text: str, forms: tuple[str, ...], root: str | None, limit: int) -> str:
    text = _last_exception_line(text)
    text = _single_line(_cap(text))
    text = _FRAME_PATTERN.sub(_FRAME, text)
    text = _redact_secrets(text, forms)
    text = _redact_credentials(text)
    text = _replace_paths(text, root)
    return _truncate(text, limit)


def _to_text(message: object) -> str:
    if isinstance(message, str):
        return str.__str__(message)
    try:
        return str(message)
    except Exception:  # a hostile __str__ must not break error reporting
        return "<unprintable message>"


def _exception_text(exc: BaseException, forms: tuple[str, ...], root: str | None) -> str:
    """``label: message`` with the message sanitised on its own, so a traceback in it cannot drop the
    label; a message that opens with the label (``cancelled by the user``) is not prefixed twice."""
    label = exception_label(exc)
    detail = _settle(_exception_detail(exc, forms, root), forms, root, MAX_PUBLIC_MESSAGE_LENGTH)
    if label is None:
        return detail or _UNEXPECTED
    if not detail:
        return label
    return detail if detail.casefold().startswith(label.casefold()) else f"{label}: {detail}"


def _exception_detail(exc: BaseException, forms: tuple[str, ...], root: str | None) -> str:
    """``str(exc)``; when that is the ``repr`` of several arguments, each text argument is sanitised first."""
    if type(exc).__str__ is not BaseException.__str__ or len(exc.args) < 2:
        return _to_text(exc)
    args = tuple(_settle(arg, forms, root, 256) if isinstance(arg, str) else arg for arg in exc.args)
    return _to_text(args)


def _clamp(limit: object) -> int:
    if not isinstance(limit, int):
        return MAX_PUBLIC_MESSAGE_LENGTH
    return max(0, min(limit, MAX_PUBLIC_MESSAGE_LENGTH))


def _cap(text: str) -> str:
    """Bound the working text; back off to a space so no partial secret sits at the cut."""
    if len(text) <= _WORKING_LIMIT:
        return text
    head = text[:_WORKING_LIMIT]
    space = head.rfind(" ", _WORKING_LIMIT - 1024)
    return head[:space] if space > 0 else head


def _last_exception_line(text: str) -> str:
    """From a traceback keep the final exception's ``Type: text`` line (E-06)."""
    at = text.rfind(_TRACEBACK_HEADER)
    if at < 0:
        return text
    tail = [line for line in text[at + len(_TRACEBACK_HEADER) :].splitlines() if line.strip()]
    flush = [line for line in tail if not line[0].isspace()]
    if flush:
        return flush[0]
    return tail[-1].strip().lstrip("|+- ") if tail else ""


def _single_line(text: str) -> str:
    text = _LINE_BREAKS.sub(" ", text)
    text = _ESCAPE_SEQUENCES.sub("", text)
    return _FORBIDDEN_CHARS.sub("", text).strip()


def _redact_secrets(text: str, forms: tuple[str, ...]) -> str:
    if not forms:
        return text
    return _secret_pattern(forms).sub(REDACTED, text)


def _redact_credentials(text: str) -> str:
    text = _TOKEN_PATTERN.sub(REDACTED, text)
    text = _HEADER_PATTERN.sub(_redact_header, text)
    text = _BEARER_PATTERN.sub(rf"\1{REDACTED}", text)
    text = _USERINFO_PATTERN.sub(rf"\1{REDACTED}@", text)
    return _QUERY_PATTERN.sub(rf"\1\2{REDACTED}", text)


def _redact_header(match: re.Match[str]) -> str:
    name, separator, scheme = match.group(1), match.group(2), match.group(3) or ""
    return f"{name}{separator}{scheme}{REDACTED}"


def _replace_paths(text: str, root: str | None) -> str:
    return _PATH_PATTERN.sub(_path_replacer(root), text)


def _path_replacer(root: str | None) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        if match.lastgroup == "url":
            return match.group()
        if root is not None and match.lastgroup == "posix":
            return _relative(match.group(), root)
        return _PATH

    return replace


def _relative(path: str, root: str) -> str:
    normal = os.path.normpath(path)
    if normal == root:
        return "."
    if normal.startswith(root.rstrip("/") + "/"):
        return normal[len(root.rstrip("/")) + 1 :]
    return _PATH


def _truncate(text: str, limit: int) -> str:
    """Cut to ``limit`` characters ending with ``…``, never inside a placeholder or credential match."""
    if len(text) <= limit:
        return text
    if limit == 0:
        return ""
    cut, previous = limit - 1, -1
    while cut != previous:
        previous = cut
        for pattern in _UNCUTTABLE:
            cut = _before_spans(pattern, text, cut)
    return text[:cut].rstrip() + _ELLIPSIS


def _before_spans(pattern: re.Pattern[str], text: str, cut: int) -> int:
    for match in pattern.finditer(text, 0, cut + 256):
        if match.start() < cut < match.end():
            return match.start()
    return cut


# --- secrets and workspace -------------------------------------------------------------------------------


def _secret_forms(secrets: tuple[object, ...]) -> tuple[str, ...]:
    """Every configured secret plus its single-line, URL-encoded and base64 forms, longest first."""
    forms: set[str] = set()
    for secret in secrets:
        if isinstance(secret, str) and secret:
            forms.update(_forms_of(secret))
    forms.discard("")
    return tuple(sorted(forms, key=lambda form: (-len(form), form)))


def _forms_of(secret: str) -> set[str]:
    raw = secret.encode("utf-8", "surrogatepass")
    quoted = {urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")}
    quoted |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), form) for form in quoted}
    encoded = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    encoded |= {form.rstrip("=") for form in encoded}
    return {secret, _single_line(secret)} | quoted | encoded


@functools.lru_cache(maxsize=64)
def _secret_pattern(forms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(form) for form in forms))


def _workspace_root(workspace: str | os.PathLike[str] | None) -> str | None:
    if workspace is None:
        return None
    root = os.path.normpath(os.fspath(workspace))
    return root if os.path.isabs(root) and root != "/" else None
