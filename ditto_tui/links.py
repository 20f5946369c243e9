"""Decision links: one signed address per waiting request, ``/decide/REQUEST_ID?exp=…&sig=…``.

The signature is HMAC-SHA256, under a key derived from the user's durable-run key (never the key
itself), of the request's id and the link's expiry: the request's own deadline (``never`` for a request
that waits for ever). A link names one request and cannot be turned into another's; it stops working at
its expiry, and once the request is answered (by the link or anywhere else) there is nothing left for it
to decide, so a second use decides nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import time
import urllib.parse
from dataclasses import dataclass

NEVER = "never"
_PURPOSE = b"ditto-tui decision link v1"


def link_key(user_key: bytes) -> bytes:
    """The key links are signed with: derived from ``user_key`` for this purpose alone."""
    return hmac.new(user_key, _PURPOSE, hashlib.sha256).digest()


def expiry(expires_at: float | None) -> str:
    """A request's deadline as a link carries it: whole seconds since the epoch (rounded up), or never."""
    return NEVER if expires_at is None else str(math.ceil(expires_at))


def signature(key: bytes, request_id: str, expires: str) -> str:
    """The link's signature for ``request_id`` expiring at ``expires``."""
    message = f"{request_id}\n{expires}".encode()
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def decision_path(key: bytes, request_id: str, expires_at: float | None) -> str:
    """The path (with its query) of ``request_id``'s decision page."""
    expires = expiry(expires_at)
    query = urllib.parse.urlencode({"exp": expires, "sig": signature(key, request_id, expires)})
    return f"/decide/{urllib.parse.quote(request_id, safe='')}?{query}"


@dataclass(frozen=True)
class LinkCheck:
    """Whether a link may be used: ``ok``, else ``status`` and ``reason`` for the page refusing it."""

    ok: bool
    status: int = 200
    reason: str = ""


def check(
    key: bytes, request_id: str, expires: str | None, given: str | None, now: float | None = None
) -> LinkCheck:
    """Check a link's ``exp`` and ``sig`` for ``request_id``, in constant time for the signature."""
    if not expires or not given:
        return LinkCheck(False, 403, "This link is incomplete: open the whole address you were sent.")
    expected = signature(key, request_id, expires)
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return LinkCheck(False, 403, "This link is not valid for this request.")
    if expires != NEVER:
        try:
            deadline = int(expires)
        except ValueError:
            return LinkCheck(False, 403, "This link is not valid for this request.")
        if (time.time() if now is None else now) > deadline:
            return LinkCheck(False, 410, "This link has expired with its request.")
    return LinkCheck(True)
