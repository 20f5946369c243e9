"""A pass-through MCP proxy with nothing in between (no gate, no run, no journal): the cost of one more
stdio hop with the SDK, the floor under the gateway's figure in ``bench_gateway``.

    python benchmarks/null_proxy.py COMMAND [ARGS...]   # fronts the stdio server COMMAND
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server


async def main(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    with open(os.devnull, "w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as upstream,
        ):
            await upstream.initialize()

            async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
                return await upstream.list_tools()

            async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
                request = types.CallToolRequest(
                    params=types.CallToolRequestParams(name=params.name, arguments=params.arguments)
                )
                return await upstream.send_request(request, types.CallToolResult)

            proxy = Server("null-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
            async with stdio_server() as (down_read, down_write), proxy.lifespan(proxy) as state:
                options = proxy.create_initialization_options()
                await serve_loop(proxy, down_read, down_write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
