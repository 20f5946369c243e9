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
from ditto_tui.loopback import is_loopback
from ditto_tui.processes import end_process, process_alive, process_started
from ditto_tui.state_db import StateDB

if TYPE_CHECKING:
    from aiohttp import web

    from ditto_tui.config import RuntimeConfig
    from ditto_tui.webhooks import Webhooks

DECIDE_PREFIX = "/decide/"
MAX_REASON = 2000
ANNOUNCE_SECONDS = 1.0
CHECK_SECONDS = 10.0
DRAIN_SECONDS = 2.0
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
        foreign = origin is not None and origin != self.origin
        if foreign or request.headers.get("Sec-Fetch-Site") == "cross-site":
            return page(403, "Refused", "A page of another site cannot use ditto-tui.")
        if request.path == "/ws" and origin is None:
            return page(403, "Refused", "The app's connection must come from its own page.")
        if request.path.startswith(DECIDE_PREFIX):
            return None  # a decision page: its link's signature is checked by the page itself
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
        def __init__(self, command: str, door: Door, decisions: Decisions | None) -> None:
            super().__init__(command, title="ditto-tui", public_url=door.origin, templates_path=TEMPLATES)
            self.door = door
            self.decisions = decisions

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
                if not response.prepared:  # the page's own choices stand, the rest are the defaults
                    for name, value in {**HEADERS, "Content-Security-Policy": _policy(door)}.items():
                        response.headers.setdefault(name, value)
                return response

            app.middlewares.append(guarded)
            if self.decisions is not None:
                app.router.add_get(DECIDE_PREFIX + "{request_id}", self.decisions.show)
                app.router.add_post(DECIDE_PREFIX + "{request_id}", self.decisions.answer)
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
    decisions: Decisions | None = None,
) -> None:
    """Serve ``command`` at ``host:port`` (0: a free port) until ``stopping`` is set or SIGTERM/SIGINT;
    with ``decisions``, each waiting request's decision link too, printed as it is asked."""
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
    server = _server_class()(command, door, decisions)
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
        following = None if decisions is None else asyncio.ensure_future(decisions.follow(door.origin))
        await stopping.wait()
        if following is not None:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
        if decisions is not None and decisions.webhooks is not None:
            await decisions.webhooks.drain(DRAIN_SECONDS)  # a slow webhook holds the exit this long at most
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        _forget(os.getpid())
        await runner.cleanup()


# --- decision links ---------------------------------------------------------------------------------

PAGE_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:42rem;line-height:1.4}"
    "pre{white-space:pre-wrap;word-break:break-all;background:#f2f2f2;padding:.6rem;font-size:.85rem}"
    ".warn{background:#fde7e7;border-left:4px solid #c00;padding:.5rem}.claim{color:#555}"
    ".add{color:#075e00}.del{color:#a00000}.hunk{color:#00588a}"
    "button{font-size:1.1rem;padding:.8rem 1.2rem;margin:.3rem .3rem .3rem 0;width:100%}"
    "textarea{width:100%;font-size:1rem;box-sizing:border-box}dt{font-weight:bold}dd{margin:0 0 .4rem 0}"
)
"""The decision page's only style: readable on a phone, no script, nothing fetched."""


def _inert(text: str) -> str:
    """Untrusted text for a page: control and invisible characters made visible, then HTML-escaped."""
    from ditto_tui.sanitize import escape_unprintable

    return html.escape(escape_unprintable(text))


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>ditto-tui: {html.escape(title)}</title><style>{PAGE_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    )


