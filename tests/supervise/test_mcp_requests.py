"""MCP server requests before the person: sampling, elicitation and roots against the real everything server.

The reference ``mcp-server-everything`` registers its sampling, elicitation and roots tools only for a
client that declares those capabilities; a test answerer resolves the inbox's requests as a person would.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.config import parse_config_text
from ditto_tui.contracts import ExternalResult, ToolCall
from ditto_tui.errors import ConfigError, McpError, ValidationError
from ditto_tui.headless import run_headless
from ditto_tui.infer import (
    InferMessage,
    ModelTurn,
    ToolSpec,
    create_openai_compatible_provider,
    create_scripted_provider,
)
from ditto_tui.interaction import McpRegistry, open_mcp_servers
from ditto_tui.program import Program
from ditto_tui.runtime import graph
from ditto_tui.session import open_runtime
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise import Inbox, QueueApprover, StaticApprover
from ditto_tui.supervise.journal import CLIENT_REQUESTS_PLAN, RunJournal, read_journal
from ditto_tui.supervise.mcp_requests import (
    PERSON_MODEL,
    ElicitationAnswer,
    ElicitationRequest,
    McpRequests,
    SamplingAnswer,
    SamplingRequest,
    SamplingResultAnswer,
    SamplingResultReview,
    url_host,
)
from tests.infer.chat_server import ChatServer, Reply, chat_server, completion
from tests.mcp.mcp_helpers import node_server, python_server, sandbox
from tests.supervise.inbox_helpers import Answerer, answering


def everything() -> dict[str, Any]:
    return {"everything": node_server("mcp-server-everything", "stdio")}


async def call(registry: McpRegistry, workspace: Path, name: str, **arguments: Any) -> ExternalResult:
    return await registry.invoke(
        "everything",
        ToolCall(id=f"c-{name}", name=name, arguments=arguments),
        sandbox(workspace, "everything"),
    )


def text_of(result: ExternalResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True)["content"])


@pytest.fixture
def journal(tmp_path: Path) -> RunJournal:
    return RunJournal(tmp_path / "runs", secrets=("hunter2-secret",))


@pytest.fixture
def requests(tmp_path: Path, journal: RunJournal) -> McpRequests:
    workspace = tmp_path / "project"
    workspace.mkdir()
    model = create_scripted_provider([{"content": "Paris is the capital."}], name="scripted-model")
    return McpRequests(
        inbox=QueueApprover(), workspace=workspace, provider=model, recorder=journal, timeout=30
    )


@pytest.fixture
async def registry(requests: McpRequests, tmp_path: Path) -> AsyncIterator[McpRegistry]:
    async with open_mcp_servers(
        everything(), log_dir=tmp_path / "logs", client_requests=requests, allowed=["everything"]
    ) as opened:
        await until_listed(opened, tmp_path)
        yield opened


async def until_listed(registry: McpRegistry, workspace: Path) -> None:
    """Wait until the server lists the tools it registers once it knows the client's capabilities."""
    for _ in range(100):
        listed = await registry.discover("everything", sandbox(workspace, "everything"))
        if {"trigger-sampling-request", "trigger-elicitation-request"} <= {c.name for c in listed}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the everything server never listed its sampling and elicitation tools")


def decisions(journal: RunJournal) -> list[dict[str, Any]]:
    files = sorted(journal.directory.glob("*.jsonl"))
    assert len(files) == 1
    read = read_journal(files[0])
    assert read.header["plan"] == CLIENT_REQUESTS_PLAN and not read.problems()
    return [dict(entry) for entry in read.client_requests()]


def approve(request: Any) -> Any:
    if isinstance(request, SamplingRequest):
        return SamplingAnswer(approves=True)
    assert isinstance(request, SamplingResultReview)
    return SamplingResultAnswer(approves=True)


