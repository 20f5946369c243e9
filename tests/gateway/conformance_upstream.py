"""The upstream the gateway fronts in the conformance suite's server scenarios: a stdio MCP server (the
SDK's low-level server) offering each scenario's tools, resources, templates and prompts, as the
suite's documentation describes them. Its sampling, elicitation, log and progress messages go through
the gateway to the suite's client.

    python tests/gateway/conformance_upstream.py
"""

from __future__ import annotations

import asyncio
import base64
import warnings
from typing import Any

from mcp import types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.message import ServerMessageMetadata

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00"
    b"\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()
OBJECT = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema or OBJECT)


TOOLS = [
    _tool("test_simple_text", "Returns a simple text response"),
    _tool("test_image_content", "Returns an image"),
    _tool("test_audio_content", "Returns audio"),
    _tool("test_embedded_resource", "Returns an embedded resource"),
    _tool("test_multiple_content_types", "Returns text, an image and a resource"),
    _tool("test_tool_with_logging", "Logs three messages while it runs"),
    _tool("test_error_handling", "Always returns an error result"),
    _tool("test_tool_with_progress", "Reports progress three times"),
    _tool(
        "test_sampling",
        "Asks the client's model",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    ),
    _tool(
        "test_elicitation",
        "Asks the client's user",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    _tool("test_elicitation_sep1034_defaults", "Asks with defaults in the schema"),
    _tool("test_elicitation_sep1330_enums", "Asks with every kind of enum"),
]


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _resource(uri: str, mime: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mime_type=mime, text=text)
    )


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, arguments = params.name, params.arguments or {}
    session, related = ctx.session, ServerMessageMetadata(related_request_id=ctx.request_id)
    if name == "test_simple_text":
        return types.CallToolResult(content=[_text("This is a simple text response for testing.")])
    if name == "test_image_content":
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=PNG, mime_type="image/png")]
        )
    if name == "test_audio_content":
        return types.CallToolResult(
            content=[types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]
        )
    if name == "test_embedded_resource":
        embedded = _resource(
            "test://embedded-resource", "text/plain", "This is an embedded resource content."
        )
        return types.CallToolResult(content=[embedded])
    if name == "test_multiple_content_types":
        return types.CallToolResult(
            content=[
                _text("Multiple content types test:"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                _resource("test://mixed-content-resource", "application/json", '{"test":"data","value":123}'),
            ]
        )
    if name == "test_tool_with_logging":
        for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await session.send_log_message(
                "info", message, logger="conformance", related_request_id=ctx.request_id
            )
            await asyncio.sleep(0.05)
        return types.CallToolResult(content=[_text("Tool with logging executed successfully")])
    if name == "test_error_handling":
        return types.CallToolResult(
            content=[_text("This tool intentionally returns an error for testing")], is_error=True
        )
    if name == "test_tool_with_progress":
        for step in (0, 50, 100):
            await session.report_progress(step, 100, f"step {step}")
            await asyncio.sleep(0.05)
        return types.CallToolResult(content=[_text("Tool with progress completed")])
    if name == "test_sampling":
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(role="user", content=_text(str(arguments.get("prompt", ""))))
                ],
                max_tokens=100,
            )
        )
        sampled = await session.send_request(request, types.CreateMessageResult, metadata=related)
        text = (
            sampled.content.text if isinstance(sampled.content, types.TextContent) else str(sampled.content)
        )
        return types.CallToolResult(content=[_text(f"LLM response: {text}")])
    schema: dict[str, Any]
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "Your username"},
                "email": {"type": "string", "description": "Your email address"},
            },
            "required": ["username", "email"],
        }
        message = str(arguments.get("message", "Please provide your information"))
    elif name == "test_elicitation_sep1034_defaults":
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        }
        message = "Please review your information"
    elif name == "test_elicitation_sep1330_enums":
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2"],
                    "enumNames": ["Option One", "Option Two"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
                "titledMulti": {
                    "type": "array",
                    "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
                },
            },
        }
        message = "Please choose"
    else:
        return types.CallToolResult(content=[_text(f"unknown tool {name}")], is_error=True)
    answer = await session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return types.CallToolResult(
        content=[_text(f"User response: action={answer.action}, content={answer.content}")]
    )


RESOURCES = [
    types.Resource(uri="test://static-text", name="static-text", mime_type="text/plain"),
    types.Resource(uri="test://static-binary", name="static-binary", mime_type="image/png"),
    types.Resource(uri="test://watched-resource", name="watched-resource", mime_type="text/plain"),
]


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template="test://template/{id}/data", name="template", mime_type="application/json"
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-binary":
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)]
        )
    if uri.startswith("test://template/") and uri.endswith("/data"):
        key = uri[len("test://template/") : -len("/data")]
        text = f'{{"id":"{key}","templateTest":true,"data":"Data for ID: {key}"}}'
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )
    text = "This is the content of the static text resource." if uri == "test://static-text" else "watched"
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
    )


async def subscribe(ctx: Any, params: Any) -> types.EmptyResult:
    return types.EmptyResult()


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with arguments",
        arguments=[
            types.PromptArgument(name="arg1", required=True),
            types.PromptArgument(name="arg2", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt with an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    arguments = params.arguments or {}
    if params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=_text(text))])
    if params.name == "test_prompt_with_embedded_resource":
        uri = arguments.get("resourceUri", "test://example-resource")
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(
                    role="user",
                    content=_resource(uri, "text/plain", "Embedded resource content for testing."),
                ),
                types.PromptMessage(
                    role="user", content=_text("Please process the embedded resource above.")
                ),
            ]
        )
    if params.name == "test_prompt_with_image":
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(
                    role="user", content=types.ImageContent(type="image", data=PNG, mime_type="image/png")
                ),
                types.PromptMessage(role="user", content=_text("Please analyze the image above.")),
            ]
        )
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=_text("This is a simple prompt for testing."))]
    )


async def complete(ctx: Any, params: Any) -> types.CompleteResult:
    return types.CompleteResult(completion=types.Completion(values=[]))


async def set_level(ctx: Any, params: Any) -> types.EmptyResult:
    return types.EmptyResult()


def server() -> Server[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Server(
            "conformance-upstream",
            version="1.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=subscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


async def main() -> None:
    upstream = server()
    async with stdio_server() as (read, write), upstream.lifespan(upstream) as state:
        options = upstream.create_initialization_options(NotificationOptions())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await serve_loop(upstream, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    asyncio.run(main())
