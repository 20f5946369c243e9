"""Browsing what a server offers besides tools: server info, resources, templates, prompts and ping.

Against the real ``server-everything`` (resources, templates and prompts), the demo server (which declares
resources and prompts but has none) and the raw test server (which declares tools only).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from ditto_tui.demo.servers import demo_server_entry
from ditto_tui.errors import McpError, ValidationError
from ditto_tui.interaction import McpRegistry, open_mcp_servers
from ditto_tui.interaction.mcp import McpCallError
from tests.mcp.mcp_helpers import lines, node_server, python_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def registry(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpRegistry]:
    base = tmp_path_factory.mktemp("browse")
    (base / "notes").mkdir()
    entries = {
        "everything": node_server("mcp-server-everything", "stdio"),
        "demo": demo_server_entry(base / "notes"),
        "raw": python_server("raw.py", "many", "--count", "1"),
    }
    async with open_mcp_servers(entries, log_dir=base / "logs") as opened:
        yield opened


@pytest.fixture
def raw_log(registry: McpRegistry) -> Path:
    status = registry.status("raw")
    assert status is not None and status.log_path is not None
    return Path(status.log_path)


async def test_server_info_is_the_initialize_result_of_everything(registry: McpRegistry) -> None:
    info = registry.server_info("everything")
    assert (info.name, info.title) == ("mcp-servers/everything", "Everything Reference Server")
    assert info.version and info.protocol_version
    assert info.instructions is not None and "Everything Server" in info.instructions
    assert {"resources", "prompts", "tools"} <= info.capabilities.keys()
    assert info.capabilities["resources"]["subscribe"] is True  # the wire form, camelCase keys inside


async def test_server_info_of_a_server_without_title_leaves_it_out(registry: McpRegistry) -> None:
    info = registry.server_info("raw")
    assert (info.name, info.version, info.title, info.instructions) == ("raw", "1", None, None)
    assert dict(info.capabilities) == {"tools": {}}


async def test_lists_and_reads_resources_of_everything_in_wire_form(registry: McpRegistry) -> None:
    listing = await registry.list_resources("everything")
    resources = listing["resources"]
    assert resources and all("uri" in resource and "name" in resource for resource in resources)
    assert any("mimeType" in resource for resource in resources)  # camelCase, as the SDK dumps by alias
    assert all(value is not None for resource in resources for value in resource.values())
    uri = resources[0]["uri"]
    read = await registry.read_resource("everything", uri)
    (content,) = read["contents"]
    assert content["uri"] == uri and isinstance(content["text"], str) and content["text"]


async def test_lists_resource_templates_of_everything(registry: McpRegistry) -> None:
    listing = await registry.list_resource_templates("everything")
    templates = listing["resourceTemplates"]
    assert any(template["uriTemplate"].endswith("{resourceId}") for template in templates)


async def test_reads_a_resource_made_from_a_template(registry: McpRegistry) -> None:
    read = await registry.read_resource("everything", "demo://resource/dynamic/text/7")
    (content,) = read["contents"]
    assert content["uri"] == "demo://resource/dynamic/text/7" and "7" in content["text"]


async def test_lists_prompts_and_gets_one_with_arguments(registry: McpRegistry) -> None:
    listing = await registry.list_prompts("everything")
    prompts = {prompt["name"]: prompt for prompt in listing["prompts"]}
    assert {"simple-prompt", "args-prompt"} <= prompts.keys()
    assert {argument["name"] for argument in prompts["args-prompt"]["arguments"]} == {"city", "state"}
    prompt = await registry.get_prompt("everything", "args-prompt", {"city": "Lisbon"})
    (message,) = prompt["messages"]
    assert message["role"] == "user" and "Lisbon" in message["content"]["text"]
    simple = await registry.get_prompt("everything", "simple-prompt")
    assert simple["messages"]


async def test_an_unknown_prompt_is_a_request_error(registry: McpRegistry) -> None:
    with pytest.raises(McpCallError) as raised:
        await registry.get_prompt("everything", "no-such-prompt")
    assert raised.value.code == "MCP_REQUEST_ERROR"


async def test_ping_answers_in_seconds(registry: McpRegistry) -> None:
    for server in ("everything", "demo"):
        seconds = await registry.ping(server)
        assert isinstance(seconds, float) and 0 <= seconds < 10


async def test_demo_server_declares_and_lists_its_resources_and_prompts(registry: McpRegistry) -> None:
    assert {"tools", "resources", "prompts"} <= registry.server_info("demo").capabilities.keys()
    resources = (await registry.list_resources("demo"))["resources"]
    templates = (await registry.list_resource_templates("demo"))["resourceTemplates"]
    prompts = (await registry.list_prompts("demo"))["prompts"]
    assert [resource["uri"] for resource in resources] == ["notes://index"]
    assert [template["uriTemplate"] for template in templates] == ["note://{name}"]
    assert [(prompt["name"], prompt["arguments"][0]["name"]) for prompt in prompts] == [
        ("summarise_note", "name")
    ]


async def test_a_server_with_tools_only_refuses_resources_and_prompts_without_asking_it(
    registry: McpRegistry, raw_log: Path
) -> None:
    attempts = [
        registry.list_resources("raw"),
        registry.list_resource_templates("raw"),
        registry.read_resource("raw", "file:///etc/hosts"),
        registry.list_prompts("raw"),
        registry.get_prompt("raw", "anything"),
    ]
    for attempt in attempts:
        with pytest.raises(McpError, match="does not offer (resources|prompts)") as raised:
            await attempt
        assert raised.value.code == "MCP_CAPABILITY_MISSING"
    assert lines(raw_log, "request resources/") == 0 and lines(raw_log, "request prompts/") == 0


async def test_a_ping_the_server_does_not_answer_is_a_request_error(registry: McpRegistry) -> None:
    with pytest.raises(McpCallError) as raised:
        await registry.ping("raw")  # raw.py answers every method it does not know with -32601
    assert raised.value.code == "MCP_REQUEST_ERROR"


async def test_an_unregistered_server_raises_as_discover_does(registry: McpRegistry) -> None:
    with pytest.raises(ValidationError, match="no MCP server named 'nowhere' is registered"):
        registry.server_info("nowhere")
    with pytest.raises(ValidationError, match="no MCP server named 'nowhere' is registered"):
        await registry.list_resources("nowhere")
    with pytest.raises(ValidationError, match="no MCP server named 'nowhere' is registered"):
        await registry.ping("nowhere")


async def test_a_client_without_browse_methods_still_registers_but_cannot_browse() -> None:
    class ToolsOnly:
        async def list_tools(self, cursor: str | None = None, signal: object = None) -> dict[str, object]:
            return {"tools": []}

        async def call_tool(self, name: str, arguments: object, signal: object = None) -> dict[str, object]:
            return {"content": []}

    registry = McpRegistry()
    registry.register("fake", ToolsOnly())
    with pytest.raises(McpError, match="cannot browse"):
        await registry.list_prompts("fake")
    with pytest.raises(McpError, match="cannot browse"):
        registry.server_info("fake")


async def test_completes_a_prompt_argument_with_the_context_of_another(registry: McpRegistry) -> None:
    assert "completions" in registry.server_info("everything").capabilities
    ref = {"type": "ref/prompt", "name": "completable-prompt"}
    departments = await registry.complete("everything", ref, {"name": "department", "value": "S"})
    assert departments["values"] == ["Sales", "Support"]
    names = await registry.complete(
        "everything", ref, {"name": "name", "value": ""}, {"department": "Engineering"}
    )
    assert names["values"] == ["Alice", "Bob", "Charlie"]
    assert all(value is not None for value in names.values())  # the wire form, without None fields


async def test_completes_a_resource_template_argument(registry: McpRegistry) -> None:
    ref = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
    assert (await registry.complete("everything", ref, {"name": "resourceId", "value": "7"}))["values"] == [
        "7"
    ]
    assert (await registry.complete("everything", ref, {"name": "resourceId", "value": "x"}))["values"] == []


async def test_an_invalid_completion_request_is_refused_before_anything_is_sent(
    registry: McpRegistry, raw_log: Path
) -> None:
    prompt = {"type": "ref/prompt", "name": "completable-prompt"}
    attempts = [
        registry.complete("raw", {"type": "ref/tool", "name": "x"}, {"name": "a", "value": ""}),
        registry.complete("raw", {"type": "ref/prompt"}, {"name": "a", "value": ""}),
        registry.complete("raw", prompt, {"name": "a"}),
        registry.complete("raw", prompt, {"name": "a", "value": 1}),  # type: ignore[dict-item]
        registry.complete("raw", prompt, {"name": "a", "value": ""}, {"b": 2}),  # type: ignore[dict-item]
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError):
            await attempt
    assert lines(raw_log, "request completion/") == 0


async def test_sets_the_logging_level_of_everything(registry: McpRegistry) -> None:
    assert "logging" in registry.server_info("everything").capabilities
    for level in ("debug", "emergency"):
        await registry.set_logging_level("everything", level)


async def test_an_invalid_logging_level_is_refused_before_anything_is_sent(
    registry: McpRegistry, raw_log: Path
) -> None:
    for server in ("everything", "raw"):
        with pytest.raises(ValidationError, match="an MCP logging level is one of debug, info"):
            await registry.set_logging_level(server, "verbose")
    assert lines(raw_log, "request logging/") == 0


async def test_subscribes_to_a_resource_of_everything_and_unsubscribes(registry: McpRegistry) -> None:
    assert registry.server_info("everything").capabilities["resources"]["subscribe"] is True
    uri = (await registry.list_resources("everything"))["resources"][0]["uri"]
    await registry.subscribe_resource("everything", uri)
    await registry.unsubscribe_resource("everything", uri)
    assert await registry.ping("everything") >= 0  # the session is still fine


async def test_servers_without_completions_logging_or_subscriptions_are_refused_without_asking(
    registry: McpRegistry, raw_log: Path
) -> None:
    assert registry.server_info("demo").capabilities["resources"]["subscribe"] is False
    ref = {"type": "ref/prompt", "name": "anything"}
    attempts = [
        ("completions", registry.complete("raw", ref, {"name": "a", "value": ""})),
        ("logging", registry.set_logging_level("raw", "info")),
        ("resources.subscribe", registry.subscribe_resource("raw", "file:///x")),
        ("resources.subscribe", registry.unsubscribe_resource("raw", "file:///x")),
        ("resources.subscribe", registry.subscribe_resource("demo", "file:///x")),
    ]
    for capability, attempt in attempts:
        with pytest.raises(McpError, match=f"does not offer {capability} ") as raised:
            await attempt
        assert raised.value.code == "MCP_CAPABILITY_MISSING"
    for method in ("completion/", "logging/", "resources/"):
        assert lines(raw_log, f"request {method}") == 0


async def test_the_client_names_itself_ditto_tui_with_its_version(raw_log: Path) -> None:
    version = importlib.metadata.version("ditto-tui")
    # raw.py writes every request it gets, the initialize request's params included.
    (initialize,) = [line for line in raw_log.read_text().splitlines() if "request initialize " in line]
    assert f'"clientInfo": {{"name": "ditto-tui", "version": "{version}"}}' in initialize