async def test_approved_sampling_reaches_the_server_with_the_models_text(
    registry: McpRegistry, requests: McpRequests, journal: RunJournal
) -> None:
    seen = answering(requests.inbox, approve)
    result = await call(
        registry, requests.workspace, "trigger-sampling-request", prompt="capital?", maxTokens=42
    )
    assert result.status == "success", result
    assert "Paris is the capital." in text_of(result) and "scripted-model" in text_of(result)
    asked, review = seen
    assert isinstance(asked, SamplingRequest) and asked.server == "everything"
    assert asked.max_tokens == 42 and asked.system_prompt == "You are a helpful test server."
    assert "capital?" in json.dumps(asked.messages)
    assert isinstance(review, SamplingResultReview) and review.text == "Paris is the capital."
    kinds = [(d["request"], d["decision"], d["by"]) for d in decisions(journal)]
    assert kinds == [("sampling", "approve", "person"), ("sampling_result", "approve", "person")]


async def sample_through_a_chat_server(
    tmp_path: Path, journal: RunJournal, answer: Answerer, **arguments: Any
) -> tuple[ExternalResult, ChatServer]:
    """Call the server's sampling tool with an OpenAI-compatible model on a loopback server."""
    async with chat_server() as chat:
        chat.replies.append(Reply(body=completion("Paris.")))
        model = create_openai_compatible_provider(base_url=chat.base_url, model="demo-model", timeout_s=10)
        handler = McpRequests(
            inbox=QueueApprover(), workspace=tmp_path, provider=model, recorder=journal, timeout=30
        )
        answering(handler.inbox, answer)
        async with open_mcp_servers(
            everything(), log_dir=tmp_path / "logs", client_requests=handler
        ) as registry:
            await until_listed(registry, tmp_path)
            result = await call(registry, tmp_path, "trigger-sampling-request", **arguments)
    return result, chat


async def test_the_model_gets_the_system_prompt_and_the_servers_token_limit(
    tmp_path: Path, journal: RunJournal
) -> None:
    result, chat = await sample_through_a_chat_server(
        tmp_path, journal, approve, prompt="capital?", maxTokens=42
    )
    assert "Paris." in text_of(result) and "demo-model" in text_of(result)
    [sent] = chat.received
    assert sent.json["max_tokens"] == 42
    assert sent.json["messages"] == [
        {"role": "system", "content": "You are a helpful test server."},
        {"role": "user", "content": "Resource trigger-sampling-request context: capital?"},
    ]


async def test_a_token_limit_the_person_lowered_is_what_the_model_gets(
    tmp_path: Path, journal: RunJournal
) -> None:
    def lower(request: Any) -> Any:
        if isinstance(request, SamplingRequest):
            return SamplingAnswer(approves=True, params={**request.params, "maxTokens": 7})
        return SamplingResultAnswer(approves=True)

    result, chat = await sample_through_a_chat_server(
        tmp_path, journal, lower, prompt="capital?", maxTokens=42
    )
    assert "Paris." in text_of(result)
    assert [request.json["max_tokens"] for request in chat.received] == [7]
    approved = decisions(journal)[0]
    assert (approved["decision"], approved["edited"]["maxTokens"]) == ("approve", 7)


async def test_an_edited_answer_is_what_the_server_gets(registry: McpRegistry, requests: McpRequests) -> None:
    def edit(request: Any) -> Any:
        if isinstance(request, SamplingResultReview):
            return SamplingResultAnswer(approves=True, text="Edited by the person.")
        return SamplingAnswer(approves=True)

    answering(requests.inbox, edit)
    result = await call(registry, requests.workspace, "trigger-sampling-request", prompt="x")
    assert "Edited by the person." in text_of(result) and "Paris" not in text_of(result)


