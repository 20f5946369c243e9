"""``ditto-tui serve``: the app in a browser, behind a door that only the printed address opens.

Each browser tab is the app (``textual-serve`` starts one ``ditto-tui`` process per websocket), on the
configured run host. A page that can approve tool calls is the most valuable thing on the machine to an
attacker, so every request passes :class:`Door` first:

- **Host**: the ``Host`` header must name the bound address (``127.0.0.1:8765``); a page of another site
  whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own name and is refused.
- **Origin**: a request that says where it comes from (``Origin``, or ``Sec-Fetch-Site: cross-site``)
  must come from the served origin itself; the websocket must say so, always.
- **Token**: the printed URL carries a random token (256 bits). ``/?token=…`` is compared with it in
  constant time and exchanged for an HttpOnly, SameSite=Strict cookie (Secure under TLS), and the
  browser is sent on to ``/`` so the token leaves the address bar. Every page, static file and websocket
  needs the cookie.
- A refusal is a short page saying what to do, never a stack trace; nothing is started for it.

It binds 127.0.0.1 by default. Another address is refused without TLS (``--tls-cert``/``--tls-key``)
unless ``--insecure`` says so: the token would cross the network in clear. The page fetches nothing from
elsewhere (textual-serve's own page links a font stylesheet on the web; ours serves the bundled font).
Where a server runs (address, pid, the process's start time) is kept in the state database, so
``ditto-tui serve --stop`` ends it from another terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import html
import ipaddress
import logging
import os
import secrets
import shlex
import signal
import socket
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.home import ensure_dir, state_dir
from ditto_tui.state_db import StateDB
from ditto_tui.supervise.journal._process import process_alive, process_started

if TYPE_CHECKING:
    from aiohttp import web

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
COOKIE = "ditto_tui_session"
LOG = "serve.log"
TEMPLATES = Path(__file__).resolve().parent / "web_templates"
STOP_SECONDS = 10.0

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
"""Sent with every answer: nothing is cached, no address (token included) is sent on as a referrer, and
no other site may frame the page."""


class ServeError(DittoError):
    """``ditto-tui serve`` cannot serve as asked."""

    title = "Serve"
    code = "SERVE_ERROR"


@dataclass(frozen=True, kw_only=True)
class Door:
    """What every request must show: the bound ``origin`` and the token of the printed URL."""

    token: str
    origin: str
    """``scheme://host:port`` as the browser names the server."""

    @property
    def host(self) -> str:
        """The ``Host`` header a request to the bound address carries."""
        return self.origin.split("://", 1)[1]

    def url(self) -> str:
        """The address to open: the origin with the token."""
        return f"{self.origin}/?token={self.token}"

    def refusal(self, request: web.BaseRequest) -> web.Response | None:
        """The page refusing ``request``, or None when it may go on; a valid token gets the cookie."""
        if request.headers.get("Host") != self.host:
            return page(421, "Wrong address", "This server answers at the address ditto-tui serve printed.")
        origin = request.headers.get("Origin")
        if origin is not None and origin != self.origin:
            return page(403, "Refused", "A page of another site cannot use ditto-tui.")
        if request.headers.get("Sec-Fetch-Site") == "cross-site":
            return page(403, "Refused", "A page of another site cannot use ditto-tui.")
        if request.path == "/ws" and origin is None:
            return page(403, "Refused", "The app's connection must come from its own page.")
        given = request.query.get("token")
        if given is not None and request.path == "/":
            if not self._matches(given):
                return page(403, "Wrong link", "This link's token is not the one ditto-tui serve printed.")
            return self._admit()
        if not self._matches(request.cookies.get(COOKIE)):
            return page(401, "Sign in", "Open the address ditto-tui serve printed: it carries the token.")
        return None

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def _admit(self) -> web.Response:
        """Set the cookie and send the browser on to ``/``, the token out of the address bar."""
        from aiohttp import web

        response = web.Response(status=303, headers={**HEADERS, "Location": "/"})
        response.set_cookie(
            COOKIE,
            self.token,
            httponly=True,
            samesite="Strict",
            secure=self.origin.startswith("https:"),
            path="/",
        )
        return response


