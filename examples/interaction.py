"""The seed's INTERACTION examples in Python; importing this module runs none of them.

Each ``async def`` is one example of the specification, translated name for name; ``tests/test_examples.py``
runs them all against a temporary workspace and an in-process MCP client.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ditto_tui.contracts import OutputReceipt, OutputRequest
from ditto_tui.interaction import (
    McpClient,
    McpRegistry,
    Tool,
    ToolRegistry,
    create_brave_web_search_provider,
    create_interaction_nodes,
    create_interaction_worker,
    create_mcp_handler,
    create_output_handler,
    create_read_only_command_tools,
    create_tool_handler,
    create_web_search_tool,
    interaction_observe_node,
    observe_external_result,
)
from ditto_tui.runtime import Runtime, WorkerContext, create_ditto, define_worker, graph, loop
from ditto_tui.runtime.worker import WorkerDefinition
from ditto_tui.sandbox import SandboxExecutor

Workspace = str | os.PathLike[str]

# -- 2. RegisteredTool.validate / execute ---------------------------------------------------------------


def _validate_read_text(args: Mapping[str, Any]) -> None:
    path = args.get("path") if isinstance(args, Mapping) else None
    if not isinstance(path, str) or not path.strip():
        raise ValueError("path must be a nonempty string")


async def _execute_read_text(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {"status": "success", "content": context.services.sandbox.read_text(args["path"])}


read_text_tool = Tool(
    name="read_text",
    description="Read a workspace text file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    effects=["read"],
    requires_approval=False,
    validate_fn=_validate_read_text,
    execute_fn=_execute_read_text,
)

# -- 2. OutputSink.deliver ------------------------------------------------------------------------------


class ConsoleSink:
    """Prints each delivery as one JSON line and accepts it."""

    def __init__(self) -> None:
        self.delivered: list[dict[str, Any]] = []

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        line = {
            "id": input.delivery_id,
            "message": input.message.to_wire(),
            "artifacts": [a.to_wire() for a in input.artifacts or ()] or None,
        }
        self.delivered.append(line)
        print(json.dumps(line))
        return OutputReceipt(delivery_id=input.delivery_id, status="accepted", artifacts=input.artifacts)


console_sink = ConsoleSink()

# -- 2. createInteractionWorker(options?) ---------------------------------------------------------------


def setup_interaction(client: McpClient, workspace: Workspace = ".") -> Runtime:
    """A runtime with the read tool, one MCP server, the console sink and 8 concurrent calls."""
    return create_ditto(
        sandbox={"tools": ["read_text"], "read": True, "mcp": ["files"]},
        workers=[
            create_interaction_worker(
                tools=[read_text_tool], mcp={"files": client}, output=console_sink, concurrency=8
            )
        ],
        workspace=workspace,
    )  # client is already connected; the application closes it after runtime.close().


# -- 3. ACT.TOOL and tool registry ----------------------------------------------------------------------


async def invoke_tool(workspace: Workspace = ".") -> Any:
    runtime = create_ditto(
        sandbox={"tools": ["read_text"], "read": True},
        workers=[create_interaction_worker(tools=[read_text_tool])],
        workspace=workspace,
    )
    try:
        result = await runtime.invoke(
            "INTERACTION.ACT.TOOL",
            {"call": {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}},
        )
        if result.status != "success":
            raise RuntimeError(result.error.code if result.error else result.status)
        return result.content  # the ExternalResult itself; no output wrapper
    finally:
        await runtime.close()


async def tool_registry_apis(context: WorkerContext) -> dict[str, Any]:
    tools = ToolRegistry()
    unregister = tools.register(read_text_tool)
    definitions = tools.list(context)  # only tools allowed by context.services.sandbox
    try:
        result = await tools.call(
            {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}, context
        )
        return {"definitions": definitions, "result": result}
    finally:
        unregister()  # True on first removal, False afterwards; closes no tool resources


# -- 4. ACT.MCP and client adapters ---------------------------------------------------------------------


async def invoke_mcp(
    client: McpClient, absolute_file_path: str, workspace: Workspace = "."
) -> dict[str, Any]:
    runtime = setup_interaction(client, workspace)
    try:
        discovery = await runtime.invoke("INTERACTION.ACT.MCP", {"operation": "discover", "server": "files"})
        if discovery.operation != "discover":
            raise RuntimeError("Expected discovery response")
        response = await runtime.invoke(
            "INTERACTION.ACT.MCP",
            {
                "operation": "invoke",
                "server": "files",
                "call": {
                    "id": "mcp-read",
                    "name": "read_text_file",
                    "arguments": {"path": absolute_file_path},
                },
            },
        )
        if response.operation != "invoke":
            raise RuntimeError("Expected invocation response")
        return {"capabilities": discovery.capabilities, "result": response.result}
    finally:
        await runtime.close()


async def mcp_registry_apis(client: McpClient, absolute_file_path: str) -> dict[str, Any]:
    runtime = create_ditto(sandbox={"mcp": ["files"]})
    mcp = McpRegistry(max_discovery_pages=10, max_capabilities=200)
    unregister = mcp.register("files", client)
    try:
        discovery = await mcp.execute({"operation": "discover", "server": "files"}, runtime.services.sandbox)
        result = await mcp.execute(
            {
                "operation": "invoke",
                "server": "files",
                "call": {"id": "mcp-1", "name": "read_text_file", "arguments": {"path": absolute_file_path}},
            },
            runtime.services.sandbox,
        )
        return {"discovery": discovery, "result": result}
    finally:
        unregister()
        await runtime.close()


class McpClientAdapter:
    """Wraps a client, keeping only the McpToolResult fields it sets."""

    def __init__(self, client: McpClient) -> None:
        self._client = client

    async def list_tools(self, cursor: str | None = None, signal: Any = None) -> Mapping[str, Any]:
        return await self._client.list_tools(cursor=cursor, signal=signal)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: Any = None
    ) -> Mapping[str, Any]:
        result = await self._client.call_tool(name, arguments, signal=signal)
        keys = ("content", "structuredContent", "references", "isError", "error")
        return {key: result[key] for key in keys if result.get(key) is not None}


def mcp_client_adapter(client: McpClient) -> McpClient:
    return McpClientAdapter(client)


# -- 5. ExternalResult, OBSERVE and messages ------------------------------------------------------------


async def observe_apis() -> dict[str, Any]:
    result = {"callId": "read-1", "source": "read_text", "status": "success", "content": "file text"}
    local = observe_external_result({"result": result})
    runtime = create_ditto(workers=[create_interaction_worker()])
    try:
        routed = await runtime.invoke("INTERACTION.OBSERVE", {"result": result})
        return {
            "local": local,
            "routed": routed,
        }  # message = {role: tool, name: read_text, content: file text}
    finally:
        await runtime.close()


# -- 6. OUTPUT: requests and receipts -------------------------------------------------------------------


async def output_api() -> OutputReceipt:
    runtime = create_ditto(workers=[create_interaction_worker(output=console_sink)])
    try:
        receipt: OutputReceipt = await runtime.invoke(
            "INTERACTION.OUTPUT",
            {
                "deliveryId": "report-1",
                "message": {"role": "assistant", "content": {"summary": "Complete", "count": 2}},
                "artifacts": [
                    {"name": "report", "reference": {"uri": "urn:report:1", "mediaType": "application/json"}}
                ],
            },
        )
        return receipt  # {deliveryId: report-1, status: accepted, artifacts: [...]}
    finally:
        await runtime.close()


# -- 7. Errors, permissions and configuration -----------------------------------------------------------


async def _missing_record(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    return {
        "status": "failed",
        "error": {"code": "NOT_FOUND", "message": "No matching record", "retryable": False},
    }


missing_record_tool = Tool(
    name="lookup", input_schema={"type": "object"}, effects=[], execute_fn=_missing_record
)


class RejectedSink:
    """Rejects every delivery with a safe error."""

    async def deliver(self, input: OutputRequest) -> OutputReceipt:
        return OutputReceipt.model_validate(
            {
                "deliveryId": input.delivery_id,
                "status": "rejected",
                "error": {"code": "DELIVERY_REJECTED", "message": "The destination rejected the result"},
            }
        )


rejected_sink = RejectedSink()

# -- 8. Lower-level composition -------------------------------------------------------------------------


def interaction_nodes(client: McpClient) -> WorkerDefinition:
    tools = ToolRegistry()
    tools.register(read_text_tool)
    mcp = McpRegistry()
    mcp.register("files", client)
    return define_worker(
        type="INTERACTION", nodes=create_interaction_nodes(tools=tools, mcp=mcp, output=console_sink)
    )


async def _observe(input: Any, context: WorkerContext) -> Any:
    return observe_external_result(input)


def interaction_handlers(client: McpClient) -> WorkerDefinition:
    tools = ToolRegistry()
    tools.register(read_text_tool)
    mcp = McpRegistry()
    mcp.register("files", client)
    return define_worker(
        type="INTERACTION",
        nodes={
            "INTERACTION.ACT.TOOL": create_tool_handler(tools),
            "INTERACTION.ACT.MCP": create_mcp_handler(mcp),
            "INTERACTION.OBSERVE": _observe,
            "INTERACTION.OUTPUT": create_output_handler(console_sink),
        },
    )


observation_definition = interaction_observe_node.define("INTERACTION", _observe)

# -- 9. Graph + Loop + Worker and lifecycle -------------------------------------------------------------


def _read_bind(input: Mapping[str, str], deps: Mapping[str, Any]) -> dict[str, Any]:
    return {"call": {"id": input["id"], "name": "read_text", "arguments": {"path": input["path"]}}}


def _output_bind(input: Mapping[str, str], deps: Mapping[str, Any]) -> dict[str, Any]:
    observation = deps["observe"]
    if observation.status != "success":
        raise RuntimeError(observation.error.code if observation.error else observation.status)
    return {
        "deliveryId": f"{input['id']}:delivery",
        "message": {"role": "assistant", "content": observation.message.content},
    }


read_and_deliver = (
    graph("read-and-deliver")
    .node("read", "INTERACTION.ACT.TOOL", [], _read_bind)
    .node("observe", "INTERACTION.OBSERVE", ["read"], lambda _input, deps: {"result": deps["read"]})
    .node("output", "INTERACTION.OUTPUT", ["observe"], _output_bind)
)


async def interaction_graph(
    workspace: Workspace = ".", paths: tuple[str, ...] = ("README.md", "pyproject.toml")
) -> Any:
    runtime = create_ditto(
        sandbox={"tools": ["read_text"], "read": True},
        workers=[create_interaction_worker(tools=[read_text_tool], output=console_sink)],
        workspace=workspace,
    )
    try:
        return await runtime.loop(
            loop(
                graph=read_and_deliver,
                max_iterations=len(paths),
                bind=lambda index: {"path": paths[index], "id": f"read:{index}"},
                update=lambda index: index + 1,
                done=lambda index: index == len(paths),
            ),
            0,
        )
    finally:
        await runtime.close()


# -- Compose with CONTEXT -------------------------------------------------------------------------------


async def tool_to_cached_context(runtime: Runtime, scope: Any, call: Mapping[str, Any]) -> Any:
    result = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
    observation = await runtime.invoke("INTERACTION.OBSERVE", {"result": result})
    # The application chooses whether failed observations should enter its working set.
    if observation.status != "success":
        raise RuntimeError(observation.error.code if observation.error else observation.status)
    return await runtime.invoke(
        "CONTEXT.UPDATE",
        {
            "scope": scope,
            "ingress": [
                {
                    "id": f"observation:{call['id']}",
                    "sourceNode": "INTERACTION.OBSERVE",
                    "content": observation.message.content,
                    "metadata": {
                        "callId": call["id"],
                        "source": observation.source,
                        "status": observation.status,
                    },
                }
            ],
        },
    )


# -- 2. createReadOnlyCommandTools(options?) --------------------------------------------------------------


def command_tools_runtime(sandbox_executor: SandboxExecutor, workspace: Workspace = ".") -> Runtime:
    """The 14 command tools with smaller limits; they spawn processes, so the sandbox grants ``execute``."""
    command_tools = create_read_only_command_tools(max_entries=200, max_output_bytes=32 * 1024)
    return create_ditto(
        sandbox={"tools": [tool.name for tool in command_tools], "execute": True},
        sandbox_executor=sandbox_executor,
        workers=[create_interaction_worker(tools=command_tools)],
        workspace=workspace,
    )


# -- 2. createWebSearchTool({ provider }) -----------------------------------------------------------------


def web_search_runtime(
    api_key: str | None = None, base_url: str = "https://api.search.brave.com", workspace: Workspace = "."
) -> Runtime:
    """``web_search`` over Brave; the key comes from the environment, never from graph input."""
    key = os.environ["DITTO_WORKER_INTERACTION_BRAVE_SEARCH_API_KEY"] if api_key is None else api_key
    provider = create_brave_web_search_provider(api_key=key, base_url=base_url)
    web_search = create_web_search_tool(provider=provider)
    return create_ditto(
        sandbox={"tools": [web_search.name], "network": [provider.origin]},
        workers=[create_interaction_worker(tools=[web_search])],
        workspace=workspace,
    )
