"""OAuth for the gateway's HTTP door: a resource server whose tokens an authorization server vouches for.

With ``mcp.gateway.oauth`` in the config, ``mcp serve --http`` prints no token: it serves its protected
resource metadata (RFC 9728, the SDK's routes), so a client that gets a 401 learns where to sign in, and
it asks the authorization server's introspection endpoint (RFC 7662) about each access token it has not
seen yet. A token is let in only when the answer says it is an active, unexpired access token, of no
other issuer than the configured one, naming a client or a subject, and issued for this gateway's URL
(its audience, RFC 8707); then only with every required scope (else 403, the SDK's check). Anything else
(a refusal, an error, a slow or oversized answer) lets nothing in. An answer is kept for a minute at
most (never past the token's expiry), so a session's requests do not each cost a round trip.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
from collections import OrderedDict
from typing import Any

import httpx

from ditto_tui.config import GatewayOAuthConfig

logger = logging.getLogger(__name__)

INTROSPECTION_SECONDS = 5.0
"""How long one introspection may take before the token is refused."""
KEPT_SECONDS = 60.0
"""How long an answer is trusted (never past the token's own expiry)."""
MAX_ANSWER_BYTES = 65_536
_KEPT_TOKENS = 1_000


class IntrospectedTokens:
    """The SDK's ``TokenVerifier`` over the introspection endpoint of ``settings`` for ``resource`` (the
    gateway's URL, which a token's ``aud`` must name)."""

    def __init__(self, settings: GatewayOAuthConfig, resource: str) -> None:
        self.settings, self.resource = settings, resource
        self._kept: OrderedDict[bytes, tuple[Any, float]] = OrderedDict()
        self._http: httpx.AsyncClient | None = None

    async def verify_token(self, token: str) -> Any:
        key = hashlib.sha256(token.encode()).digest()  # the token itself is never kept as a key
        now = time.time()
        kept = self._kept.get(key)
        if kept is not None:
            if kept[1] > now:
                return kept[0]
            del self._kept[key]
        fields = await self._introspect(token)
        access = None if fields is None else self._access(token, fields, now)
        if access is not None:
            until = now + KEPT_SECONDS
            if access.expires_at is not None:
                until = min(until, float(access.expires_at))
            self._kept[key] = (access, until)
            while len(self._kept) > _KEPT_TOKENS:
                self._kept.popitem(last=False)
        return access

    async def _introspect(self, token: str) -> dict[str, Any] | None:
        settings = self.settings
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=INTROSPECTION_SECONDS, follow_redirects=False)
        auth = None
        if settings.client_id is not None:
            auth = httpx.BasicAuth(settings.client_id, settings.client_secret or "")
        try:
            async with (
                asyncio.timeout(INTROSPECTION_SECONDS),  # in all: a server dripping bytes is cut off
                self._http.stream(
                    "POST",
                    settings.introspection_endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    headers={"Accept": "application/json"},
                    auth=auth,
                ) as response,
            ):
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        logger.warning("token introspection: the answer is over %d bytes", MAX_ANSWER_BYTES)
                        return None
        except (httpx.HTTPError, TimeoutError) as exc:
            logger.warning("token introspection failed: %s", type(exc).__name__)
            return None
        if response.status_code != 200:
            logger.warning("token introspection answered HTTP %d", response.status_code)
            return None
        try:
            fields = json.loads(body)
        except ValueError:
            logger.warning("token introspection answered no JSON")
            return None
        return fields if isinstance(fields, dict) else None

    def _access(self, token: str, fields: dict[str, Any], now: float) -> Any:
        """The SDK's ``AccessToken`` for an introspection answer that lets the token in, else None."""
        from mcp.server.auth.provider import AccessToken

        if fields.get("active") is not True:
            return None
        if str(fields.get("token_type", "access_token")).lower() not in ("access_token", "bearer"):
            return None  # a refresh token (or another kind) is no access token, whatever its audience
        expires = fields.get("exp")
        if expires is not None and (
            isinstance(expires, bool)
            or not isinstance(expires, int | float)
            or not math.isfinite(expires)
            or expires <= now
        ):
            return None
        issuer = fields.get("iss")  # optional in RFC 7662; when said, it must be ours
        if issuer is not None and str(issuer).rstrip("/") != self.settings.issuer.rstrip("/"):
            logger.warning("token introspection: a token of another issuer was refused")
            return None
        audience = fields.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.resource not in audiences:
            return None  # issued for another resource (or for none named): not for this gateway
        scope = fields.get("scope")
        scopes = scope.split() if isinstance(scope, str) else []  # the SDK's middleware checks them (403)
        client_id = fields.get("client_id")
        client_id = client_id if isinstance(client_id, str) and client_id else None
        subject = fields.get("sub")
        subject = subject if isinstance(subject, str) and subject else None
        if client_id is None and subject is None:
            return None  # nobody to tell its sessions from another token's
        return AccessToken(
            token=token,
            client_id=client_id or "",
            scopes=scopes,
            expires_at=int(expires) if expires is not None else None,
            resource=self.resource,
            subject=subject,
            claims={"iss": self.settings.issuer},  # who vouched: part of whose sessions these are
        )

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
