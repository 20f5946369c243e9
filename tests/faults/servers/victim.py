"""An MCP server (stdio) for the fault tests: it counts its executions and can be killed mid-call.

    python victim.py --count FILE

Tools: ``work`` (sleeps ``seconds``, then answers), ``hang`` (never answers). Each call appends its
name to FILE before doing anything, so a test can count executions across restarts; the process id is
written to stderr at start-up (``pid N``) so a test can kill it.
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer


def build(count: str) -> MCPServer:
    server = MCPServer("victim", log_level="ERROR")

    def executed(name: str) -> None:
        with open(count, "a", encoding="utf-8") as file:
            file.write(name + "\n")

    @server.tool()
    async def work(seconds: float) -> str:
        """Work for ``seconds``, then answer."""
        executed("work")
        await anyio.sleep(seconds)
        return "worked"

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        executed("hang")
        await anyio.sleep_forever()
        return "unreachable"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", required=True)
    args = parser.parse_args()
    print(f"pid {os.getpid()}", file=sys.stderr, flush=True)
    build(args.count).run()


if __name__ == "__main__":
    main()
