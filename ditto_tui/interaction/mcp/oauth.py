"""OAuth 2.1 sign-in for HTTP MCP servers, on the SDK's own client auth (``mcp.client.auth``).

The SDK does the protocol: protected-resource and authorization-server metadata discovery (with the
2025-03-26 fallbacks), dynamic client registration, client ID metadata documents, PKCE S256, scope
selection and step-up, the token endpoint's auth methods and refresh. This module adds what it leaves to
the application:

- :class:`TokenStore`: tokens and client registrations on disk, one private file per server (mode 0600,
  never through a link, never inside the workspace), kept per issuer, with the absolute expiry so a token
  loaded after a restart is refreshed when it is due instead of sent stale;
- :class:`SignInProvider`: the SDK's provider bound to that store and to an ``authorize`` callback (the
  person's browser), refusing an authorization server whose endpoints are on another origin than its
  issuer, asking at most ``MAX_SIGN_INS`` times per connection, and adding the configured scopes;
- :func:`sign_in_problem`: one line for a failed sign-in that never carries a token, a code, a secret or
  a server's response body.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import stat
import time
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pydantic
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ditto_tui.config import McpAuthConfig
from ditto_tui.errors import McpError
from ditto_tui.home import StateDirError, config_dir, write_private
from ditto_tui.interaction.mcp.loopback import browser_authorize

__all__ = [
    "MAX_SIGN_INS",
    "SIGN_IN_REQUIRED",
    "Authorize",
    "SignInProvider",
    "SignInRequired",
    "TokenStore",
    "default_token_dir",
    "refuse_sign_in",
    "sign_in_problem",
]

SIGN_IN_REQUIRED = "MCP_SIGN_IN_REQUIRED"

MAX_SIGN_INS = 3
"""The most times one connection sends the person to sign in (a server that keeps asking for more scope
is refused after that)."""

Authorize = Callable[..., Awaitable[str]]
"""``async (server, authorization_url) -> redirected_url``, or the same without ``server``."""

# The SDK logs a failed flow with its traceback (response bodies included) on this logger: the reason is
# reported as one sanitised line instead, and nothing reaches a terminal the TUI draws on.
_SDK_LOGGER = logging.getLogger("mcp.client.auth")
_SDK_LOGGER.addHandler(logging.NullHandler())
_SDK_LOGGER.propagate = False

_FILE_VERSION = 1


class SignInRequired(McpError):
    """A server needs the person to sign in, and no one is there to ask (a headless run)."""

    title = "Sign-in needed"

    def __init__(self, server: str) -> None:
        super().__init__(
            f"MCP server {server!r} needs you to sign in: run `ditto-tui mcp login {server}`",
            code=SIGN_IN_REQUIRED,
        )
        self.server = server


async def refuse_sign_in(server: str, authorization_url: str) -> str:
    """The ``authorize`` of a run with no person to ask: the server needs a sign-in first."""
    raise SignInRequired(server)


def default_token_dir() -> Path:
    """Where tokens are kept: the user config directory's ``oauth/`` (never a workspace)."""
    return config_dir() / "oauth"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


# -- the token store ----------------------------------------------------------------------------------


def _entry(data: dict[str, Any], issuer: str | None) -> dict[str, Any]:
    """What a token file keeps for ``issuer`` (``{}`` when nothing, or nothing well-formed)."""
    issuers = data.get("issuers")
    entry = issuers.get(issuer or "") if isinstance(issuers, dict) else None
    return entry if isinstance(entry, dict) else {}


def _last(data: dict[str, Any]) -> dict[str, Any]:
    """What a token file keeps for the issuer used last."""
    return _entry(data, data.get("last"))


