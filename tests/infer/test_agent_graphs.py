"""The agent and web-search graphs run headless: denied and allowed, against real loopback servers."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.__main__ import main
from ditto_tui.config import RuntimeConfig, load_runtime_config_file, parse_runtime_config
from ditto_tui.errors import ConfigError
from ditto_tui.headless import run_headless
from ditto_tui.program import load_program
from ditto_tui.runtime import LoopDefinition
from tests.infer.chat_server import ChatServer, Reply, chat_server

ROOT = Path(__file__).resolve().parents[2]
KEY = "BSA-test-key-0123456789"


def events_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


async def run(graph: str, config: RuntimeConfig, workspace: Path, approve: str) -> list[dict[str, Any]]:
    program = load_program(ROOT / "graphs" / graph, config, workspace)
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(program, config, workspace, approve=approve, out=out, err=err)  # type: ignore[arg-type]
    assert code == 0, err.getvalue()
    return events_of(out.getvalue())


def delivered(events: list[dict[str, Any]]) -> list[Any]:
    return [
        e["input"]["message"]["content"]
        for e in events
        if e["kind"] == "node_started" and e["node_type"] == "INTERACTION.OUTPUT"
    ]


# --- the ReAct agent (the default graph) -----------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for name in ("README.md", "ditto.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def tool_calls(events: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Nested ``act/<call id>`` nodes: call id → (node type, result status)."""
    calls = {}
    for event in events:
        if event["kind"] == "node_finished" and event["node_id"].startswith("act/"):
            output = event["output"]
            result = output.get("result", output)
            calls[event["node_id"][4:]] = (event["node_type"], result["status"])
    return calls


@pytest.mark.parametrize("approve", ["allow", "deny"])
async def test_the_react_agent_reads_asks_mcp_writes_with_approval_and_answers(
    workspace: Path, approve: str
) -> None:
    config = load_runtime_config_file(workspace / "ditto.yaml", {})
    events = await run("react_agent.py", config, workspace, approve)
    allowed = approve == "allow"
    assert tool_calls(events) == {
        "ls-1": ("INTERACTION.ACT.TOOL", "success"),
        "head-1": ("INTERACTION.ACT.TOOL", "success"),
        "notes-1": ("INTERACTION.ACT.MCP", "success"),
        "write-1": ("INTERACTION.ACT.TOOL", "success" if allowed else "failed"),
    }
    [requested] = [e for e in events if e["kind"] == "approval_requested"]
    assert (requested["tool"], requested["node_id"]) == ("write_text", "act/write-1")
    decisions = [e for e in events if e["kind"] == "approval_resolved"]
    [resolved] = [e for e in decisions if e["decided_by"] not in ("rule", "default")]
    # the reads the policy allowed are decisions on the record too
    assert {e["call_id"] for e in decisions if e["decided_by"] in ("rule", "default")} >= {"ls-1", "head-1"}
    assert resolved["decision"] == ("approve" if allowed else "deny")
    note = workspace / ".ditto/notes/summary.md"
    assert note.exists() is allowed
    [answer] = delivered(events)
    assert ("wrote a summary" in answer) is allowed and ("was denied" in answer) is not allowed
    assert len([e for e in events if e["kind"] == "loop_iteration"]) == 4
    assert "tools/discover-demo" in {e.get("node_id") for e in events}


async def test_the_react_agent_on_a_model_from_ditto_yaml(workspace: Path) -> None:
    script = workspace / "short.yaml"
    script.write_text("turns:\n  - content: Nothing to do.\n", encoding="utf-8")
    base = load_runtime_config_file(workspace / "ditto.yaml", {})
    config = base.model_copy(update={"infer": base.infer.model_copy(update={"script": "short.yaml"})})
    events = await run("react_agent.py", config, workspace, "deny")
    assert delivered(events) == ["Nothing to do."]


# --- web search ----------------------------------------------------------------------------------------


