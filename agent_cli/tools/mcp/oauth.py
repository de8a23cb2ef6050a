"""OAuth sign-in for remote MCP servers: the authorization-code flow with PKCE and dynamic
client registration that the MCP authorization spec describes, done by the mcp SDK's client
OAuth support (`OAuthClientProvider`: the 401, the protected-resource and authorization-server
discovery, registration, PKCE, the token and its refresh).

What agent-cli adds is where things live and who sees them:
- tokens and the registered client are one JSON file per server,
  `AGENT_CLI_HOME/mcp-oauth/NAME.json`, 0600 in a 0700 folder (private_files), inside
  agent-cli's own state, which the sandbox keeps every confined process out of;
- they go out only as the SDK's Authorization header to that server: never in a child's
  environment or command line, never printed, never in a log (the sign-in URL holds no secret;
  the code comes back to a loopback listener and goes straight to the token request);
- a session never opens a browser: a server whose sign-in is missing or was revoked fails to
  start with the one line `agent-cli mcp login NAME`; only `login` signs in interactively.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent_cli.tools.mcp.transport import StartRefused

LOGIN_WAIT_S = 300.0
"""How long `mcp login` waits for the browser to come back to the loopback listener."""
NO_LOGIN = ("it asks for a sign-in (OAuth){why}: run `agent-cli mcp login {name}` once; the "
            "session never opens a browser itself")


def token_file(name: str) -> Path:
    """The one file that holds a server's tokens and registered client."""
    from agent_cli.config import home
    from agent_cli.tools.mcp.adapt import NAME_OK

    return home() / "mcp-oauth" / f"{NAME_OK.sub('_', name)}.json"


def signed_in(name: str) -> bool:
    return token_file(name).is_file()


class FileTokenStorage:
    """The SDK's TokenStorage over `token_file(name)` (0600)."""

    def __init__(self, name: str) -> None:
        self.path = token_file(name)

    def _read(self) -> dict[str, Any]:
        from agent_cli.private_files import open_private

        if not self.path.is_file():
            return {}
        try:
            with os.fdopen(open_private(self.path, os.O_RDONLY), "r", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        from agent_cli.private_files import open_private, private_dir

        private_dir(self.path.parent)
        with os.fdopen(open_private(self.path, os.O_WRONLY | os.O_TRUNC), "w",
                       encoding="utf-8") as f:
            json.dump(data, f)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = (time.time() + tokens.expires_in
                              if tokens.expires_in is not None else None)
        self._write(data)

    def expires_at(self) -> float | None:
        """When the stored access token expires (the SDK only knows it for tokens it got in
        this process: without it a next session would send an expired token, get a 401 and
        ask for a new sign-in instead of refreshing)."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def forget(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def session_auth(name: str, url: str) -> Any:
    """The httpx Auth a session's connection uses: the stored sign-in, refreshed when it
    expires; a server that needs a new sign-in (none stored, or the refresh was refused) makes
    the start fail with the `mcp login` line. None when the server was never signed in to."""
    if not signed_in(name):
        return None

    async def no_browser(_url: str) -> None:
        raise StartRefused(NO_LOGIN.format(name=name, why=" again (the sign-in expired or "
                                                         "was revoked)"))

    async def no_code() -> Any:
        raise StartRefused(NO_LOGIN.format(name=name, why=""))

    return _provider(name, url, "http://127.0.0.1/callback", no_browser, no_code)


def _provider(name: str, url: str, redirect: str, on_url: Callable[[str], Awaitable[None]],
              on_code: Callable[[], Awaitable[Any]]) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    class Provider(OAuthClientProvider):
        """The SDK's provider, told when a stored token expires, so it refreshes it first."""

        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            if isinstance(storage, FileTokenStorage):
                self.context.token_expiry_time = storage.expires_at()

    from agent_cli import __version__

    meta = OAuthClientMetadata(
        client_name="agent-cli", software_id="agent-cli", software_version=__version__,
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="none")
    return Provider(url, meta, FileTokenStorage(name), on_url, on_code)


@contextlib.contextmanager
def _loopback() -> Iterator[tuple[str, dict[str, str], threading.Event]]:
    """A one-shot listener on 127.0.0.1 for the browser's redirect: (its URL, the query it
    received, set when it came)."""
    import http.server

    got: dict[str, str] = {}
    came = threading.Event()

    class Back(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            if "code" in query or "error" in query:
                got.update({k: v[0] for k, v in query.items()})
                came.set()
            body = b"agent-cli: signed in; you can close this page.\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # never print the code
            return

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Back)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/callback", got, came
    finally:
        srv.shutdown()
        srv.server_close()


async def login(name: str, cfg: Any, show: Callable[[str], None]) -> int:
    """`agent-cli mcp login NAME`: forget the old sign-in, connect (the SDK meets the 401 and
    runs discovery, registration and PKCE), show the sign-in URL (and open it when a browser is
    there), wait for the code on the loopback listener, store the tokens, list the tools.
    Returns how many tools the signed-in server lists."""
    import anyio
    from mcp import Client
    from mcp.shared.auth import AuthorizationCodeResult

    from agent_cli.tools.mcp.features import list_pages
    from agent_cli.tools.mcp.transport import expand, http_streams

    FileTokenStorage(name).forget()
    url = expand(cfg.url or "")
    with _loopback() as (redirect, got, came):
        async def on_url(auth_url: str) -> None:
            show(auth_url)
            if urlsplit(auth_url).scheme not in ("http", "https"):
                raise StartRefused("the server's sign-in address is not an http(s) URL; it was "
                                   "not opened")
            import webbrowser

            with contextlib.suppress(Exception):  # no browser: the URL above is enough
                await anyio.to_thread.run_sync(webbrowser.open, auth_url)

        async def on_code() -> Any:
            ok = await anyio.to_thread.run_sync(came.wait, LOGIN_WAIT_S)
            if not ok:
                raise StartRefused(f"no sign-in came back within {LOGIN_WAIT_S:g} s")
            if "error" in got:
                raise StartRefused(f"the server refused the sign-in ({got['error']})")
            return AuthorizationCodeResult(code=got["code"], state=got.get("state"))

        auth = _provider(name, url, redirect, on_url, on_code)

        @contextlib.asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            async with http_streams(cfg, cfg.startup_timeout_s, auth=auth) as streams:
                yield streams

        async with Client(transport(), mode=cfg.mode) as client:
            return len(await list_pages(client.list_tools, "tools"))