def _moment(at: float | None) -> str:
    return "never" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def request_page(pending: Any, action: str, diff: str | None = None) -> str:
    """The page of one waiting tool call: what the approval view shows, as inert text (``diff``: its
    :func:`write_diff` section), and the form."""
    import json

    request = pending.request
    tool = _inert(request.tool)
    facts = [
        ("Run", _inert(str(pending.run_id))),
        ("Asked", _moment(pending.created_at)),
        ("Expires", _moment(pending.expires_at)),
    ]
    if request.server:
        facts.insert(0, ("MCP server", _inert(request.server)))
    if request.title:
        facts.append(("Title (the server's claim)", _inert(request.title)))
    if request.rule:
        facts.append(("Asked by the rule", _inert(request.rule)))
    parts = [f"<h1>Approve {tool}?</h1>"]
    if request.protected:
        parts.append(
            "<p class='warn'>This call writes ditto-tui's own control files: "
            f"{_inert(', '.join(request.protected))}. It changes what ditto-tui itself runs.</p>"
        )
    parts.append("<dl>" + "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts) + "</dl>")
    if request.effects:
        parts.append(f"<p>Effects: {_inert(', '.join(request.effects))}</p>")
    if request.annotations:
        hints = json.dumps(dict(request.annotations), ensure_ascii=False, sort_keys=True)
        parts.append(f"<p class='claim'>The server's hints (claims, not checked): {_inert(hints)}</p>")
    if request.proposal:
        parts.append(f"<p class='claim'>The agent says: {_inert(request.proposal)}</p>")
    arguments = json.dumps(dict(request.arguments), ensure_ascii=False, indent=2, sort_keys=True)
    shown = "\n".join(_inert(line) for line in arguments.split("\n"))  # JSON's own line breaks stay
    if diff is not None:
        parts.append(diff)
    parts.append(f"<h2>Arguments</h2><pre>{shown}</pre>")
    parts.append(
        f"<form method='post' action='{html.escape(action)}'>"
        "<button name='decision' value='approve'>Approve once</button>"
        "<button name='decision' value='deny'>Deny</button>"
        f"<p><label for='reason'>Reason (with Deny)</label><br>"
        f"<textarea id='reason' name='reason' rows='3' maxlength='{MAX_REASON}'></textarea></p>"
        "<button name='decision' value='deny_with_reason'>Deny with this reason</button>"
        "</form>"
    )
    return _document(f"approve {request.tool}", "".join(parts))


MAX_DIFFED = 1024 * 1024
"""The largest current file a decision page diffs against (bytes)."""


def write_diff(workspace: Path, request: Any) -> str | None:
    """The diff section of a tool call that replaces a workspace file (the approval view's diff): the
    current file, read only inside the workspace and never through a link out of it, against the new
    text; every line inert. None for a call that writes no file (or an MCP call: its server decides)."""
    import difflib

    from ditto_tui.supervise.writes import file_write

    write = None if request.server is not None else file_write(tuple(request.effects), request.arguments)
    if write is None:
        return None
    root = workspace.resolve()
    target = (root / write.path).resolve()
    if not target.is_relative_to(root):
        return f"<h2>Diff</h2><p>{_inert(write.path)} does not map to a file of the workspace.</p>"
    current = ""
    heading = f"{write.path} does not exist yet: the whole file is new"
    if target.is_file():
        if target.stat().st_size > MAX_DIFFED:
            return f"<h2>Diff</h2><p>{_inert(write.path)} is too large to diff here.</p>"
        current = target.read_text(encoding="utf-8", errors="replace")
        heading = f"Diff against the current {write.path}"
    lines = difflib.unified_diff(
        current.splitlines(), write.text.splitlines(), f"a/{write.path}", f"b/{write.path}", lineterm=""
    )
    styled = "\n".join(
        f"<span class='{_DIFF_CLASS.get(line[:1], '')}'>{_inert(line)}</span>" for line in lines
    )
    return f"<h2>Diff</h2><p>{_inert(heading)}</p><pre>{styled or 'No change.'}</pre>"


_DIFF_CLASS = {"+": "add", "-": "del", "@": "hunk"}


class Decisions:
    """The decision pages of a durable run host's waiting requests, and the links printed for them."""

    def __init__(
        self, host: Any, key: bytes, out: TextIO, workspace: Path, webhooks: Webhooks | None = None
    ) -> None:
        from ditto_tui.links import link_key

        self.workspace = workspace
        self.host = host
        self.key = link_key(key)
        self.out = out
        self.webhooks = webhooks
        self._announced: set[str] = set()
        self._waiting: dict[str, Any] = {}
        self._running: set[str] | None = None
        self._checking: set[asyncio.Task[None]] = set()

    def path(self, pending: Any) -> str:
        from ditto_tui.links import decision_path

        return decision_path(self.key, pending.request_id, pending.expires_at)

    async def follow(self, origin: str) -> None:
        """While the server runs: print the decision link of each tool call that starts waiting (once),
        and send the webhook's notifications (a request waiting, one that timed out, a run finished)."""
        while True:
            try:
                await self._look(origin)
            except Exception as exc:  # the run host is unreachable for a moment: look again
                logging.getLogger("ditto_tui.serve").info("following the run host failed: %s", exc)
            await asyncio.sleep(ANNOUNCE_SECONDS)

    async def _look(self, origin: str) -> None:
        from ditto_tui.sanitize import escape_unprintable
        from ditto_tui.webhooks import Notice

        waiting = {pending.request_id: pending for pending in await self.host.pending()}
        for request_id, pending in waiting.items():
            if request_id in self._announced:
                continue
            self._announced.add(request_id)
            link = f"{origin}{self.path(pending)}" if pending.kind == "tool_call" else None
            if link is not None:
                print(f"waiting: {escape_unprintable(pending.summary)}: {link}", file=self.out, flush=True)
            if self.webhooks is not None:
                arguments = getattr(pending.request, "arguments", None)
                self.webhooks.send(
                    Notice(
                        event="pending",
                        summary=pending.summary,
                        run_id=pending.run_id,
                        request_id=request_id,
                        link=link,
                        arguments=arguments if pending.kind == "tool_call" else None,
                    )
                )
        ended = [pending for request_id, pending in self._waiting.items() if request_id not in waiting]
        self._waiting = waiting
        if self.webhooks is None or not self.webhooks.enabled:
            return
        for pending in ended:  # answered, or timed out: the run's record says which
            task = asyncio.ensure_future(self._if_timed_out(pending))
            self._checking.add(task)
            task.add_done_callback(self._checking.discard)
        runs = await self.host.runs()
        if self._running is not None:
            for run in runs:
                if run.run_id in self._running and run.status != "running":
                    summary = f"run {run.run_id} of {run.graph} {run.status}"
                    self.webhooks.send(
                        Notice(event="run_finished", summary=summary, run_id=run.run_id, status=run.status)
                    )
        self._running = {run.run_id for run in runs if run.status == "running"}

    async def _if_timed_out(self, pending: Any) -> None:
        """Notify ``timed_out`` when the run's record says ``pending`` ended by its timeout."""
        from ditto_tui.webhooks import timed_out

        if pending.run_id is None or self.webhooks is None:
            return
        try:
            async with asyncio.timeout(CHECK_SECONDS):
                async for event in self.host.events(pending.run_id):
                    if event.kind != "approval_resolved" or event.request_id != pending.request_id:
                        continue
                    if event.decision == "timeout":
                        self.webhooks.send(timed_out(pending.summary, pending.run_id, pending.request_id))
                    return
        except Exception as exc:  # no record to read now: no notification, never an error
            logging.getLogger("ditto_tui.serve").info("reading run %s failed: %s", pending.run_id, exc)

    async def _checked(self, request: web.Request) -> tuple[Any, web.Response | None]:
        """The waiting tool call a link names, or the page refusing the link."""
        from ditto_tui.links import check

        request_id = request.match_info["request_id"]
        verdict = check(self.key, request_id, request.query.get("exp"), request.query.get("sig"))
        if not verdict.ok:
            return None, page(verdict.status, "Link refused", verdict.reason)
        found = next((p for p in await self.host.pending() if p.request_id == request_id), None)
        if found is None:
            return None, page(410, "Nothing to decide", "This request was answered already, or its run ended")
        if found.kind != "tool_call":
            return None, page(409, "Not here", "Answer this request in the app or with `ditto-tui decide`.")
        return found, None

    async def show(self, request: web.Request) -> web.Response:
        """``GET /decide/ID``: the request, as the approval view shows it, with the form."""
        from aiohttp import web

        found, refused = await self._checked(request)
        if refused is not None:
            return refused
        action = request.path_qs
        # same-origin, not no-referrer: under no-referrer a browser sends the form's POST with Origin null
        headers = {**HEADERS, "Referrer-Policy": "same-origin"}
        shown = request_page(found, action, write_diff(self.workspace, found.request))
        return web.Response(text=shown, content_type="text/html", headers=headers)

    async def answer(self, request: web.Request) -> web.Response:
        """``POST /decide/ID``: the person's answer, through ``RunHost.decide`` as a human's."""
        from ditto_tui.runs import DecisionRejected
        from ditto_tui.supervise.requests import ApprovalDecision

        found, refused = await self._checked(request)
        if refused is not None:
            return refused
        form = await request.post()
        choice = str(form.get("decision", ""))
        reason = str(form.get("reason", ""))[:MAX_REASON].strip() or None
        if choice not in ("approve", "deny", "deny_with_reason"):
            return page(400, "No decision", "Choose Approve or Deny.")
        if choice == "deny_with_reason" and reason is None:
            return page(400, "No reason", "Write the reason, then choose Deny with this reason.")
        if choice == "approve":
            decision = ApprovalDecision(kind="approve", via="link")
        else:
            decision = ApprovalDecision(kind="deny", reason=reason, via="link")
        try:
            resolution = await self.host.decide(found.request_id, decision, decided_by="human")
        except DecisionRejected as exc:
            return page(409, "Not applied", f"The decision was not applied: {exc.reason}")
        said = "Approved" if choice == "approve" else "Denied"
        later = " No worker is running now: it is applied when one is back." if resolution.queued else ""
        from ditto_tui.sanitize import escape_unprintable

        summary = escape_unprintable(f"{found.summary} (run {resolution.run_id})")
        return page(200, said, f"{said}: {summary}.{later}")


# --- where it runs --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Served:
    """A running ``ditto-tui serve``: its origin (without the token) and process."""

    origin: str
    pid: int
    process_started: str | None
    started_at: float


def running(db: StateDB | None = None) -> Served | None:
    """The server this user runs, when its process is still the one that recorded it."""
    with (db or StateDB()).reading() as connection:
        if connection is None:
            return None
        row = connection.execute("SELECT origin, pid, process_started, started_at FROM web_server").fetchone()
    if row is None or process_alive(row[1], row[2]) is False:
        return None
    return Served(origin=row[0], pid=row[1], process_started=row[2], started_at=row[3])


def stop(db: StateDB | None = None) -> Served | None:
    """End the running server (SIGTERM, then wait for it); None when none runs."""
    db = db or StateDB()
    found = running(db)
    if found is not None:
        end_process(found.pid, found.process_started, STOP_SECONDS)
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


def serve_command(
    args: argparse.Namespace,
    workspace: Path,
    app_argv: Sequence[str],
    out: TextIO,
    config: RuntimeConfig | None = None,
) -> int:
    """Run ``ditto-tui serve`` as ``args`` say, on ``workspace``; ``app_argv``: the options each tab's
    app starts with; ``config``: the run's config (on a durable host, waiting requests get decision
    links, and ``notify:`` its webhook notifications)."""
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
    logging.getLogger("httpx").setLevel(logging.WARNING)  # it logs each URL: a webhook's is a secret
    found = running()
    if found is not None:
        raise ServeError(f"ditto-tui serve already runs at {found.origin} (pid {found.pid}): --stop ends it")

    def announce(door: Door) -> None:
        print(f"ditto-tui serve: open {door.url()}", file=out, flush=True)
        print("Ctrl+C here, or `ditto-tui serve --stop`, stops it.", file=out, flush=True)

    decisions = None
    if config is not None and config.runs.host != "embedded":
        from ditto_tui.runs import open_durable_run_host
        from ditto_tui.runs.temporal.codec import load_key
        from ditto_tui.webhooks import Webhooks

        host = open_durable_run_host(config.runs.model_dump())
        decisions = Decisions(host, load_key(), out, workspace, Webhooks(config.notify))
    asyncio.run(serve(app_command(app_argv), args.host, args.port, context, announce, decisions=decisions))
    return 0
