"""Every offer of the reference ``server-everything``, each exercised once through the supervised path.

One server process serves the module, connected as a user's session connects it (the composition root's
``build_runtime``): :class:`McpRequests` answers what the server asks of the client (sampling by the
configured model once the person approves it and its answer, elicitation by the person, roots with the
workspace), an approval gate over the same inbox asks the person before every tool call, and the run
journal records the decisions. A test answerer plays the person. Tools are called as a run calls them
(``INTERACTION.ACT.MCP``); resources, templates, prompts and completions go through the registry. Nothing
here reaches the network: the gzip tool is given a ``data:`` URI and the URL elicitation is declined.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import re
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ditto_tui.config import parse_runtime_config
from ditto_tui.contracts import ExternalResult
from ditto_tui.infer import create_scripted_provider
from ditto_tui.interaction import McpInvocation, McpRegistry, open_mcp_servers
from ditto_tui.interaction.mcp import McpBlock, McpDiscovery, McpLogLine, McpOfferChanged
from ditto_tui.program import Program
from ditto_tui.runtime import ApprovalResolved, CustomEvent, Runtime, graph
from ditto_tui.session import build_runtime
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest, Inbox, RunJournal
from ditto_tui.supervise.journal import CLIENT_REQUESTS_PLAN, JournalRead, read_journal
from ditto_tui.supervise.mcp_requests import (
    ElicitationAnswer,
    ElicitationRequest,
    McpRequests,
    SamplingAnswer,
    SamplingRequest,
    SamplingResultAnswer,
    SamplingResultReview,
)
from tests.mcp.mcp_helpers import ROOT, node_server
from tests.supervise.inbox_helpers import answering

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER = "everything"
ACT_MCP = "INTERACTION.ACT.MCP"
DOCS = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "docs"
MODEL_TEXT = "Autumn wind: the scripted model answers."
PARENT_SECRET = "every-offer-parent-secret-0d5c"
TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
    "simulate-research-query",
}
TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"
BLOB_TEMPLATE = "demo://resource/dynamic/blob/{resourceId}"
SIMULATED_LOG = re.compile(
    r"(Debug|Info|Notice|Warning|Error|Critical|Emergency)-level message|Alert level-message"
)
ELICITED = {"name": "Ada Lovelace", "check": True, "email": "ada@example.com"}
URL = "https://login.example.com/approve?session=42"


def person(request: Any) -> Any:
    """What the person answers: approve every call and sampling step, fill in forms, decline URLs."""
    match request:
        case ApprovalRequest():
            return ApprovalDecision(kind="approve")
        case SamplingRequest():
            return SamplingAnswer(approves=True)
        case SamplingResultReview():
            return SamplingResultAnswer(approves=True)
        case ElicitationRequest(mode="form"):
            return ElicitationAnswer(action="accept", content=ELICITED)
        case ElicitationRequest():
            return ElicitationAnswer(action="decline")
    raise AssertionError(f"unexpected request {request!r}")


@dataclass
class Session:
    """The connected server with the runtime, the person's requests and the events seen so far."""

    registry: McpRegistry
    runtime: Runtime
    requests: McpRequests
    journal: RunJournal
    workspace: Path
    asked: list[Any]
    events: list[Any] = field(default_factory=list)

    async def call(self, tool: str, **arguments: Any) -> ExternalResult:
        """Call ``tool`` as a run does (the gate asks the person first); the call id is ``c-<tool>``."""
        call = {"id": f"c-{tool}", "name": tool, "arguments": arguments}
        done = await self.runtime.invoke(ACT_MCP, {"operation": "invoke", "server": SERVER, "call": call})
        assert isinstance(done, McpInvocation)
        return done.result

    def blocks(self, tool: str) -> tuple[McpBlock, ...]:
        """The content blocks the last call of ``tool`` returned, as the browser gets them."""
        found = self.registry.call_blocks(SERVER, f"c-{tool}")
        assert found is not None, f"{tool} left no blocks"
        return found

    def asked_about(self, tool: str) -> list[ApprovalRequest]:
        """The approvals of calls of ``tool`` the person was asked for."""
        return [r for r in self.asked if isinstance(r, ApprovalRequest) and r.call.name == tool]

    def journals(self) -> list[JournalRead]:
        """Every journal the session wrote so far."""
        found = [read_journal(path) for path in sorted(self.journal.directory.glob("*.jsonl"))]
        assert all(not read.problems() for read in found)
        return found

    def journaled(self) -> list[Any]:
        """The events of every journal (the calls' approvals among them)."""
        return [event for read in self.journals() for event in read.events]

    def decisions(self) -> list[dict[str, Any]]:
        """The journaled decisions on the server's requests (sampling, elicitation), in order."""
        return [
            dict(entry)
            for read in self.journals()
            if read.header.get("plan") == CLIENT_REQUESTS_PLAN
            for entry in read.client_requests()
        ]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    base = tmp_path_factory.mktemp("every-offer")
    workspace = base / "project"
    workspace.mkdir()
    entry = {**node_server("mcp-server-everything", "stdio"), "env": {"GREETING": "hello from ditto.yaml"}}
    config = parse_runtime_config(
        {
            "sandbox": {"mcp": [SERVER]},
            "mcp": {"servers": {SERVER: entry}},
            "approval": {"rules": [{"mcp": f"{SERVER}:*", "decision": "ask"}]},
        },
        {},
    )
    inbox = Inbox()
    model = create_scripted_provider([{"content": MODEL_TEXT}], name="scripted-model")
    requests = McpRequests(inbox=inbox, workspace=workspace, provider=model, timeout=30)
    asked = answering(inbox, person)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVERY_OFFER_API_TOKEN", PARENT_SECRET)  # ditto's own environment, not the server's
        async with open_mcp_servers(
            config.mcp.servers, log_dir=base / "logs", client_requests=requests, allowed=[SERVER]
        ) as registry:
            program = Program(
                name="every-offer", description="every offer of server-everything", plan=graph("every-offer")
            )
            runtime, gate = build_runtime(program, config, workspace, inbox, mcp=registry, inbox=inbox)
            assert isinstance(gate.recorder, RunJournal)
            requests.recorder = gate.recorder
            opened = Session(registry, runtime, requests, gate.recorder, workspace, asked)
            runtime.subscribe(opened.events.append)
            async with runtime:
                await _until_listed(runtime)
                yield opened


