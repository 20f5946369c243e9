"""Secrets never enter the journal: configured values in every form, credential markers, secret keys.

E-11 decision for the journal: tool output is data and reaches the graph and the model unchanged, but
the journal is a record kept on disk, so it redacts output like everything else and flags each line it
changed with ``"redacted": true``.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from journal_fixtures import journals, make_workspace

from ditto_tui.config import load_runtime_config_file
from ditto_tui.headless import build_runtime
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import CustomEvent, WorkerContext, graph
from ditto_tui.sanitize import REDACTED
from ditto_tui.supervise import StaticApprover, read_journal
from ditto_tui.supervise.journal_lines import LineEncoder
from tests.properties import examples

KEY = "brv-Z9y8X7w6V5u4T3s2q1"
CONFIG = """\
sandbox:
  tools: [echo_secret]
interaction:
  webSearch:
    apiKey: ${BRAVE_API_KEY}
approval:
  rules:
    - tool: echo_*
      decision: ask
"""
GREP_LINE = 'config.ini:3:password = "hunter2"'
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"


def _custom(data: Any) -> CustomEvent:
    return CustomEvent.trusted({"run_id": "run-x", "seq": 1, "at": 1.0, "name": "probe", "data": data})


async def _echo(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    encoded = base64.b64encode(KEY.encode()).decode()
    text = f"{GREP_LINE}\nkey={urllib.parse.quote(KEY)} b64 {encoded} raw {KEY}"
    return {"status": "success", "content": text, "structured_content": {"api_key": "plain-looking"}}


async def test_e04_e11_configured_secrets_and_credentials_never_reach_the_journal(tmp_path: Path) -> None:
    root = make_workspace(tmp_path, CONFIG)
    config = load_runtime_config_file(root / "ditto.yaml", {"BRAVE_API_KEY": KEY})
    tool = Tool(
        name="echo_secret",
        input_schema={"type": "object"},
        effects=[],
        requires_approval=True,
        execute_fn=_echo,
    )
    call = {
        "call": {
            "id": "echo-1",
            "name": "echo_secret",
            "arguments": {"token": TOKEN, "note": f"Bearer {KEY}"},
        }
    }
    plan = graph("secrets").node("echo", "INTERACTION.ACT.TOOL", [], lambda _i, _d: call)
    program = Program(name="secrets", description="", plan=plan, tools=(tool,))
    runtime, _gate = build_runtime(program, config, root, StaticApprover("allow"))
    async with runtime:
        outputs = await runtime.run(plan)
    assert outputs["echo"].content.startswith(GREP_LINE)  # the graph gets the output unchanged
    text = journals(root)[0].read_text(encoding="utf-8")
    for secret in (KEY, urllib.parse.quote(KEY), base64.b64encode(KEY.encode()).decode(), TOKEN, "hunter2"):
        assert secret not in text
    assert "plain-looking" not in text
    journal = read_journal(journals(root)[0])
    flagged = {entry.event.kind for entry in journal.entries if entry.redacted}
    assert flagged == {"node_started", "approval_requested", "node_finished"}
    finished = next(event for event in journal.events if event.kind == "node_finished")
    content = finished.output["content"]  # type: ignore[attr-defined]
    assert content.startswith(f'config.ini:3:password = "{REDACTED}"\n')
    assert finished.output["structuredContent"] == {"api_key": REDACTED}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "kept", "hidden"),
    [
        ("sk-proj-" + "a" * 40, "", "aaaaaaaaaaaa"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic", "dXNlcjpwYXNzd29yZA"),
        ("https://user:pa55word@example.org/path", "example.org/path", "pa55word"),
        ("GET /search?q=x&api_key=abcdef123456", "/search?q=x&api_key=", "abcdef123456"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\ntail",
            "tail",
            "MIIEow",
        ),
        ("xoxb-1234567890-abcdefghij", "", "abcdefghij"),
    ],
)
def test_e01_e02_e03_credential_markers_are_redacted_wherever_they_sit(
    value: str, kept: str, hidden: str
) -> None:
    line = LineEncoder().encode(_custom({"nested": [{"text": value}], value: 1}))
    record = json.loads(line)
    assert record["redacted"] is True and REDACTED in record["data"]["nested"][0]["text"]
    assert kept in record["data"]["nested"][0]["text"]
    assert hidden not in line


def test_lines_without_secrets_are_left_alone_and_not_flagged() -> None:
    line = LineEncoder(("s3cret-value",)).encode(_custom({"text": "a = b, tokens: 3", "n": [1.5, None]}))
    assert json.loads(line) == {
        "kind": "custom",
        "run_id": "run-x",
        "seq": 1,
        "at": 1.0,
        "name": "probe",
        "data": {"text": "a = b, tokens: 3", "n": [1.5, None]},
    }


def test_values_json_cannot_hold_are_written_as_text() -> None:
    line = LineEncoder().encode(_custom({"nan": float("nan"), "set": {1}, 2: "two"}))
    assert json.loads(line)["data"] == {"nan": "nan", "set": "{1}", "2": "two"}


@settings(max_examples=examples(150), deadline=None)
@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    secret=st.text(
        alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=10, max_size=30
    ),
)
def test_a_configured_secret_never_survives_in_any_form(before: str, after: str, secret: str) -> None:
    encoder = LineEncoder((secret,))
    forms = [
        secret,
        urllib.parse.quote(secret, safe=""),
        base64.b64encode(secret.encode()).decode().rstrip("="),
    ]
    payload = {"text": f"{before}{forms[0]}{after}", "list": [f"{forms[1]}{after}", forms[2]]}
    line = encoder.encode(_custom(payload))
    json.loads(line)
    for form in forms:
        assert form not in line
