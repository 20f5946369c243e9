"""A stdio MCP server that takes ``DELAY`` seconds to start and then lists five tools.

It models a server whose start-up waits on something other than this machine's CPU (loading a model,
reaching a database, ``npx`` fetching a package): it sleeps, then answers on plain JSON-RPC lines. It
imports nothing heavy, so eight of them cost the CPU little and show what the client's own start-up
costs when servers start together.

    python benchmarks/slow_start_server.py DELAY
"""

from __future__ import annotations

import json
import sys
import time

TOOLS = [{"name": f"tool_{n}", "inputSchema": {"type": "object"}} for n in range(5)]


def reply(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    time.sleep(float(sys.argv[1]))
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "initialize":
            info = {"name": "slow-start", "version": "1"}
            reply(
                request_id,
                {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": info,
                },
            )
        elif method == "tools/list":
            reply(request_id, {"tools": TOOLS})
        elif method == "ping":
            reply(request_id, {})
        elif request_id is not None:
            error = {"code": -32601, "message": "Method not found"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