async def _until_listed(runtime: Runtime) -> None:
    """Wait for the tools the server registers once it has seen the client's capabilities."""
    for _ in range(100):
        found = await runtime.invoke(ACT_MCP, {"operation": "discover", "server": SERVER})
        assert isinstance(found, McpDiscovery)
        if {"trigger-sampling-request", "get-roots-list"} <= {c.name for c in found.capabilities}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the server never listed the tools it offers a client with capabilities")


def texts(result: ExternalResult) -> list[str]:
    """The text parts of a result, in order."""
    assert result.status == "success", result
    parts = result.model_dump(mode="json")["content"]
    return [part["text"] for part in parts if part["type"] == "text"]


async def _until(check: Callable[[], bool], seconds: float = 5) -> None:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.05)


# -- what the server offers ------------------------------------------------------------------------------


async def test_the_server_lists_its_tools_resources_templates_and_prompts(session: Session) -> None:
    tools = {c.name: c for c in session.registry.capabilities(SERVER)}
    assert set(tools) == TOOLS
    assert [name for name, c in tools.items() if c.unsupported is not None] == ["simulate-research-query"]
    listed = await session.registry.list_resources(SERVER)
    assert {r["uri"] for r in listed["resources"]} == {
        f"demo://resource/static/document/{path.name}" for path in DOCS.iterdir()
    }
    assert len(listed["resources"]) == 7 and "nextCursor" not in listed
    templates = await session.registry.list_resource_templates(SERVER)
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [TEXT_TEMPLATE, BLOB_TEMPLATE]
    prompts = await session.registry.list_prompts(SERVER)
    arguments = {p["name"]: [a["name"] for a in p.get("arguments", [])] for p in prompts["prompts"]}
    assert arguments == {
        "simple-prompt": [],
        "args-prompt": ["city", "state"],
        "completable-prompt": ["department", "name"],
        "resource-prompt": ["resourceType", "resourceId"],
    }


# -- tools -------------------------------------------------------------------------------------------


async def test_echo(session: Session) -> None:
    assert texts(await session.call("echo", message="hello, everything")) == ["Echo: hello, everything"]
    (request,) = session.asked_about("echo")
    assert request.tool == "everything:echo" and request.call.arguments == {"message": "hello, everything"}
    (approved,) = [
        e for e in session.journaled() if isinstance(e, ApprovalResolved) and e.call_id == "c-echo"
    ]
    assert (approved.tool, approved.decision) == ("everything:echo", "approve")


async def test_get_sum(session: Session) -> None:
    assert texts(await session.call("get-sum", a=19.5, b=22.5)) == ["The sum of 19.5 and 22.5 is 42."]


