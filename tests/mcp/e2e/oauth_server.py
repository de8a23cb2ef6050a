"""A protected MCP server that is also its own OAuth authorization server, built with the mcp
SDK's server-side auth support (MCPServer(auth=..., auth_server_provider=...)): it answers an
unauthenticated request 401 with its protected-resource metadata, serves authorization-server
metadata, registers clients dynamically, checks PKCE (the SDK's token handler), issues
short-lived access tokens and refresh tokens, and refreshes them.

The authorization step approves at once (no login page): a "browser" that follows the sign-in
URL is sent straight back to the client's redirect URI with a code. `POST /test/revoke-all`
forgets every token (a revoked sign-in); `POST /test/expire-all` ends every access token's
lifetime now; `GET /test/counts` says how many registrations, code
exchanges and refreshes happened. Run as `python oauth_server.py PORT [ACCESS_TOKEN_SECONDS]`.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import Response

PORT = int(sys.argv[1])
LIFETIME = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
BASE = f"http://127.0.0.1:{PORT}"
COUNTS = {"registered": 0, "codes": 0, "refreshed": 0, "calls": 0}


class Provider:
    """Everything in memory: clients, codes, tokens."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        COUNTS["registered"] += 1
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id or "", code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + LIFETIME,
                                          resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=LIFETIME,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        COUNTS["codes"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id or "", authorization_code.scopes,
                           authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        COUNTS["refreshed"] += 1
        self.refresh.pop(refresh_token.token, None)  # rotated
        return self._issue(client.client_id or "", scopes or refresh_token.scopes,
                           refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
server = MCPServer(
    "protected", auth_server_provider=provider,
    auth=AuthSettings(issuer_url=BASE, resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
                      client_registration_options=ClientRegistrationOptions(enabled=True),
                      revocation_options=RevocationOptions(enabled=True)))


@server.tool()
def secret_echo(text: str) -> str:
    """Echo, for signed-in clients only."""
    COUNTS["calls"] += 1
    return text


@server.custom_route("/test/revoke-all", methods=["POST"])
async def revoke_all(request: Request) -> Response:
    provider.access.clear()
    provider.refresh.clear()
    return Response("revoked\n")


@server.custom_route("/test/expire-all", methods=["POST"])
async def expire_all(request: Request) -> Response:
    """Every access token issued so far has expired (its lifetime is over, without a test
    waiting that long on a clock); refresh tokens still work."""
    for token in provider.access.values():
        token.expires_at = int(time.time()) - 1
    return Response("expired\n")


@server.custom_route("/test/counts", methods=["GET"])
async def counts(request: Request) -> Response:
    return Response(json.dumps(COUNTS), media_type="application/json")


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
