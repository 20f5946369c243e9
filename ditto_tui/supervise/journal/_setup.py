"""Wiring a run journal into a runtime: the header that says what runs ran under, and the guarded gate."""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ditto_tui.home import runs_dir
from ditto_tui.interaction.tools import ToolRegistry
from ditto_tui.supervise.approvers import QueueApprover, StaticApprover
from ditto_tui.supervise.gate import ApprovalGate
from ditto_tui.supervise.inbox import approver_name
from ditto_tui.supervise.journal._writer import RunJournal
from ditto_tui.supervise.policy import rule_record


def describe_approver(approver: object) -> str:
    """Who answers the calls that ask, as the audit trail names them."""
    if approver is None:
        return "no approver: calls that ask are denied"
    if isinstance(approver, StaticApprover):
        return f"fixed answer (--approve {approver.answer})"
    if isinstance(approver, QueueApprover):
        return "a person, in the approval view"
    return approver_name(approver)


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return "unknown"


def run_about(*, program: str, gate: ApprovalGate, tools: ToolRegistry, approver: object) -> dict[str, Any]:
    """What a journal header records beside the run: program, policy (every rule as written, with its file,
    line and layer), tools, approver and user."""
    definitions = (tools.definition(name) for name in tools.names())
    return {
        "program": program,
        "policy": [rule_record(rule) for rule in gate.policy.rules],
        "mcp_default": gate.policy.mcp_default,
        "approval_timeout": gate.timeout,
        "tools": {
            definition.name: {
                "requiresApproval": definition.requires_approval,
                "effects": list(definition.effects),
                "digest": definition.digest,
            }
            for definition in definitions
            if definition is not None
        },
        "approver": describe_approver(approver),
        "user": _user(),
    }


def create_run_journal(
    workspace: str | os.PathLike[str],
    *,
    program: str,
    gate: ApprovalGate,
    tools: ToolRegistry,
    approver: object,
    secrets: Iterable[str] = (),
) -> RunJournal:
    """The journal of a workspace's runs: ``<state dir>/workspaces/<W>/runs/<run_id>.jsonl`` (never in W)."""
    root = Path(workspace)
    about = run_about(program=program, gate=gate, tools=tools, approver=approver)
    return RunJournal(runs_dir(root), secrets=secrets, about=about, workspace=root)
