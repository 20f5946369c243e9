"""Secrets never enter the journal: configured values in every form, credential markers, secret keys.

E-11 decision for the journal: tool output is data and reaches the graph and the model unchanged, but
the journal is a record kept on disk, so it redacts output like everything else and flags each line it
changed with ``"secretsRedacted": true``.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ditto_tui.__main__ import main
from ditto_tui.config import load_runtime_config_file
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import (
    ApprovalRequested,
    CustomEvent,
    ExecutionEvent,
    NodeFinished,
    NodeStarted,
    WorkerContext,
    graph,
)
from ditto_tui.sanitize import REDACTED
from ditto_tui.session import build_runtime
from ditto_tui.supervise import StaticApprover, read_journal
from ditto_tui.supervise.journal import LineEncoder
from ditto_tui.supervise.journal._lines import REDACTED_KEY
from tests.journal.journal_fixtures import journals, make_workspace
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
    assert record[REDACTED_KEY] is True and REDACTED in record["data"]["nested"][0]["text"]
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


# --- issue 18: redaction works on values, never on the structure of a line ---------------------------

BUILTIN = Path(__file__).resolve().parents[2] / "ditto_tui" / "agent" / "ditto.yaml"


def test_a_one_character_key_leaves_the_journal_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``apiKey: ${KEY}`` with ``KEY=k`` once turned every ``"kind"`` into ``"[REDACTED]ind"``."""
    root = make_workspace(tmp_path, "")
    config = tmp_path / "ditto.yaml"
    text = BUILTIN.read_text(encoding="utf-8").replace(
        "provider: scripted\n", "provider: scripted\n  apiKey: ${KEY}\n"
    )
    config.write_text(text, encoding="utf-8")
    monkeypatch.setenv("KEY", "k")
    argv = ["--headless", "--approve", "allow", "--config", str(config), "--workspace", str(root)]
    assert main(argv) == 0
    lines = journals(root)[0].read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert all("[REDACTED]" not in key for record in records for key in record)
    assert records[0]["kind"] == "journal" and records[-1]["kind"] == "run_finished"
    assert [record["seq"] for record in records[1:]] == sorted(record["seq"] for record in records[1:])
    capsys.readouterr()
    assert main(["runs", "--json", "--workspace", str(root)]) == 0
    (run,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert run["status"] == "succeeded" and run["graph"] == "react-agent"
    assert main(["audit", run["run_id"], "--workspace", str(root)]) == 0
    trail = capsys.readouterr().out
    assert "write-1" in trail and "[REDACTED]" not in trail


def test_a_short_secret_is_redacted_only_as_a_whole_value() -> None:
    line = LineEncoder(("k", "hunter2")).encode(_custom({"k": "kind of k", "key": "k", "pw": "hunter2"}))
    record = json.loads(line)
    assert record["kind"] == "custom" and record[REDACTED_KEY] is True
    assert record["data"] == {"k": "kind of k", "key": REDACTED, "pw": REDACTED}


def test_the_identity_of_a_line_is_never_redacted() -> None:
    secrets = ("custom", "run-x", "1", "probe-secret-value")
    line = LineEncoder(secrets).encode(_custom({"text": "the probe-secret-value", "run": "run-x"}))
    record = json.loads(line)
    assert (record["kind"], record["run_id"], record["seq"]) == ("custom", "run-x", 1)
    assert record["data"] == {"text": f"the {REDACTED}", "run": REDACTED}


def test_keys_holding_a_long_secret_are_redacted_and_kept_apart() -> None:
    line = LineEncoder(("secret-one-value", "secret-two-value")).encode(
        _custom({"secret-one-value": 1, "secret-two-value": 2, "plain": 3})
    )
    assert json.loads(line)["data"] == {REDACTED: 1, f"{REDACTED}#2": 2, "plain": 3}


_SECRET_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdfghijkmnopqrstuvwxyz0123456789-_.+/=:@ %"


@st.composite
def _events(draw: st.DrawFn, secrets: list[str]) -> ExecutionEvent:
    """Any event, its payload built of arbitrary JSON with the secrets planted in keys and values."""
    planted = st.sampled_from(secrets) if secrets else st.nothing()
    text = st.builds("".join, st.lists(st.text(max_size=6) | planted, max_size=4))
    payload = st.recursive(
        st.none() | st.integers(-(10**6), 10**6) | text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=10,
    )
    base = {"run_id": draw(st.from_regex(r"run-[a-z0-9]{1,12}", fullmatch=True)), "seq": draw(st.integers(0))}
    base["at"] = 1.5
    kind = draw(st.sampled_from(["node_started", "node_finished", "approval_requested", "custom"]))
    if kind == "custom":
        return CustomEvent.trusted({**base, "name": draw(text), "data": draw(payload)})
    if kind == "approval_requested":
        fields = {"request_id": "r-1", "call_id": draw(text), "tool": draw(text), "arguments": draw(payload)}
        return ApprovalRequested.trusted({**base, **fields, "arguments_digest": "d", "tool_digest": "t"})
    node = {"node_id": draw(text), "node_type": "INTERACTION.ACT.TOOL", "execution_id": "e-1"}
    if kind == "node_started":
        return NodeStarted.trusted({**base, **node, "input": draw(payload)})
    return NodeFinished.trusted({**base, **node, "duration_ms": 1.0, "output": draw(payload)})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *_strings(item))]
    return []


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), secrets=st.lists(st.text(alphabet=_SECRET_CHARS, min_size=1, max_size=24), max_size=4))
def test_any_secrets_and_any_event_give_a_readable_line_without_the_long_secrets(
    data: st.DataObject, secrets: list[str]
) -> None:
    event = data.draw(_events(secrets))
    long = [secret for secret in secrets if len(secret) >= 8]
    # A secret that is part of what a line must say (its field names, kind, run id, the marker) cannot be
    # both kept and hidden; the property is about every other secret.
    fixed = " ".join(
        [*event.__dict__, event.kind, event.run_id, str(event.seq), REDACTED, REDACTED_KEY, "true"]
    )
    assume(not any(secret in fixed for secret in long))
    line = LineEncoder(tuple(secrets)).encode(event)
    record = json.loads(line)
    assert (record["kind"], record["run_id"], record["seq"]) == (event.kind, event.run_id, event.seq)
    for secret in long:
        assert secret not in line
        assert not any(secret in text for text in _strings(record))