def test_web_search_without_a_key_refuses_to_start_and_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"BRAVE_API_KEY.*interaction\.webSearch\.apiKey"):
        load_program(ROOT / "graphs/web_search.py", RuntimeConfig(), tmp_path)


def test_web_search_without_a_key_is_one_line_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(ROOT / "graphs/web_search.py"), "--headless", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "BRAVE_API_KEY" in err


@pytest.fixture
async def brave() -> AsyncIterator[ChatServer]:
    async with chat_server() as server:
        yield server


def brave_config(server: ChatServer) -> RuntimeConfig:
    origin = f"http://127.0.0.1:{server.port}"
    return parse_runtime_config(
        {
            "sandbox": {"tools": ["web_search"], "network": [origin]},
            "interaction": {"webSearch": {"apiKey": "${BRAVE_API_KEY}", "baseUrl": origin}},
        },
        {"BRAVE_API_KEY": KEY},
    )


async def test_web_search_allowed_searches_and_delivers(brave: ChatServer, tmp_path: Path) -> None:
    results = [{"title": "MCP", "url": "https://modelcontextprotocol.io/", "description": "The protocol."}]
    brave.replies.append(Reply(body={"web": {"results": results}}))
    events = await run("web_search.py", brave_config(brave), tmp_path, "allow")
    [request] = brave.received
    assert request.method == "GET" and request.path.startswith("/res/v1/web/search?q=Model+Context")
    assert request.headers["x-subscription-token"] == KEY
    [content] = delivered(events)
    assert "https://modelcontextprotocol.io/" in json.dumps(content)
    assert KEY not in json.dumps(events)


async def test_web_search_denied_sends_nothing_and_says_so(brave: ChatServer, tmp_path: Path) -> None:
    events = await run("web_search.py", brave_config(brave), tmp_path, "deny")
    assert brave.received == []
    [content] = delivered(events)
    assert "APPROVAL_DENIED" in content and content.startswith("No results for")


async def test_an_approval_request_carries_the_model_message_that_proposed_it(workspace: Path) -> None:
    """The gate reads the proposing message of an agent's call, for a local tool and for an MCP tool."""
    from ditto_tui.session import open_runtime
    from ditto_tui.supervise import ApprovalDecision, ApprovalRequest

    asked: list[ApprovalRequest] = []

    class Recording:
        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision(kind="deny", reason="recorded")

    script = workspace / "calls.yaml"
    script.write_text(
        "turns:\n"
        "  - content: Writing the note, then the demo note.\n"
        "    actions:\n"
        "      - {id: w-1, name: write_text, arguments: {path: a.md, text: hi}}\n"
        "      - {id: m-1, name: mcp__demo__write_note, arguments: {name: n, text: hi}}\n"
        "  - content: Done.\n",
        encoding="utf-8",
    )
    base = load_runtime_config_file(workspace / "ditto.yaml", {})
    config = base.model_copy(update={"infer": base.infer.model_copy(update={"script": "calls.yaml"})})
    program = load_program(ROOT / "graphs" / "react_agent.py", config, workspace)
    assert isinstance(program.plan, LoopDefinition)
    async with open_runtime(program, config, workspace, Recording(), journal=False) as session:
        await session.runtime.loop(program.plan, program.initial)
    assert {request.tool: request.proposal for request in asked} == {
        "write_text": "Writing the note, then the demo note.",
        "demo:write_note": "Writing the note, then the demo note.",
    }


async def test_headless_prints_the_model_text_as_it_streams(workspace: Path) -> None:
    config = load_runtime_config_file(workspace / "ditto.yaml", {})
    events = await run("react_agent.py", config, workspace, "deny")
    deltas = [e for e in events if e["kind"] == "custom" and e["name"] == "message_delta"]
    first = [e["data"]["text"] for e in deltas if "text" in e["data"]][:8]
    assert "".join(first).startswith("Let me look around the workspace first.")
    finished = next(e for e in events if e["kind"] == "node_finished" and e["node_type"] == "INFER.SAMPLE")
    assert events.index(deltas[0]) < events.index(finished), "pieces come before the whole message"