async def test_get_structured_content(session: Session) -> None:
    result = await session.call("get-structured-content", location="Chicago")
    weather = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert result.structured_content == weather
    assert [json.loads(text) for text in texts(result)] == [weather]


async def test_get_env_is_the_configured_environment_not_dittos(session: Session) -> None:
    (shown,) = texts(await session.call("get-env"))
    environment = json.loads(shown)
    assert environment["GREETING"] == "hello from ditto.yaml"
    assert "PATH" in environment and "EVERY_OFFER_API_TOKEN" not in environment
    assert PARENT_SECRET not in shown


async def test_get_tiny_image_gives_an_image_block(session: Session) -> None:
    result = await session.call("get-tiny-image")
    assert texts(result) == ["Here's the image you requested:", "The image above is the MCP logo."]
    kinds = [block.kind for block in session.blocks("get-tiny-image")]
    assert kinds == ["text", "image", "text"]
    image = session.blocks("get-tiny-image")[1]
    data = image.payload()
    assert image.mime_type == "image/png" and data is not None and data.startswith(b"\x89PNG\r\n\x1a\n")
    assert data[12:16] == b"IHDR" and struct.unpack(">II", data[16:24]) == (20, 20)  # 20 × 20 pixels
    assert image.size == len(data)


async def test_get_resource_links_gives_link_blocks(session: Session) -> None:
    result = await session.call("get-resource-links", count=3)
    assert texts(result) == ["Here are 3 resource links to resources available in this server:"]
    links = [(b.uri, b.name, b.mime_type) for b in session.blocks("get-resource-links") if b.kind == "link"]
    assert links == [
        ("demo://resource/dynamic/blob/1", "Blob Resource 1", "text/plain"),
        ("demo://resource/dynamic/text/2", "Text Resource 2", "text/plain"),
        ("demo://resource/dynamic/blob/3", "Blob Resource 3", "text/plain"),
    ]
    assert [reference.uri for reference in result.references or []] == [uri for uri, _, _ in links]


async def test_get_resource_reference_embeds_the_resource(session: Session) -> None:
    result = await session.call("get-resource-reference", resourceType="Text", resourceId=4)
    assert texts(result)[0] == "Returning resource reference for Resource 4:"
    (embedded,) = [block for block in session.blocks("get-resource-reference") if block.kind == "resource"]
    assert embedded.uri == "demo://resource/dynamic/text/4" and embedded.mime_type == "text/plain"
    assert (embedded.text or "").startswith("Resource 4: This is a plaintext resource created at ")


async def test_get_annotated_message_keeps_the_annotations(session: Session) -> None:
    result = await session.call("get-annotated-message", messageType="error", includeImage=True)
    assert texts(result) == ["Error: Operation failed"]
    assert result.metadata is not None
    assert result.metadata["annotations"] == [
        {"block": 0, "audience": ["user", "assistant"], "priority": 1.0},
        {"block": 1, "audience": ["user"], "priority": 0.5},
    ]
    image = session.blocks("get-annotated-message")[1]
    assert image.kind == "image" and image.annotations == {"audience": ["user"], "priority": 0.5}


async def test_gzip_file_as_resource_inline_and_as_a_link_it_then_serves(session: Session) -> None:
    original = b"Ditto compresses this text; no network is used.\n" * 4
    data_uri = "data:text/plain;base64," + base64.b64encode(original).decode("ascii")
    changes: list[McpOfferChanged] = []
    stop = session.registry.on_offer_change(changes.append)
    try:
        await session.call(
            "gzip-file-as-resource", name="inline.txt.gz", data=data_uri, outputType="resource"
        )
        (inline,) = session.blocks("gzip-file-as-resource")
        payload = inline.payload()
        assert (inline.kind, inline.uri, inline.mime_type) == (
            "resource",
            "demo://resource/session/inline.txt.gz",
            "application/gzip",
        )
        assert payload is not None and gzip.decompress(payload) == original
        result = await session.call("gzip-file-as-resource", name="linked.txt.gz", data=data_uri)
        (link,) = session.blocks("gzip-file-as-resource")
        assert (link.kind, link.uri, link.name) == (
            "link",
            "demo://resource/session/linked.txt.gz",
            "linked.txt.gz",
        )
        assert [reference.uri for reference in result.references or []] == [link.uri]
        await _until(lambda: McpOfferChanged(SERVER, "resources") in changes)
    finally:
        stop()
    (content,) = (await session.registry.read_resource(SERVER, link.uri or ""))["contents"]
    assert content["mimeType"] == "application/gzip"
    assert gzip.decompress(base64.b64decode(content["blob"])) == original
    listed = await session.registry.list_resources(SERVER)
    assert link.uri in {resource["uri"] for resource in listed["resources"]}


