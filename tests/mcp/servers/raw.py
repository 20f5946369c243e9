"""A hand-written MCP server (JSON-RPC over stdio, no SDK) for protocol-level abuse in the group-M tests.

    python raw.py MODE [--count N]

Every request is written to stderr (``request <method> <params>``). Modes, by what ``tools/list`` or
``tools/call`` does:
  same       pages of one tool, always with the cursor "again"
  cycle      pages of one tool with the cursors A, B, A, ...
  empty      pages of one tool, always with the cursor ""
  endless    pages of one tool with a new cursor every time
  schema-*   lists ``plain`` and ``odd``, whose input schema is string, empty, anyof, null, missing or a
             $ref to --ref (then ``odd`` also has an output schema with that $ref)
  many       lists N tools in one page
  duplicate  lists ``read_text`` twice
  builtin    lists ``read_text`` and ``cat`` (names of built-in tools)
  evil-name  lists a tool whose name holds an escape sequence
  evil-text  lists a tool whose description holds escape, bidi, zero-width and tag characters
  long-text  lists a tool with an N-character description
  long-name  lists a tool with an N-character name
  deep       lists a tool whose schema is nested N levels deep
  stray      answers each call with a stray id, a null id, the real answer, then the answer again
  huge       answers a call with N bytes and no newline
  garbage    answers a call with a line that is not JSON
  bad-utf8   answers a call with a line that is not UTF-8
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
EVIL_TEXT = (
    "Reads \x1b[31mred\x1b[0m \u202egnp.exe\u202c zero\u200bwidth \U000e0041\U000e0042 [link=x]y[/link]"
)


def send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def reply(request_id: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def tool(name: str, description: str = "A tool.", schema: Any = None) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": SCHEMA if schema is None else schema}


CURSORS: dict[str, Callable[[int], str]] = {
    "same": lambda n: "again",
    "cycle": lambda n: "AB"[n % 2],
    "empty": lambda n: "",
    "endless": lambda n: str(n + 1),
}
PAGE_OF = {"again": 1, "A": 1, "B": 2, "": 1}
ODD_SCHEMAS: dict[str, Any] = {
    "string": {"type": "string"},
    "empty": {},
    "anyof": {"anyOf": [{"type": "object"}, {"type": "string"}]},
}


def deep_listing(request_id: Any, levels: int) -> None:
    """A tools/list answer whose schema nests ``levels`` deep (written by hand: json.dumps would recurse)."""
    schema = '{"type": "object", "properties": {"x": ' * levels + '{"type": "object"}' + "}}" * levels
    tool_text = f'{{"name": "nested", "inputSchema": {schema}}}'
    text = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": {{"tools": [{tool_text}]}}}}'
    sys.stdout.buffer.write(text.encode() + b"\n")
    sys.stdout.buffer.flush()


def page(mode: str, cursor: Any) -> dict[str, Any]:
    number = 0 if cursor is None else PAGE_OF.get(cursor) or int(cursor)
    return {"tools": [tool(f"t{number}")], "nextCursor": CURSORS[mode](number)}


def odd(kind: str, ref: str) -> dict[str, Any]:
    if kind == "missing":
        return {"name": "odd", "description": "No schema."}
    if kind == "null":
        return {"name": "odd", "description": "A null schema.", "inputSchema": None}
    if kind == "ref":
        remote = {"type": "object", "$ref": ref}
        return {**tool("odd", schema=remote), "outputSchema": remote}
    return tool("odd", schema=ODD_SCHEMAS[kind])


def tools(mode: str, count: int) -> list[dict[str, Any]]:
    listings = {
        "many": lambda: [tool(f"t{n}") for n in range(count)],
        "duplicate": lambda: [tool("read_text"), tool("read_text")],
        "builtin": lambda: [tool("read_text", "The server's own read_text."), tool("cat")],
        "evil-name": lambda: [tool("plain"), tool("evil\x1b[2Jname")],
        "evil-text": lambda: [tool("plain", EVIL_TEXT)],
        "long-text": lambda: [tool("verbose", "x" * count)],
        "long-name": lambda: [tool("n" * count)],
        "tasks": lambda: [
            {**tool("plain"), "title": "Plain tool"},
            {**tool("background"), "title": "Runs as a task", "execution": {"taskSupport": "required"}},
            {**tool("either"), "execution": {"taskSupport": "optional"}},
        ],
    }
    return listings.get(mode, lambda: [tool("echo")])()


def call(mode: str, count: int, request_id: Any, params: dict[str, Any]) -> None:
    answer = {"content": [{"type": "text", "text": f"{params['name']}: {params.get('arguments')}"}]}
    if mode == "stray":
        reply(987654, {"content": [{"type": "text", "text": "stray"}]})
        reply(None, {"content": [{"type": "text", "text": "for a notification"}]})
        reply(request_id, answer)
        reply(request_id, {"content": [{"type": "text", "text": "duplicate"}]})
    elif mode == "huge":
        sys.stdout.buffer.write(b"x" * count)
        sys.stdout.buffer.flush()
    elif mode == "garbage":
        sys.stdout.buffer.write(b"this is not json\n")
        sys.stdout.buffer.flush()
    elif mode == "bad-utf8":
        sys.stdout.buffer.write(b'{"jsonrpc": "2.0", "id": 1, "result": "\xff\xfe"}\n')
        sys.stdout.buffer.flush()
    else:
        reply(request_id, answer)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--ref", default="https://evil.example/schema.json")
    args = parser.parse_args()
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        print(f"request {method} {json.dumps(message.get('params'))[:200]}", file=sys.stderr, flush=True)
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            capabilities: dict[str, Any] = {"tools": {}}
            reply(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "serverInfo": {"name": "raw", "version": "1"},
                },
            )
        elif method == "tools/list" and args.mode in CURSORS:
            reply(request_id, page(args.mode, (message.get("params") or {}).get("cursor")))
        elif method == "tools/list" and args.mode == "deep":
            deep_listing(request_id, args.count)
        elif method == "tools/list" and args.mode.startswith("schema-"):
            reply(request_id, {"tools": [tool("plain"), odd(args.mode.removeprefix("schema-"), args.ref)]})
        elif method == "tools/list":
            reply(request_id, {"tools": tools(args.mode, args.count)})
        elif method == "tools/call":
            call(args.mode, args.count, request_id, message["params"])
        elif request_id is not None:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )


if __name__ == "__main__":
    main()