async def test_rejected_sampling_is_reported_as_a_refusal_and_recorded(
    registry: McpRegistry, requests: McpRequests, journal: RunJournal
) -> None:
    answering(requests.inbox, lambda r: SamplingAnswer(approves=False, reason="not now"))
    result = await call(registry, requests.workspace, "trigger-sampling-request", prompt="capital?")
    assert "the user rejected the sampling request" in json.dumps(result.model_dump(mode="json"))
    assert "Paris" not in json.dumps(result.model_dump(mode="json"))
    assert [(d["request"], d["decision"]) for d in decisions(journal)] == [("sampling", "reject")]


async def test_accepted_elicitation_sends_the_content_with_defaults_filled(
    registry: McpRegistry, requests: McpRequests, journal: RunJournal
) -> None:
    asked: list[ElicitationRequest] = []

    def accept(request: Any) -> Any:
        asked.append(request)
        return ElicitationAnswer(action="accept", content={"name": "Ada hunter2-secret", "check": True})

    answering(requests.inbox, accept)
    result = await call(registry, requests.workspace, "trigger-elicitation-request")
    text = text_of(result)
    assert "User provided the requested information" in text and "- Name: Ada" in text
    assert "Favorite Integer: 42" in text and "It was a dark and stormy night." in text
    (request,) = asked
    assert request.mode == "form" and request.requested_schema is not None
    assert request.requested_schema["required"] == ["name"]
    (decision,) = decisions(journal)
    assert (decision["request"], decision["decision"], decision["content"]["integer"]) == (
        "elicitation",
        "accept",
        42,
    )
    assert "hunter2-secret" not in json.dumps(decision)


async def test_content_that_breaks_the_schema_is_refused(
    registry: McpRegistry, requests: McpRequests, journal: RunJournal
) -> None:
    content = {"name": "Ada", "integer": 1000}  # only the integer is out of its range
    answering(requests.inbox, lambda r: ElicitationAnswer(action="accept", content=content))
    result = await call(registry, requests.workspace, "trigger-elicitation-request")
    assert "User provided" not in text_of(result)
    assert "does not match the requested schema" in json.dumps(result.model_dump(mode="json"))
    assert [(d["request"], d["decision"]) for d in decisions(journal)] == [("elicitation", "invalid")]


async def test_declined_elicitation(
    registry: McpRegistry, requests: McpRequests, journal: RunJournal
) -> None:
    answering(requests.inbox, lambda r: ElicitationAnswer(action="decline"))
    result = await call(registry, requests.workspace, "trigger-elicitation-request")
    assert "User declined" in text_of(result)
    assert [d["decision"] for d in decisions(journal)] == ["decline"]


async def test_url_elicitation_shows_the_host_and_opens_nothing(
    registry: McpRegistry, requests: McpRequests
) -> None:
    asked = answering(requests.inbox, lambda r: ElicitationAnswer(action="cancel"))
    await call(registry, requests.workspace, "trigger-url-elicitation", url="https://example.com/confirm?x=1")
    (request,) = asked
    assert (request.mode, request.url, request.host) == (
        "url",
        "https://example.com/confirm?x=1",
        "example.com",
    )
    assert request.url_allowed


def test_only_plain_http_urls_may_be_opened() -> None:
    assert url_host("https://good.example@evil.example/") == ("evil.example", False)
    assert url_host("javascript:alert(1)")[1] is False
    assert url_host("https://a.example/\x1b]52;c;x\x07")[1] is False
    assert url_host("https://a.example/\u202efdp.exe")[1] is False  # a bidi override hides the real path
    assert url_host("https://аpple.example/") == ("xn--pple-43d.example", False)  # shown in punycode
    assert url_host("https://a.example/path?q=1") == ("a.example", True)


async def test_roots_are_the_workspace(registry: McpRegistry, requests: McpRequests) -> None:
    result = await call(registry, requests.workspace, "get-roots-list")
    assert requests.workspace.resolve().as_uri() in text_of(result)
    assert await requests.list_roots("everything") == [
        {"uri": requests.workspace.resolve().as_uri(), "name": "project"}
    ]


