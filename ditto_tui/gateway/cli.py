"""``ditto-tui mcp serve`` and ``ditto-tui mcp config CLIENT``: the gateway's commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import TextIO

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import DittoError, ValidationError

CLIENTS = ("claude", "cursor", "claude-code")
NAME = "ditto-tui"


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="be an MCP server in front of the config's servers: every tool call supervised",
        description="Serve the MCP servers of the config to an MCP client (Claude Desktop, Claude Code, "
        "Cursor, an agent SDK) through ditto-tui: tools (SERVER__TOOL when several servers are fronted), "
        "resources, prompts and completion pass through, and every tool call goes through the approval "
        "gate as a run's does. Each client connection is a run (graph mcp-gateway) on the configured run "
        "host: its calls are in the journal, and on a durable host they wait in `ditto-tui inbox`, the "
        "app and the browser. With the embedded host a call that needs a person is asked in the client's "
        "own form (elicitation), or refused saying how to approve it.",
    )
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="over stdin and stdout (the default)")
    transport.add_argument(
        "--http",
        metavar="127.0.0.1:PORT",
        help="over streamable HTTP on loopback, at /mcp, with the bearer token printed at start (or, with "
        "mcp.gateway.oauth in the config, the tokens of that authorization server)",
    )
    serve.add_argument("--servers", metavar="NAME,...", help="front only these servers of mcp.servers")
    config = commands.add_parser(
        "config",
        help="print the block that points an MCP client at the gateway",
        description="Print what to add to CLIENT's MCP settings so that it reaches its servers through "
        "`ditto-tui mcp serve` on this workspace.",
    )
    config.add_argument("client", choices=CLIENTS)


def _servers(given: str | None) -> list[str]:
    if given is None:
        return []
    names = [name.strip() for name in given.split(",") if name.strip()]
    if not names:
        raise ValidationError("--servers names no server")
    return names


def _address(given: str) -> tuple[str, int]:
    host, separator, port = given.rpartition(":")
    if not separator:
        host, port = "127.0.0.1", given
    try:
        number = int(port)
    except ValueError:
        raise ValidationError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8766, not {given!r}") from None
    if not 0 <= number <= 65535:
        raise ValidationError(f"--http port {number} is not a port")
    return host or "127.0.0.1", number


def serve_command(args: argparse.Namespace, config: RuntimeConfig, workspace: Path, out: TextIO) -> int:
    """``mcp serve``: over stdio (the default) or ``--http``."""
    from ditto_tui.gateway.serving import serve_http, serve_stdio

    servers = _servers(args.servers)
    if not config.mcp.servers:
        raise ValidationError("the config has no mcp.servers to serve: add some (`ditto-tui mcp import`)")
    unknown = sorted(set(servers) - set(config.mcp.servers))
    if unknown:
        raise ValidationError(f"--servers names no server of mcp.servers: {', '.join(unknown)}")
    ungranted = sorted(set(servers) - set(config.sandbox.mcp))
    if ungranted:
        raise ValidationError(
            f"sandbox.mcp does not grant {', '.join(ungranted)}: list them there to serve them"
        )
    try:
        if args.http is not None:
            host, port = _address(args.http)
            return asyncio.run(serve_http(config, workspace, host, port, servers, out, mode=args.mode))
        return asyncio.run(serve_stdio(config, workspace, servers, args.mode))
    except KeyboardInterrupt:
        return 0
    except BaseExceptionGroup as group:  # the SDK's task groups wrap what the gateway raised
        found = group.subgroup(lambda exc: isinstance(exc, DittoError))
        while found is not None and isinstance(found.exceptions[0], BaseExceptionGroup):
            found = found.exceptions[0]
        if found is None:
            raise
        raise found.exceptions[0] from None


def _command() -> list[str]:
    found = shutil.which(NAME) or str(Path(sys.executable).parent / NAME)
    return [found] if Path(found).exists() else [sys.executable, "-m", "ditto_tui"]


WHERE = {
    "claude": "Add this to claude_desktop_config.json (Settings > Developer > Edit Config)",
    "cursor": "Add this to .cursor/mcp.json in the project (or ~/.cursor/mcp.json)",
    "claude-code": "Run this in the project",
}


def config_block(client: str, workspace: Path) -> str:
    """What to add to ``client``'s settings to reach the gateway over stdio on ``workspace``."""
    command, *lead = _command()
    arguments = [*lead, "--workspace", str(workspace), "mcp", "serve", "--stdio"]
    if client == "claude-code":
        return "claude mcp add " + NAME + " -- " + shlex.join([command, *arguments])
    return json.dumps({"mcpServers": {NAME: {"command": command, "args": arguments}}}, indent=2)


def config_command(args: argparse.Namespace, workspace: Path, out: TextIO) -> int:
    """The block on stdout (to paste, or to redirect into a file); where it goes on stderr."""
    print(
        f"{WHERE[args.client]}, and remove from the client the servers the gateway fronts "
        "(they are reached through it):",
        file=sys.stderr,
    )
    print(config_block(args.client, workspace), file=out)
    return 0