def page(status: int, title: str, text: str) -> web.Response:
    """A short HTML page (``title``, ``text``) with ``status``: what a refused request is answered."""
    from aiohttp import web

    body = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>ditto-tui: {html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>"
    )
    return web.Response(status=status, text=body, content_type="text/html", headers=HEADERS)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (an IP literal of the loopback range, or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server's TLS context from ``--tls-cert`` and ``--tls-key`` (both or neither)."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ValidationError("--tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ServeError(f"cannot load the TLS certificate and key: {exc}") from None
    return context


def app_command(argv: Sequence[str]) -> str:
    """The shell command each tab starts: this interpreter running ditto-tui with ``argv``."""
    return shlex.join([sys.executable, "-m", "ditto_tui", *argv])


def _server_class() -> type[Any]:
    """textual-serve's server, with the door in front, its page ours and its log in the state directory."""
    from aiohttp import web
    from textual_serve.server import Server

    class DoorServer(Server):
        def __init__(self, command: str, door: Door) -> None:
            super().__init__(command, title="ditto-tui", public_url=door.origin, templates_path=TEMPLATES)
            self.door = door

        def initialize_logging(self) -> None:
            """Into ``serve.log`` in the state directory, never on the terminal."""

        async def on_startup(self, app: web.Application) -> None:
            """No banner: :func:`serve` prints the address."""

        async def _make_app(self) -> web.Application:
            app: web.Application = await super()._make_app()
            door = self.door

            @web.middleware
            async def guarded(
                request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
            ) -> web.StreamResponse:
                refused = door.refusal(request)
                if refused is not None:
                    logging.getLogger("ditto_tui.serve").info(
                        "refused %s %s: %s", request.method, request.path, refused.status
                    )
                    return refused
                response = await handler(request)
                if not response.prepared:
                    response.headers.update(HEADERS)
                    response.headers["Content-Security-Policy"] = _policy(door)
                return response

            app.middlewares.append(guarded)
            return app

    return DoorServer


def _policy(door: Door) -> str:
    """The page may load its own files and open its own websocket, nothing else."""
    socket_origin = door.origin.replace("http", "ws", 1)
    return (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
        f"img-src 'self' data:; font-src 'self'; connect-src 'self' {socket_origin}; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )


async def serve(
    command: str,
    host: str,
    port: int,
    context: ssl.SSLContext | None,
    announce: Callable[[Door], None],
    stopping: asyncio.Event | None = None,
) -> None:
    """Serve ``command`` at ``host:port`` (0: a free port) until ``stopping`` is set or SIGTERM/SIGINT."""
    from aiohttp import web

    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = listener.getsockname()[1]
    name = f"[{host}]" if ":" in host else host
    door = Door(token=secrets.token_urlsafe(32), origin=f"{'https' if context else 'http'}://{name}:{bound}")
    server = _server_class()(command, door)
    runner = web.AppRunner(await server._make_app(), handle_signals=False, access_log=None)
    await runner.setup()
    stopping = stopping or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await web.SockSite(runner, listener, ssl_context=context).start()
        _record(door.origin)
        announce(door)
        await stopping.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        _forget(os.getpid())
        await runner.cleanup()


# --- where it runs --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Served:
    """A running ``ditto-tui serve``: its origin (without the token) and process."""

    origin: str
    pid: int
    started_at: float


def running(db: StateDB | None = None) -> Served | None:
    """The server this user runs, when its process is still the one that recorded it."""
    with (db or StateDB()).reading() as connection:
        if connection is None:
            return None
        row = connection.execute("SELECT origin, pid, process_started, started_at FROM web_server").fetchone()
    if row is None or process_alive(row[1], row[2]) is False:
        return None
    return Served(origin=row[0], pid=row[1], started_at=row[3])


def stop(db: StateDB | None = None) -> Served | None:
    """End the running server (SIGTERM, then wait for it); None when none runs."""
    db = db or StateDB()
    found = running(db)
    if found is not None:
        os.kill(found.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while process_alive(found.pid, process_started(found.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
    with db.changing() as connection:
        connection.execute("DELETE FROM web_server")
    return found


def _record(origin: str) -> None:
    pid = os.getpid()
    with StateDB().changing() as connection:
        connection.execute(
            "INSERT OR REPLACE INTO web_server (id, origin, pid, process_started, started_at) "
            "VALUES (1, ?, ?, ?, ?)",
            (origin, pid, process_started(pid), time.time()),
        )


def _forget(pid: int) -> None:
    with StateDB().changing() as connection:
        connection.execute("DELETE FROM web_server WHERE pid = ?", (pid,))


# --- the command ------------------------------------------------------------------------------------


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ditto-tui serve``."""
    parser = commands.add_parser(
        "serve",
        help="the app in a browser, at a printed address carrying a token",
        description=(
            "Serve the app in a browser: each tab is the app, on the configured run host. Prints one "
            "address carrying a random token; nothing is served without it. Binds 127.0.0.1 unless "
            "--host says otherwise, and another address needs TLS (--tls-cert, --tls-key) or --insecure."
        ),
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"the address to bind (default: {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default: {DEFAULT_PORT}; 0: a free one)"
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="a PEM certificate (with --tls-key): serve https")
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key")
    parser.add_argument(
        "--insecure", action="store_true", help="serve a non-loopback address without TLS (token in clear)"
    )
    parser.add_argument("--stop", action="store_true", help="stop the running ditto-tui serve")


def serve_command(args: argparse.Namespace, app_argv: Sequence[str], out: TextIO) -> int:
    """Run ``ditto-tui serve`` as ``args`` say; ``app_argv``: the options each tab's app starts with."""
    if args.stop:
        found = stop()
        print("ditto-tui serve: stopped" if found else "ditto-tui serve: not running", file=out)
        return 0
    if not 0 <= args.port <= 65535:
        raise ValidationError(f"--port {args.port} is not a port number")
    context = tls_context(args.tls_cert, args.tls_key)
    if context is None and not is_loopback(args.host) and not args.insecure:
        raise ValidationError(
            f"--host {args.host} is reachable from other machines: serve it with --tls-cert and --tls-key "
            "(or --insecure to send the token in clear)"
        )
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        raise ServeError("ditto-tui serve needs textual-serve: pip install 'ditto-tui[serve]'") from None
    logging.basicConfig(
        filename=str(ensure_dir(state_dir()) / LOG), level=logging.INFO, format="%(asctime)s %(message)s"
    )
    found = running()
    if found is not None:
        raise ServeError(f"ditto-tui serve already runs at {found.origin} (pid {found.pid}): --stop ends it")

    def announce(door: Door) -> None:
        print(f"ditto-tui serve: open {door.url()}", file=out, flush=True)
        print("Ctrl+C here, or `ditto-tui serve --stop`, stops it.", file=out, flush=True)

    asyncio.run(serve(app_command(app_argv), args.host, args.port, context, announce))
    return 0