async def test_an_automatic_answerer_leaves_it_to_the_policy(tmp_path: Path, journal: RunJournal) -> None:
    notes: list[str] = []
    handler = McpRequests(
        inbox=Inbox(StaticApprover("allow")), workspace=tmp_path, recorder=journal, notice=notes.append
    )
    async with open_mcp_servers(everything(), log_dir=tmp_path / "logs", client_requests=handler) as registry:
        await until_listed(registry, tmp_path)
        sampled = await call(registry, tmp_path, "trigger-sampling-request", prompt="[bold]x\x1b]52;c;AA\x07")
        elicited = await call(registry, tmp_path, "trigger-elicitation-request")
    assert "Paris" not in text_of(sampled) and "User declined" in text_of(elicited)
    assert [(d["request"], d["decision"], d["by"]) for d in decisions(journal)] == [
        ("sampling", "deny", "policy"),
        ("elicitation", "decline", "policy"),
    ]
    assert len(notes) == 2 and "denied" in notes[0] and "declined" in notes[1]
    assert all("\x1b" not in note and "\x07" not in note for note in notes)


SAMPLE_CALL = {
    "operation": "invoke",
    "server": "everything",
    "call": {"id": "s1", "name": "trigger-sampling-request", "arguments": {"prompt": "hi"}},
}


async def test_headless_denies_and_says_so_in_one_line(tmp_path: Path) -> None:
    plan = graph("sampling").node("ask", "INTERACTION.ACT.MCP", bind=lambda _input, _outputs: SAMPLE_CALL)
    program = Program(name="sampling", description="asks for sampling", plan=plan)
    text = (
        "sandbox:\n  mcp: [everything]\n"
        "mcp:\n  servers:\n    everything:\n      command: {}\n      args: [stdio]\n"
    )
    command = node_server("mcp-server-everything")["command"]
    config = parse_config_text(text.format(json.dumps(command)), {}, name="ditto.yaml")
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(program, config, tmp_path, approve="allow", out=out, err=err) == 0
    (line,) = [line for line in err.getvalue().splitlines() if "asked" in line]
    assert (
        "MCP server everything asked for a model answer (1 message(s)): denied (mcp.sampling: deny)" in line
    )
    assert "sampling is not allowed without a person" in out.getvalue()


def test_policy_keys_default_and_refuse_nonsense() -> None:
    config = parse_config_text("{}", {}, name="ditto.yaml")
    assert (config.mcp.sampling, config.mcp.elicitation) == ("deny", "decline")
    assert parse_config_text("mcp:\n  sampling: approve\n", {}, name="ditto.yaml").mcp.sampling == "approve"
    with pytest.raises(ConfigError, match=r"ditto.yaml:3: mcp.elicitation: "):
        parse_config_text("mcp:\n  sampling: deny\n  elicitation: accept\n", {}, name="ditto.yaml")


async def test_a_changed_workspace_is_announced_to_the_servers_of_a_session(tmp_path: Path) -> None:
    text = (
        "sandbox:\n  mcp: [everything]\n"
        "mcp:\n  servers:\n    everything:\n      command: {}\n      args: [stdio]\n"
    )
    command = node_server("mcp-server-everything")["command"]
    config = parse_config_text(text.format(json.dumps(command)), {}, name="ditto.yaml")
    program = Program(name="noop", description="", plan=graph("noop"))
    moved = tmp_path / "moved"
    moved.mkdir()
    async with open_runtime(
        program, config, tmp_path, approver=StaticApprover("allow"), journal=False
    ) as session:
        registry = session.mcp
        await until_listed(registry, tmp_path)
        session.client_requests.change_workspace(moved)
        for _ in range(50):
            result = await call(registry, tmp_path, "get-roots-list")
            if moved.resolve().as_uri() in text_of(result):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the server never saw the changed roots")