async def test_toggle_simulated_logging_sends_log_messages(session: Session) -> None:
    heard: list[McpLogLine] = []
    stop = session.registry.on_log(heard.append)
    try:
        await session.registry.set_logging_level(SERVER, "debug")  # every simulated level is sent
        (started,) = texts(await session.call("toggle-simulated-logging"))
        assert started.startswith("Started simulated, random-leveled logging")
        # the first message is sent at once, the next ones every five seconds
        await _until(lambda: any(line.label == "[log]" and SIMULATED_LOG.search(line.text) for line in heard))
    finally:
        stop()
    (stopped,) = texts(await session.call("toggle-simulated-logging"))
    assert stopped.startswith("Stopped simulated logging")
    assert all(line.server == SERVER for line in heard)


async def test_toggle_subscriber_updates_notifies_a_subscribed_resource(session: Session) -> None:
    uri = "demo://resource/static/document/features.md"
    changes: list[McpOfferChanged] = []
    stop = session.registry.on_offer_change(changes.append)
    await session.registry.subscribe_resource(SERVER, uri)
    try:
        (started,) = texts(await session.call("toggle-subscriber-updates"))
        assert started.startswith("Started simulated resource updated notifications")
        await _until(lambda: McpOfferChanged(SERVER, "resource", uri) in changes)  # the first is at once
        (stopped,) = texts(await session.call("toggle-subscriber-updates"))
        assert stopped.startswith("Stopped simulated resource updates")
    finally:
        await session.registry.unsubscribe_resource(SERVER, uri)
        stop()


async def test_trigger_long_running_operation_reports_progress(session: Session) -> None:
    before = len(session.events)
    result = await session.call("trigger-long-running-operation", duration=0.9, steps=3)
    assert texts(result) == ["Long running operation completed. Duration: 0.9 seconds, Steps: 3."]
    progress = [
        event.data
        for event in session.events[before:]
        if isinstance(event, CustomEvent) and event.name == "mcp_progress"
    ]
    assert [(item["progress"], item["total"]) for item in progress] == [(1, 3), (2, 3), (3, 3)]
    assert {item["call_id"] for item in progress} == {"c-trigger-long-running-operation"}


async def test_get_roots_list_is_the_workspace(session: Session) -> None:
    (shown,) = texts(await session.call("get-roots-list"))
    assert shown.startswith("Current MCP Roots (1 total):")
    assert f"1. project\n   URI: {session.workspace.resolve().as_uri()}" in shown


async def test_trigger_elicitation_request_echoes_the_accepted_content(session: Session) -> None:
    result = await session.call("trigger-elicitation-request")
    accepted, inputs, raw = texts(result)
    assert accepted == "✅ User provided the requested information!"
    assert inputs.splitlines() == [
        "User inputs:",
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.com",
        "- Favorite Integer: 42",  # the schema's defaults, filled in by the client
        "- Favorite Number: 3.14",
    ]
    assert json.loads(raw.removeprefix("\nRaw result: "))["content"]["firstLine"] == (
        "It was a dark and stormy night."
    )
    (request,) = [r for r in session.asked if isinstance(r, ElicitationRequest) and r.mode == "form"]
    assert request.message == "Please provide inputs for the following fields:"
    assert request.requested_schema is not None and request.requested_schema["required"] == ["name"]
    (decision,) = [
        d for d in session.decisions() if d["request"] == "elicitation" and d["decision"] == "accept"
    ]
    assert decision["by"] == "person" and decision["content"]["name"] == "Ada Lovelace"


async def test_trigger_url_elicitation_declined_shows_the_url_and_host(session: Session) -> None:
    result = await session.call("trigger-url-elicitation", url=URL, message="Approve the login.")
    assert texts(result)[0].startswith("❌ User declined to open the URL")
    (request,) = [r for r in session.asked if isinstance(r, ElicitationRequest) and r.mode == "url"]
    assert (request.url, request.host, request.url_allowed) == (URL, "login.example.com", True)
    assert request.message == "Approve the login."
    assert [d["decision"] for d in session.decisions() if d["request"] == "elicitation"][-1] == "decline"


