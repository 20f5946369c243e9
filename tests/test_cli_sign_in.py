"""``ditto-tui mcp login`` and ``mcp logout`` against the OAuth test server; headless runs without a token.

The CLI runs as a subprocess with ``--no-browser``: it prints the authorization address, the test GETs it
as a browser would (the authorization server redirects to the CLI's loopback listener) and the CLI keeps
the token. The headless run is in-process.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

from ditto_tui.__main__ import _sign_in_lines, main
from ditto_tui.config import parse_config_text
from ditto_tui.headless import run_headless
from ditto_tui.interaction.mcp.oauth import TokenStore, default_token_dir
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from tests.mcp.sign_in_helpers import OAuthServer, config_text, oauth_server, play_browser

ROOT = Path(__file__).resolve().parents[1]


def write_config(tmp_path: Path, server: OAuthServer) -> Path:
    path = tmp_path / "ditto.yaml"
    path.write_text(config_text(server), encoding="utf-8")
    return path


def cli(config: Path | None, *args: str) -> subprocess.Popen[str]:
    """``ditto-tui ARGS`` (with ``--config CONFIG`` and its folder as the workspace, when given)."""
    options = [] if config is None else ["--config", str(config), "--workspace", str(config.parent)]
    return subprocess.Popen(
        [sys.executable, "-m", "ditto_tui", *args, *options],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def login(config: Path) -> tuple[int, str, str]:
    """``mcp login notes --no-browser``, with the test as the browser; exit code, stdout, stderr."""
    process = cli(config, "mcp", "login", "notes", "--no-browser")
    assert process.stdout is not None and process.stderr is not None
    printed: list[str] = []
    loop = asyncio.get_running_loop()
    while not printed or not printed[-1].startswith("Open it in a browser"):
        line = await loop.run_in_executor(None, process.stdout.readline)
        assert line, process.stderr.read()
        printed.append(line.rstrip("\n"))
    page = await play_browser(printed[-2].strip())
    assert page.status_code == 200
    out, err = await loop.run_in_executor(None, process.communicate)
    return process.returncode, "\n".join(printed) + "\n" + out, err


def run(config: Path | None, *args: str) -> tuple[int, str, str]:
    process = cli(config, *args)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


async def test_login_prints_the_host_and_address_keeps_the_token_and_logout_forgets_it(
    tmp_path: Path,
) -> None:
    with oauth_server(tmp_path) as server:
        config = write_config(tmp_path, server)
        code, out, err = await login(config)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "MCP server 'notes' asks you to sign in at 127.0.0.1:"
        assert lines[1].startswith(f"  http://127.0.0.1:{server.port}/authorize?")
        tokens = default_token_dir()
        assert lines[-1] == f"Signed in to notes; the token is kept in {tokens}"
        assert TokenStore(tokens).has_tokens("notes") and server.count("authorized") == 1
        assert run(config, "mcp", "login", "notes")[:2] == (
            0,
            f"Already signed in to notes; the token is kept in {tokens}\n",
        )
    assert main(["mcp", "logout", "notes"]) == 0
    assert not TokenStore(tokens).has_tokens("notes")
    assert run(None, "mcp", "logout", "notes")[:2] == (0, "No tokens were kept for notes\n")


def test_logout_says_when_it_signed_out() -> None:
    store = TokenStore(default_token_dir())
    store.save("notes", {"issuers": {}})
    process = cli(None, "mcp", "logout", "notes")
    out, _ = process.communicate(timeout=60)
    assert out == "Signed out of notes: its tokens are forgotten\n" and not store.path("notes").exists()


async def test_login_refused_by_the_authorization_server_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with oauth_server(tmp_path, "--deny") as server:
        code, out, err = await login(write_config(tmp_path, server))
    assert code == 1 and "Signed in" not in out
    (line,) = err.splitlines()
    assert line.startswith("ditto-tui: sign-in failed: the authorization server refused the sign-in")
    assert not TokenStore(default_token_dir()).has_tokens("notes")


def test_login_to_a_server_that_is_not_in_the_config_or_not_http_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "ditto.yaml"
    config.write_text("mcp:\n  servers:\n    local:\n      command: /bin/true\n", encoding="utf-8")
    assert run(config, "mcp", "login", "nowhere") == (
        1,
        "",
        "ditto-tui: MCP server 'nowhere' is not in the config (mcp.servers); only HTTP servers sign in\n",
    )
    assert run(config, "mcp", "login", "local")[2] == (
        "ditto-tui: MCP server 'local' is not an HTTP server; only HTTP servers sign in\n"
    )


def test_t02_t09_login_prints_a_hostile_authorization_url_escaped_with_its_host_plain() -> None:
    """ADVERSARIAL T-02/T-09: the address is printed as text: no escape sequence, bidi or C1 control."""
    url = "https://\u0430uth.example.com/authorize?state=s&x=\x1b]52;c;Zm9v\x07\u202egnp\x9b2J\nnext"
    text = _sign_in_lines("no\x1b[2Jtes", url, browser=False)
    assert "asks you to sign in at xn--uth-5cd.example.com:" in text
    assert "\\x1b]52;c;Zm9v\\x07\\u202egnp\\x9b2J\\x0anext" in text and "'no\\x1b[2Jtes'" in text
    assert len(text.splitlines()) == 3
    assert not [char for char in text if char != "\n" and not char.isprintable()]


def whoami_program() -> Program:
    call = {"operation": "invoke", "server": "notes", "call": {"id": "w1", "name": "whoami", "arguments": {}}}
    plan = graph("who").node("ask", "INTERACTION.ACT.MCP", bind=lambda _input, _outputs: call)
    return Program(name="who", description="calls whoami", plan=plan)


async def test_a_headless_run_with_no_token_fails_in_one_line_saying_to_log_in(tmp_path: Path) -> None:
    with oauth_server(tmp_path) as server:
        config = parse_config_text(config_text(server), {}, name="ditto.yaml", workspace=tmp_path)
        out, err = io.StringIO(), io.StringIO()
        await run_headless(whoami_program(), config, tmp_path, approve="allow", out=out, err=err)
        assert server.count("authorized") == 0
    (line,) = [line for line in err.getvalue().splitlines() if "notes" in line]
    assert line == "ditto-tui: MCP server 'notes' needs you to sign in: run `ditto-tui mcp login notes`"


async def test_a_headless_run_after_login_uses_the_kept_token(tmp_path: Path) -> None:
    with oauth_server(tmp_path) as server:
        assert (await login(write_config(tmp_path, server)))[0] == 0
        config = parse_config_text(config_text(server), {}, name="ditto.yaml", workspace=tmp_path)
        out, err = io.StringIO(), io.StringIO()
        code = await run_headless(whoami_program(), config, tmp_path, approve="allow", out=out, err=err)
        assert code == 0, err.getvalue()
        assert server.count("called whoami") == 1 and server.count("authorized") == 1
    assert "needs you to sign in" not in err.getvalue()