async def test_with_no_model_the_person_writes_the_answer_and_the_server_gets_it(
    tmp_path: Path, journal: RunJournal
) -> None:
    inbox = Inbox()
    asked = answering(inbox, lambda r: SamplingAnswer(approves=True, text="Paris, written by hand."))
    handler = McpRequests(inbox=inbox, workspace=tmp_path, recorder=journal, provider=None, timeout=30)
    async with open_mcp_servers(everything(), log_dir=tmp_path / "logs", client_requests=handler) as registry:
        await until_listed(registry, tmp_path)
        sampled = await call(registry, tmp_path, "trigger-sampling-request", prompt="capital?")
    assert sampled.status == "success", sampled
    assert "Paris, written by hand." in text_of(sampled) and PERSON_MODEL in text_of(sampled)
    (request,) = asked
    assert isinstance(request, SamplingRequest) and not request.has_model
    asked_for, answered = decisions(journal)
    assert (asked_for["request"], asked_for["decision"], asked_for["by"]) == ("sampling", "write", "person")
    assert (answered["request"], answered["decision"], answered["author"]) == (
        "sampling_result",
        "approve",
        "person",
    )
    assert answered["result"] == {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris, written by hand."},
        "model": PERSON_MODEL,
        "stopReason": "endTurn",
    }


async def test_with_no_model_and_no_person_sampling_is_refused_at_once(
    tmp_path: Path, journal: RunJournal
) -> None:
    inbox = Inbox()
    asked: list[Any] = []
    inbox.on_request(asked.append)
    notes: list[str] = []
    handler = McpRequests(
        inbox=inbox,
        workspace=tmp_path,
        recorder=journal,
        provider=None,
        sampling="approve",
        automatic=True,
        notice=notes.append,
    )
    async with open_mcp_servers(everything(), log_dir=tmp_path / "logs", client_requests=handler) as registry:
        await until_listed(registry, tmp_path)
        sampled = await call(registry, tmp_path, "trigger-sampling-request", prompt="hi")
    sent = json.dumps(sampled.model_dump(mode="json"))
    assert "no model is configured" in sent and "infer.provider" in sent
    assert asked == []
    assert [(d["request"], d["decision"], d["by"]) for d in decisions(journal)] == [
        ("sampling", "failed", "policy")
    ]
    (note,) = notes
    assert "asked for a model answer (1 message(s)): refused: no model is configured" in note


# -- an edited request is checked here, whatever the screen checked -------------------------------------

ASKED = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "capital?"}}],
    "systemPrompt": "Be brief.",
    "maxTokens": 42,
}


@pytest.fixture
async def chat() -> AsyncIterator[ChatServer]:
    """A loopback chat-completions server that answers "Paris." once."""
    async with chat_server() as running:
        running.replies.append(Reply(body=completion("Paris.")))
        yield running


def through(chat: ChatServer, workspace: Path, journal: RunJournal) -> McpRequests:
    """Server requests answered by a person (the test) and the model behind ``chat``."""
    model = create_openai_compatible_provider(base_url=chat.base_url, model="demo-model", timeout_s=10)
    return McpRequests(inbox=Inbox(), workspace=workspace, provider=model, recorder=journal, timeout=30)


