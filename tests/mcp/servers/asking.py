"""An MCP server (MCPServer, stdio) that asks the client for sampling and elicitation (group V).

    python asking.py

Tools:

- ``flood(count, size)`` sends ``count`` sampling requests at once, each a prompt of ``size`` bytes that
  starts with its index (``0007:xxxx…``), and returns ``{"answered": [...], "errors": [...]}``: the answers'
  texts and the error messages, in the order they came back.
- ``ask_form(fields)`` asks for the form whose properties are ``fields`` (a JSON object of string
  properties, each with its ``title`` and ``description``), and returns what came back as JSON: the
  ``action`` and the ``content`` exactly as the client sent it.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    server = MCPServer("asking", log_level="ERROR")

    @server.tool()
    async def flood(count: int, size: int, ctx: Context) -> str:
        """Send many sampling requests at once and say how each ended."""
        answered: list[str] = []
        errors: list[str] = []

        async def ask(index: int) -> None:
            prefix = f"{index:04d}:"
            prompt = prefix + "x" * max(0, size - len(prefix))
            message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
            try:
                with warnings.catch_warnings():  # sampling is deprecated in the SDK, not in this test
                    warnings.simplefilter("ignore")
                    result = await ctx.session.create_message(messages=[message], max_tokens=10)
            except Exception as exc:  # the client's error result: what the test looks at
                errors.append(str(exc))
                return
            content = result.content
            answered.append(
                content.text if isinstance(content, types.TextContent) else type(content).__name__
            )

        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(ask, index)
        return json.dumps({"answered": answered, "errors": errors})

    @server.tool()
    async def ask_form(fields: dict[str, Any], ctx: Context) -> str:
        """Ask for a form of string fields and return the answer as it arrived."""
        properties = {name: {"type": "string", **spec} for name, spec in fields.items()}
        schema: Any = {"type": "object", "properties": properties}
        result = await ctx.session.elicit_form("Please fill in the form", schema)
        return json.dumps({"action": result.action, "content": result.content})

    return server


def main() -> None:
    build().run()


if __name__ == "__main__":
    main()