async def test_trigger_sampling_request_is_answered_by_the_model_after_the_person(session: Session) -> None:
    (shown,) = texts(await session.call("trigger-sampling-request", prompt="a haiku, please", maxTokens=30))
    sampled = json.loads(shown.removeprefix("LLM sampling result: \n"))
    assert sampled == {
        "model": "scripted-model",
        "stopReason": "endTurn",
        "role": "assistant",
        "content": {"type": "text", "text": MODEL_TEXT},
    }
    (request,) = [r for r in session.asked if isinstance(r, SamplingRequest)]
    assert request.max_tokens == 30 and request.system_prompt == "You are a helpful test server."
    assert (
        request.messages[0]["content"]["text"] == "Resource trigger-sampling-request context: a haiku, please"
    )
    (review,) = [r for r in session.asked if isinstance(r, SamplingResultReview)]
    assert review.text == MODEL_TEXT
    steps = [
        (d["request"], d["decision"], d["by"])
        for d in session.decisions()
        if d["request"].startswith("sampling")
    ]
    assert steps == [("sampling", "approve", "person"), ("sampling_result", "approve", "person")]


async def test_simulate_research_query_is_refused_before_any_approval(session: Session) -> None:
    capability = session.registry.known_capability(SERVER, "simulate-research-query")
    assert capability is not None and capability.unsupported is not None
    assert "taskSupport: required" in capability.unsupported
    result = await session.call("simulate-research-query", topic="tasks", ambiguous=False)
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "MCP_TOOL_UNSUPPORTED" and capability.unsupported in result.error.message
    assert session.asked_about("simulate-research-query") == []


# -- resources, templates, prompts, completions ----------------------------------------------------------


async def test_every_static_resource_reads_as_its_document(session: Session) -> None:
    listed = await session.registry.list_resources(SERVER)
    static = [r for r in listed["resources"] if r["uri"].startswith("demo://resource/static/")]
    assert len(static) == 7
    for resource in static:
        (content,) = (await session.registry.read_resource(SERVER, resource["uri"]))["contents"]
        assert (content["uri"], content["mimeType"]) == (resource["uri"], "text/markdown")
        assert content["text"] == (DOCS / resource["name"]).read_text(encoding="utf-8")
    assert session.registry.server_info(SERVER).instructions == (DOCS / "instructions.md").read_text("utf-8")


async def test_both_templates_read_with_an_id(session: Session) -> None:
    (text,) = (await session.registry.read_resource(SERVER, "demo://resource/dynamic/text/5"))["contents"]
    assert text["text"].startswith("Resource 5: This is a plaintext resource created at ")
    (blob,) = (await session.registry.read_resource(SERVER, "demo://resource/dynamic/blob/6"))["contents"]
    decoded = base64.b64decode(blob["blob"]).decode("utf-8")
    assert decoded.startswith("Resource 6: This is a base64 blob created at ")


async def test_a_template_variable_completes(session: Session) -> None:
    ref = {"type": "ref/resource", "uri": TEXT_TEMPLATE}
    empty = await session.registry.complete(SERVER, ref, {"name": "resourceId", "value": ""})
    assert empty["values"] == []  # only a positive whole number is a resourceId
    typed = await session.registry.complete(SERVER, ref, {"name": "resourceId", "value": "17"})
    assert typed["values"] == ["17"]


async def test_every_prompt_with_its_arguments(session: Session) -> None:
    async def first_text(prompt: str, **arguments: str) -> str:
        got = await session.registry.get_prompt(SERVER, prompt, arguments)
        return str(got["messages"][0]["content"]["text"])

    assert await first_text("simple-prompt") == "This is a simple prompt without arguments."
    assert await first_text("args-prompt", city="Springfield", state="Oregon") == (
        "What's weather in Springfield, Oregon?"
    )
    assert await first_text("completable-prompt", department="Sales", name="Eve") == (
        "Please promote Eve to the head of the Sales team."
    )
    got = await session.registry.get_prompt(
        SERVER, "resource-prompt", {"resourceType": "Text", "resourceId": "3"}
    )
    intro, embedded = got["messages"]
    assert intro["content"]["text"] == (
        "This prompt includes the Text resource with id: 3. Please analyze the following resource:"
    )
    resource = embedded["content"]["resource"]
    assert resource["uri"] == "demo://resource/dynamic/text/3"
    assert resource["text"].startswith("Resource 3: This is a plaintext resource created at ")


async def test_a_prompt_argument_completes_with_the_other_as_context(session: Session) -> None:
    ref = {"type": "ref/prompt", "name": "completable-prompt"}
    departments = await session.registry.complete(SERVER, ref, {"name": "department", "value": "S"})
    assert departments["values"] == ["Sales", "Support"]
    names = await session.registry.complete(
        SERVER, ref, {"name": "name", "value": ""}, {"department": "Engineering"}
    )
    assert names["values"] == ["Alice", "Bob", "Charlie"]