def edit_then_approve(edit: Mapping[str, Any]) -> Answerer:
    def answer(request: Any) -> Any:
        if isinstance(request, SamplingRequest):
            return SamplingAnswer(approves=True, params={**request.params, **edit})
        return SamplingResultAnswer(approves=True)

    return answer


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ({"maxTokens": 0}, "maxTokens must be a whole number of at least 1"),
        ({"maxTokens": 2.5}, "maxTokens must be a whole number of at least 1"),
        ({"maxTokens": 43}, "maxTokens may be lowered, not raised above the server's 42"),
        ({"messages": []}, "messages must be a list of at least one message"),
        ({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": {"type": "text"}}]}, "messages.0.content"),
        ({"systemPrompt": 7}, "systemPrompt"),
        ({"temperature": 2.0}, "only systemPrompt, messages, maxTokens may be edited, not 'temperature'"),
    ],
)
async def test_an_invalid_edit_is_refused_before_the_model_is_asked(
    tmp_path: Path, journal: RunJournal, chat: ChatServer, edit: dict[str, Any], problem: str
) -> None:
    handler = through(chat, tmp_path, journal)
    answering(handler.inbox, edit_then_approve(edit))
    with pytest.raises(McpError, match="the edited sampling request is not valid") as refused:
        await handler.create_message("srv", ASKED)
    assert problem in refused.value.message
    assert chat.received == []
    (refusal,) = decisions(journal)
    assert (refusal["request"], refusal["decision"], refusal["by"]) == ("sampling", "invalid", "person")
    assert refusal["edited"] == {**ASKED, **edit} and problem in refusal["reason"]


async def test_the_inbox_checks_an_edit_for_the_screen_with_the_same_rules(
    tmp_path: Path, journal: RunJournal, chat: ChatServer
) -> None:
    handler = through(chat, tmp_path, journal)
    problems: list[str] = []

    def check_then_reject(request: Any) -> Any:
        for edit in ({"maxTokens": 100}, {"maxTokens": 10}):
            try:
                handler.inbox.check_arguments(request.request_id, {**request.params, **edit})
            except ValidationError as exc:
                problems.append(exc.message)
            else:
                problems.append("passes")
        return SamplingAnswer(approves=False, reason="checked only")

    answering(handler.inbox, check_then_reject)
    with pytest.raises(McpError, match="rejected"):
        await handler.create_message("srv", ASKED)
    assert problems == ["maxTokens may be lowered, not raised above the server's 42", "passes"]


async def test_a_valid_edit_is_what_the_model_gets(
    tmp_path: Path, journal: RunJournal, chat: ChatServer
) -> None:
    handler = through(chat, tmp_path, journal)
    edit = {
        "systemPrompt": "Answer in French.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "capitale ?"}}],
        "maxTokens": 5,
    }
    answering(handler.inbox, edit_then_approve(edit))
    result = await handler.create_message("srv", ASKED)
    assert result["content"] == {"type": "text", "text": "Paris."}
    [sent] = chat.received
    assert sent.json == {
        "model": "demo-model",
        "messages": [
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "capitale ?"},
        ],
        "max_tokens": 5,
    }


class ThreeArgumentProvider:
    """A provider written to the protocol's three arguments (no ``max_tokens``)."""

    name = "three-argument"

    async def sample(
        self, messages: Sequence[InferMessage], tools: Sequence[ToolSpec], signal: CancelSignal | None = None
    ) -> ModelTurn:
        return ModelTurn(
            message=InferMessage(role="assistant", content="Lyon, then Paris."), finish_reason="stop"
        )