class TokenStore:
    """One private JSON file per server under ``directory``: per issuer, the tokens (with their absolute
    expiry) and the client registration; and which issuer was used last."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, server: str) -> Path:
        """The file of ``server`` (its name quoted, so any server name is one safe file name)."""
        return self.directory / f"{urllib.parse.quote(server, safe='')}.json"

    def load(self, server: str) -> dict[str, Any]:
        """What is kept for ``server`` (empty when nothing is).

        A file that is a link, not a regular file, not the user's own or readable by others is refused
        (``StateDirError``): tokens are never read from a file someone else could have planted or read.
        """
        path = self.path(server)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            if os.path.islink(path):
                raise StateDirError(f"the token file {str(path)!r} is a symbolic link; refusing it") from None
            raise StateDirError(f"cannot read the token file {str(path)!r}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise StateDirError(f"the token file {str(path)!r} is not a regular file")
            if info.st_uid != os.getuid() or info.st_mode & 0o077:
                raise StateDirError(
                    f"the token file {str(path)!r} can be read by others "
                    f"(mode {stat.S_IMODE(info.st_mode):o}); refusing it: remove it and sign in again"
                )
            try:
                data = json.loads(file.read())
            except (ValueError, UnicodeDecodeError):
                return {}
        return data if isinstance(data, dict) and data.get("version") == _FILE_VERSION else {}

    def save(self, server: str, data: dict[str, Any]) -> None:
        """Replace what is kept for ``server`` (atomically, mode 0600, never through a link)."""
        data = {**data, "version": _FILE_VERSION}
        write_private(self.path(server), json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))

    def forget(self, server: str) -> bool:
        """Delete what is kept for ``server``; whether there was anything."""
        try:
            os.unlink(self.path(server))
        except FileNotFoundError:
            return False
        return True

    def redirect_uri(self, server: str) -> str | None:
        """The loopback redirect URI the kept client registration of ``server`` was made with (an
        authorization server may insist on that exact one), if any."""
        try:
            data = self.load(server)
        except StateDirError:
            return None
        client = _last(data).get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        uri = uris[0] if isinstance(uris, list) and uris and isinstance(uris[0], str) else None
        return uri if uri is not None and uri.startswith("http://127.0.0.1:") else None

    def has_tokens(self, server: str) -> bool:
        """Whether an access token is kept for ``server`` (it may have expired: it can be refreshed)."""
        try:
            data = self.load(server)
        except StateDirError:
            return False
        return bool(_last(data).get("tokens"))


class ServerTokens:
    """The SDK's ``TokenStorage`` for one server: the store's file, the entry of the current issuer."""

    def __init__(
        self,
        store: TokenStore,
        server: str,
        issuer: Callable[[], str],
        registered: OAuthClientInformationFull | None = None,
    ) -> None:
        self.store = store
        self.server = server
        self.issuer = issuer
        self.registered = registered

    def _update(self, **fields: Any) -> None:
        data = self.store.load(self.server)
        issuer = self.issuer()
        kept = data.get("issuers")
        issuers: dict[str, Any] = dict(kept) if isinstance(kept, dict) else {}
        issuers[issuer] = {**_entry(data, issuer), **fields}
        self.store.save(self.server, {"issuers": issuers, "last": issuer})

    def expires_at(self) -> float | None:
        """The absolute expiry of the kept access token (seconds since the epoch), when known."""
        data = self.store.load(self.server)
        value = _last(data).get("expiresAt")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        data = self.store.load(self.server)
        tokens = _last(data).get("tokens")
        try:
            return OAuthToken.model_validate(tokens) if tokens else None
        except pydantic.ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in else None
        self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expiresAt=expires)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.registered is not None:
            return self.registered
        data = self.store.load(self.server)
        client = _last(data).get("client")
        try:
            return OAuthClientInformationFull.model_validate(client) if client else None
        except pydantic.ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.registered is None:
            self._update(client=client_info.model_dump(mode="json", exclude_none=True))


# -- the provider --------------------------------------------------------------------------------------


class _SameOriginIssuer(str):
    """The 2025-03-26 expected issuer (the MCP server's origin), equal to any issuer on that origin.

    That revision of the specification put the authorization server at the MCP server's origin and had no
    issuer check; servers written to it (and the conformance suite's own mock) name a path under it.
    """

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and _origin(self) == _origin(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


class SignInProvider(OAuthClientProvider):
    """The SDK's OAuth provider for one server, with ditto's store, ``authorize`` and checks."""

    def __init__(
        self,
        server: str,
        url: str,
        *,
        store: TokenStore,
        authorize: Authorize | None,
        redirect_uri: str,
        auth: McpAuthConfig | None = None,
        on_sign_in: Callable[[bool], object] | None = None,
    ) -> None:
        self.server = server
        self.auth = auth
        self._authorize: Authorize = authorize or browser_authorize
        self._redirected: str | None = None
        self._on_sign_in = on_sign_in
        self.sign_ins = 0
        registered = None
        if auth is not None and auth.client_id:
            secret = auth.client_secret
            registered = OAuthClientInformationFull(
                client_id=auth.client_id,
                client_secret=secret,
                redirect_uris=[redirect_uri],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            )
        self.tokens = ServerTokens(store, server, self._issuer, registered)
        metadata = OAuthClientMetadata(
            client_name="ditto-tui",
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(auth.scopes) if auth is not None and auth.scopes else None,
        )
        super().__init__(
            url,
            metadata,
            self.tokens,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=auth.client_metadata_url if auth is not None else None,
        )

    def _issuer(self) -> str:
        return self.context.auth_server_url or self._legacy_issuer()

    def _legacy_issuer(self) -> str:
        parts = urllib.parse.urlsplit(self.context.server_url)
        return f"{parts.scheme}://{parts.netloc}"

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self.tokens.expires_at()

    def _expected_issuer(self) -> str:
        issuer = super()._expected_issuer()
        return issuer if self.context.auth_server_url else _SameOriginIssuer(issuer)

    def _allowed_origin(self) -> tuple[str, str, int | None]:
        """The origin every endpoint of the sign-in must be on: the authorization server's issuer."""
        metadata = self.context.oauth_metadata
        return _origin(str(metadata.issuer) if metadata is not None else self._legacy_issuer())

    def _check_endpoint(self, url: str, what: str) -> None:
        if _origin(url) != self._allowed_origin():
            message = f"refused: the authorization server's {what} is on another origin than its issuer"
            raise OAuthFlowError(message)

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, with every registration and token request held to the issuer's origin."""
        flow = super()._auth_flow(request)
        response: httpx2.Response | None = None
        refreshed = False
        try:
            while True:
                outgoing = await flow.asend(response)  # type: ignore[arg-type]
                if outgoing is not request and outgoing.method == "POST":
                    self._check_endpoint(str(outgoing.url), "registration or token endpoint")
                response = yield outgoing
                if outgoing is request and response.status_code == 401 and not refreshed:
                    # A token that expired on the way (clocks differ) is refreshed before the person is
                    # sent to sign in again: the SDK goes straight to a new authorization on a 401.
                    refreshed = True
                    if self.context.can_refresh_token():
                        refresh = await self._refresh_token()
                        self._check_endpoint(str(refresh.url), "token endpoint")
                        if await self._handle_refresh_response((yield refresh)):
                            self._add_auth_header(request)
                            response = yield request
        except StopAsyncIteration:
            return
        finally:
            # Closed here, in this task: left to the garbage collector, the SDK's flow would release its
            # lock from another task ("The current task is not holding this lock").
            await flow.aclose()

    def _add_scopes(self) -> None:
        configured = self.auth.scopes if self.auth is not None else ()
        if configured:
            chosen = (self.context.client_metadata.scope or "").split()
            self.context.client_metadata.scope = " ".join(dict.fromkeys([*chosen, *configured]))

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        self._add_scopes()
        return await super()._perform_authorization_code_grant()

    async def _redirect(self, authorization_url: str) -> None:
        self._check_endpoint(authorization_url, "authorization endpoint")
        self.sign_ins += 1
        if self.sign_ins > MAX_SIGN_INS:
            raise OAuthFlowError(f"stopped after {MAX_SIGN_INS} sign-ins: the server keeps asking for more")
        if self._on_sign_in is not None:
            self._on_sign_in(True)
        try:
            if len(inspect.signature(self._authorize).parameters) >= 2:
                self._redirected = await self._authorize(self.server, authorization_url)
            else:
                self._redirected = await self._authorize(authorization_url)
        finally:
            if self._on_sign_in is not None:
                self._on_sign_in(False)

    async def _callback(self) -> AuthorizationCodeResult:
        redirected, self._redirected = self._redirected, None
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(redirected or "").query)
        if "error" in query:
            raise OAuthFlowError("the authorization server refused the sign-in")
        code = (query.get("code") or [""])[0]
        state, issuer = query.get("state"), query.get("iss")
        return AuthorizationCodeResult(
            code=code, state=state[0] if state else None, iss=issuer[0] if issuer else None
        )


# -- what a failed sign-in says -------------------------------------------------------------------------

_SAFE_FLOW_MESSAGES = (
    "refused: ",
    "stopped after ",
    "the authorization server refused the sign-in",
    "Protected resource ",
    "Authorization server metadata issuer mismatch",
    "Protected resource metadata request failed",
)


def sign_in_problem(error: BaseException) -> str | None:
    """One line for a sign-in that failed (``None`` when ``error`` is not one): the SDK's own words only
    where they carry no token, code, state or response body."""
    if isinstance(error, SignInRequired):
        return error.message
    if isinstance(error, OAuthRegistrationError):
        return "sign-in failed: the authorization server refused to register ditto-tui as a client"
    if isinstance(error, OAuthTokenError):
        return "sign-in failed: the authorization server refused the token request"
    if isinstance(error, OAuthFlowError):
        message = str(error)
        if message.startswith(_SAFE_FLOW_MESSAGES):
            return f"sign-in failed: {message}"
        return "sign-in failed: the authorization server's answer could not be used"
    return None
