"""An MCP server (MCPServer, stdio) whose stderr and log notifications say what the test asks (group U).

    python noisy.py [--banner TEXT]

``--banner`` is written to stderr at start-up, as is ``cwd <working directory>`` and ``path <PATH>``.
Tools: ``shout(text)`` writes ``text`` to stderr and returns ``"shouted"``; ``log(text, logger)`` sends
``text`` as a ``warning`` log notification from ``logger`` and returns ``"logged"``.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    server = MCPServer("noisy", log_level="ERROR")

    @server.tool()
    def shout(text: str) -> str:
        """Write the text to stderr."""
        sys.stderr.write(text)
        sys.stderr.flush()
        return "shouted"

    @server.tool()
    async def log(text: str, logger: str, ctx: Context) -> str:
        """Send the text as a log notification."""
        await ctx.session.send_log_message(level="warning", data=text, logger=logger)
        return "logged"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--banner", default="")
    args = parser.parse_args()
    print(f"cwd {os.getcwd()}", file=sys.stderr)
    print(f"path {os.environ.get('PATH', '')}", file=sys.stderr, flush=True)
    if args.banner:
        sys.stderr.write(args.banner)
        sys.stderr.flush()
    build().run()


if __name__ == "__main__":
    main()