async def test_a_provider_without_max_tokens_still_answers_sampling(
    tmp_path: Path, journal: RunJournal
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    requests = McpRequests(
        inbox=QueueApprover(),
        workspace=workspace,
        provider=ThreeArgumentProvider(),
        recorder=journal,
        timeout=30,
    )
    async with open_mcp_servers(
        everything(), log_dir=tmp_path / "logs", client_requests=requests, allowed=["everything"]
    ) as opened:
        await until_listed(opened, tmp_path)
        answering(requests.inbox, approve)
        result = await call(opened, workspace, "trigger-sampling-request", prompt="capital?", maxTokens=42)
    assert result.status == "success" and "Lyon, then Paris." in text_of(result)


# -- V-10: a field that says it holds a secret is redacted on the record, not on its way --------------

SECRET_FORM = {
    "label": {"title": "API token"},
    "vault": {"title": "Vault", "description": "The PASSWORD of the vault"},
    "words": {"title": "Recovery words", "description": "Your wallet's passphrase"},
    "service": {"title": "Service", "description": "Which api key to use"},
    "pin_code": {"title": "Code", "description": "Four digits"},
    "note": {"title": "Note", "description": "Anything else, spinning or not"},
}
SECRET_VALUES = {
    "label": "tok-LABEL-1111",
    "vault": "pw-VAULT-2222",
    "words": "phrase-WORDS-3333",
    "service": "key-SERVICE-4444",
    "pin_code": "5555",
    "note": "kept on the record",
}


async def ask_form(handler: McpRequests, tmp_path: Path, fields: Mapping[str, Any]) -> ExternalResult:
    entries = {"asking": python_server("asking.py")}
    async with open_mcp_servers(
        entries, log_dir=tmp_path / "logs", client_requests=handler, allowed=["asking"]
    ) as registry:
        call = ToolCall(id="form", name="ask_form", arguments={"fields": fields})
        return await registry.invoke("asking", call, sandbox(tmp_path, "asking"))


def received(result: ExternalResult) -> dict[str, Any]:
    assert result.status == "success", result
    assert isinstance(result.structured_content, Mapping)
    text = result.structured_content["result"]
    assert isinstance(text, str)
    answer: dict[str, Any] = json.loads(text)
    return answer


async def test_v10_a_field_whose_title_or_description_says_secret_is_redacted_on_the_record(
    tmp_path: Path, journal: RunJournal
) -> None:
    handler = McpRequests(inbox=Inbox(), workspace=tmp_path, recorder=journal, timeout=30)
    answering(handler.inbox, lambda r: ElicitationAnswer(action="accept", content=SECRET_VALUES))
    answer = received(await ask_form(handler, tmp_path, SECRET_FORM))
    assert answer == {"action": "accept", "content": SECRET_VALUES}  # the server gets the real values
    (decision,) = decisions(journal)
    assert decision["content"] == {
        "label": "<redacted>",
        "vault": "<redacted>",
        "words": "<redacted>",
        "service": "<redacted>",
        "pin_code": "<redacted>",
        "note": "kept on the record",
    }
    recorded = [path.read_text() for path in (tmp_path / "runs").glob("*")]
    logged = [path.read_text() for path in (tmp_path / "logs").rglob("*") if path.is_file()]
    for value in [v for name, v in SECRET_VALUES.items() if name != "note"]:
        assert not any(value in text for text in recorded + logged), value


def test_v10_the_words_that_say_secret_and_those_that_do_not() -> None:
    from ditto_tui.supervise.mcp_requests import recorded_content

    def kept(spec: Mapping[str, Any], name: str = "field") -> Any:
        schema = {"type": "object", "properties": {name: {"type": "string", **spec}}}
        return recorded_content(schema, {name: "value"})[name]

    for said in ("Secret", "Access Token", "apiKey", "API_KEY", "Credentials", "Passwd", "Passphrase"):
        assert kept({"title": said}) == "<redacted>", said
        assert kept({"description": f"the {said} to use"}) == "<redacted>", said
    assert kept({}, name="userPassword") == "<redacted>"
    for said in ("Shipping address", "Your opinion", "Colour", "Do not give us your pin"):
        assert kept({"title": said, "description": said}) == "value", said


# -- V-08: a library approver answers sampling and elicitation, on the record as itself -----------------


class HouseRules:
    """A library approver that answers server requests and tool calls, by name."""

    name = "house-rules"
    request_kinds = frozenset({"tool_call", "sampling", "sampling_result", "elicitation"})

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def decide(self, request: Any) -> Any:
        self.asked.append(request.kind)
        if isinstance(request, SamplingRequest):
            return SamplingAnswer(approves=True)
        if isinstance(request, SamplingResultReview):
            return SamplingResultAnswer(approves=True, text="Approved by the house rules.")
        assert isinstance(request, ElicitationRequest)
        return ElicitationAnswer(action="accept", content={"name": "Ada", "check": True})


async def test_v08_a_library_approver_answers_sampling_and_elicitation_and_is_named_on_the_record(
    tmp_path: Path, journal: RunJournal
) -> None:
    approver = HouseRules()
    model = create_scripted_provider([{"content": "Paris is the capital."}], name="scripted-model")
    handler = McpRequests(inbox=Inbox(approver), workspace=tmp_path, provider=model, recorder=journal)
    assert handler.unattended
    async with open_mcp_servers(everything(), log_dir=tmp_path / "logs", client_requests=handler) as registry:
        await until_listed(registry, tmp_path)
        sampled = await call(registry, tmp_path, "trigger-sampling-request", prompt="capital?")
        elicited = await call(registry, tmp_path, "trigger-elicitation-request")
    assert "Approved by the house rules." in text_of(sampled)
    assert "User provided the requested information" in text_of(elicited) and "Ada" in text_of(elicited)
    assert approver.asked == ["sampling", "sampling_result", "elicitation"]
    assert [(d["request"], d["decision"], d["by"], d.get("approver")) for d in decisions(journal)] == [
        ("sampling", "approve", "approver", "house-rules"),
        ("sampling_result", "edit", "approver", "house-rules"),
        ("elicitation", "accept", "approver", "house-rules"),
    ]


class NamelessRefuser:
    """An approver that answers every kind (no ``request_kinds``) and no name: it refuses with a reason."""

    async def decide(self, request: Any) -> Any:
        if isinstance(request, ElicitationRequest):
            return ElicitationAnswer(action="decline")
        return SamplingAnswer(approves=False, reason="no sampling here")


async def test_v08_an_approver_that_refuses_is_named_by_its_class_and_one_that_answers_no_kind_is_not_asked(
    tmp_path: Path, journal: RunJournal
) -> None:
    model = create_scripted_provider([{"content": "Paris."}], name="scripted-model")
    handler = McpRequests(
        inbox=Inbox(NamelessRefuser()), workspace=tmp_path, provider=model, recorder=journal
    )
    with pytest.raises(McpError, match="the approver rejected the sampling request"):
        await handler.create_message("srv", ASKED)
    assert await handler.elicit("srv", {"message": "name?", "requestedSchema": {"type": "object"}}) == {
        "action": "decline"
    }
    tools_only = McpRequests(inbox=Inbox(StaticApprover("allow")), workspace=tmp_path, recorder=journal)
    with pytest.raises(McpError, match="not allowed without a person"):
        await tools_only.create_message("srv", ASKED)
    assert [
        (d["request"], d["decision"], d["by"], d.get("approver"), d.get("reason")) for d in decisions(journal)
    ] == [
        ("sampling", "reject", "approver", "NamelessRefuser", "no sampling here"),
        ("elicitation", "decline", "approver", "NamelessRefuser", None),
        ("sampling", "deny", "policy", None, None),
    ]


class RequestsOnly:
    """An approver that approves sampling requests and reviews no results."""

    name = "requests-only"
    request_kinds = frozenset({"sampling"})

    async def decide(self, request: Any) -> Any:
        assert isinstance(request, SamplingRequest)
        return SamplingAnswer(approves=True)


async def test_v08_an_approver_that_reviews_no_results_lets_the_answer_through_on_the_record(
    tmp_path: Path, journal: RunJournal
) -> None:
    model = create_scripted_provider([{"content": "Paris."}], name="scripted-model")
    handler = McpRequests(inbox=Inbox(RequestsOnly()), workspace=tmp_path, provider=model, recorder=journal)
    result = await handler.create_message("srv", ASKED)
    assert result["content"] == {"type": "text", "text": "Paris."}
    asked, answered = decisions(journal)
    assert (asked["decision"], asked["by"], asked["approver"]) == ("approve", "approver", "requests-only")
    assert (answered["request"], answered["by"], answered["approver"], answered["reviewed"]) == (
        "sampling_result",
        "approver",
        "requests-only",
        False,
    )
