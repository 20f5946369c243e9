"""An OAuth-protected MCP server (MCPServer with the SDK's authorization server) on streamable HTTP.

    python oauth_server.py --port PORT [--expires SECONDS] [--refreshed-expires SECONDS]
                           [--scopes "mcp read"] [--no-refresh] [--deny] [--introspection-client ID:SECRET]

One process is both the resource server (``/mcp``, protected resource metadata under
``/.well-known/oauth-protected-resource/mcp``) and an in-memory authorization server on the same origin:
metadata, dynamic client registration (``/register``), ``/authorize`` that redirects at once to the
client's ``redirect_uri`` with a code and the state (no login page; ``--deny`` redirects with
``error=access_denied`` instead), ``/token`` where the SDK checks the PKCE verifier, and ``/introspect``
(RFC 7662) for another resource server, a token's ``aud`` the resource it was asked for. Access tokens
last ``--expires`` seconds (those issued for a refresh token ``--refreshed-expires``, by default the
same) and come with a refresh token (rotated on each refresh) unless
``--no-refresh``. Tools: ``whoami`` (the client id of the caller's token) and ``echo``.

Everything it does is written to stderr, one line each (``registered``, ``authorized``, ``issued
grant=...``, ``refused``, ``called whoami``), with the secrets it minted (``client_secret=``, ``code=``,
``access_token=``, ``refresh_token=``), so a test can count the grants and check that none of the secrets
shows up anywhere else.
"""

from __future__ import annotations

import argparse
import base64
import math
import secrets
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

CODE_SECONDS = 300


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class MemoryAuthorizationServer(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """The SDK's ``OAuthAuthorizationServerProvider``, in memory, signing everyone in at once."""

    def __init__(self, *, expires: int, refreshed_expires: int, refresh: bool, deny: bool) -> None:
        self.expires = expires
        self.refreshed_expires = refreshed_expires
        self.refresh = refresh
        self.deny = deny
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        # The exact moment each access token dies: ``AccessToken.expires_at`` is whole seconds, and a
        # truncated one would make a one-second token live anywhere from no time to a second.
        self.deadlines: dict[str, float] = {}
        self.refreshes: dict[str, RefreshToken] = {}
        self.resources: dict[str, str | None] = {}  # each access or refresh token's RFC 8707 resource

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        secret = client_info.client_secret
        note(f"registered client_id={client_info.client_id} client_secret={secret}")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        redirect = str(params.redirect_uri)
        if self.deny:
            note(f"refused client_id={client.client_id}")
            return construct_redirect_uri(redirect, error="access_denied", state=params.state)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + CODE_SECONDS,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        note(f"authorized client_id={client.client_id} scopes={' '.join(params.scopes or [])} code={code}")
        return construct_redirect_uri(redirect, code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(
            "authorization_code", client.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refreshes.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refreshes[refresh_token.token]
        resource = self.resources.pop(refresh_token.token, None)
        return self._issue("refresh_token", client.client_id, scopes, resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is not None and self.deadlines.get(token, float("inf")) < time.time():
            note(f"expired client_id={access.client_id}")
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.deadlines.pop(token.token, None)
        self.refreshes.pop(token.token, None)
        note(f"revoked client_id={token.client_id}")

    def _issue(self, grant: str, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        self.resources[access] = resource
        lifetime = self.refreshed_expires if grant == "refresh_token" else self.expires
        deadline = time.time() + lifetime
        self.deadlines[access] = deadline
        expires_at = math.ceil(deadline)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at
        )
        refresh = secrets.token_urlsafe(32) if self.refresh else None
        if refresh is not None:
            self.refreshes[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
            self.resources[refresh] = resource
        note(
            f"issued grant={grant} client_id={client_id} resource={resource} access_token={access} "
            f"refresh_token={refresh}"
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=lifetime,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )


def build(args: argparse.Namespace) -> MCPServer:
    origin = f"http://127.0.0.1:{args.port}"
    scopes = args.scopes.split()
    provider = MemoryAuthorizationServer(
        expires=args.expires,
        refreshed_expires=args.expires if args.refreshed_expires is None else args.refreshed_expires,
        refresh=not args.no_refresh,
        deny=args.deny,
    )
    auth = AuthSettings(
        issuer_url=origin,
        resource_server_url=f"{origin}/mcp",
        validate_token_resource=False,
        required_scopes=scopes,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=scopes, default_scopes=scopes
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    server = MCPServer("oauth", log_level="ERROR", auth_server_provider=provider, auth=auth)

    @server.custom_route("/introspect", methods=["POST"])  # type: ignore[untyped-decorator]
    async def introspect(request: Request) -> Response:
        """RFC 7662 for a resource server of this authorization server (``--introspection-client``: it
        must authenticate with that client's credentials, HTTP basic)."""
        if args.introspection_client is not None:
            expected = "Basic " + base64.b64encode(args.introspection_client.encode()).decode()
            if request.headers.get("authorization") != expected:
                note("introspection refused: not the resource server")
                return JSONResponse({"error": "invalid_client"}, status_code=401)
        token = str((await request.form()).get("token", ""))
        access = await provider.load_access_token(token)
        if access is None:
            note("introspected active=false")
            return JSONResponse({"active": False})
        note(f"introspected active=true client_id={access.client_id}")
        answer = {
            "active": True,
            "client_id": access.client_id,
            "scope": " ".join(access.scopes),
            "exp": access.expires_at,
            "iss": origin,
            "aud": provider.resources.get(token),
        }
        return JSONResponse({key: value for key, value in answer.items() if value is not None})

    @server.tool()
    def whoami() -> str:
        """The client id the caller's access token was issued to."""
        token = get_access_token()
        note("called whoami")
        return token.client_id if token is not None else "nobody"

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        note("called echo")
        return text

    return server


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, required=True, help="listen on 127.0.0.1:PORT")
    parser.add_argument("--expires", type=int, default=3600, help="access token lifetime in seconds")
    parser.add_argument(
        "--refreshed-expires", type=int, help="lifetime of refreshed tokens (default --expires)"
    )
    parser.add_argument("--scopes", default="mcp", help="the scopes it requires (space-separated)")
    parser.add_argument("--no-refresh", action="store_true", help="issue no refresh tokens")
    parser.add_argument("--deny", action="store_true", help="/authorize refuses (error=access_denied)")
    parser.add_argument(
        "--introspection-client", metavar="ID:SECRET", help="/introspect asks for these credentials"
    )
    args = parser.parse_args()
    build(args).run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
