"""Commands over recorded runs: ``runs``, ``replay RUN``, ``audit RUN [--json]``, ``policy check RUN``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ditto_tui.sanitize import escape_controls, escape_unprintable

if TYPE_CHECKING:  # the journal's readers load when a command reads a journal, not for the parser
    from ditto_tui.config import RuntimeConfig
    from ditto_tui.supervise.audit import CallRecord, PolicyCheck
    from ditto_tui.supervise.journal import JournalRead, RunSummary

COMMANDS = frozenset({"runs", "replay", "audit", "policy"})
"""The subcommands this module handles."""

RUN_HELP = "a run id (or a unique prefix of one) from `ditto-tui runs`, or the path of a .jsonl journal"
_DIGEST_CHARS = 12

ConfigLoader = Callable[[str | None, Path], "RuntimeConfig"]
Replayer = Callable[["JournalRead"], int]


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the commands on the CLI's subparsers."""
    runs = commands.add_parser(
        "runs",
        help="list the recorded runs of the workspace",
        description="List the runs of the workspace, as journaled in the user's state directory: id, "
        "graph, start, duration, outcome and approvals by decision.",
    )
    runs.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per run: run_id, graph, started_at, status, duration_ms, approvals, path",
    )
    replay = commands.add_parser(
        "replay",
        help="reopen a recorded run, read-only",
        description="Open a recorded run in the Run screen, rebuilt from its journal, and step through its "
        "events (n next, b back, s start, e end). Nothing is executed again.",
    )
    audit = commands.add_parser(
        "audit",
        help="print the approval trail of a recorded run",
        description="For every tool and MCP call of the run: who decided, what, when, the decision, the "
        "digests, and what executed, was observed and delivered.",
    )
    audit.add_argument("--json", action="store_true", help="print the trail as JSON")
    policy = commands.add_parser("policy", help="try the approval policy against recorded runs")
    checks = policy.add_subparsers(dest="policy_command", required=True)
    check = checks.add_parser(
        "check",
        help="what the current policy would decide for each call of a recorded run",
        description="For each recorded tool call, what the approval policy of the current config (--config, "
        "a trusted workspace's ditto.yaml, your own or the built-in one) would decide, beside what the "
        "run's own policy decided.",
    )
    for command in (replay, audit, check):
        command.add_argument("run", help=RUN_HELP)


def run_command(
    args: argparse.Namespace, load_config: ConfigLoader, replay: Replayer, out: TextIO | None = None
) -> int:
    """Run one of :data:`COMMANDS`; returns the exit code (errors raise ``DittoError``).

    ``replay`` opens a journal in the UI (the CLI passes it, so that this module never loads Textual).
    """
    from ditto_tui.supervise import ApprovalPolicy
    from ditto_tui.supervise.audit import policy_check
    from ditto_tui.supervise.journal import find_journal, list_runs, read_journal

    out = out or sys.stdout
    workspace = Path(args.workspace).resolve()
    if args.command == "runs":
        summaries = list_runs(workspace)
        if args.json:
            for summary in summaries:
                print(escape_unprintable(json.dumps(run_json(summary), ensure_ascii=False)), file=out)
        else:
            print_runs(summaries, out)
        return 0
    journal = read_journal(find_journal(args.run, workspace))
    for problem in journal.problems():
        print(f"ditto-tui: {safe(journal.path.name)}: {safe(problem)}", file=sys.stderr)
    if args.command == "replay":
        return replay(journal)
    if args.command == "audit":
        if args.json:
            print(json.dumps(audit_json(journal), indent=2, ensure_ascii=True), file=out)
        else:
            print_audit(journal, out)
        return 0
    config = load_config(args.config, workspace)
    policy = ApprovalPolicy.from_config(config.approval)
    print_policy_check(journal, policy_check(journal, policy), out)
    return 0


# -- text helpers -----------------------------------------------------------------------------------------


def safe(value: object) -> str:
    """``value`` as one line the terminal shows literally: every unprintable character escaped."""
    return escape_controls(value if isinstance(value, str) else str(value))


def when(at: float | None) -> str:
    """A local date and time to the second, or ``-``."""
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def clock(at: float | None) -> str:
    """A local time to the millisecond, or ``-``."""
    if at is None:
        return "-"
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"


def duration(ms: float | None) -> str:
    """``850ms``, ``4.2s``, ``3m05s``, or ``-``."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.0f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(int(ms / 1000), 60)
    return f"{minutes}m{seconds:02d}s"


def _table(rows: Iterable[tuple[str, ...]], out: TextIO) -> None:
    rows = list(rows)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip(), file=out)


# -- runs -------------------------------------------------------------------------------------------------


def approvals_text(approvals: Mapping[str, int]) -> str:
    """``approve 2, deny 1``, or ``-`` when nothing asked."""
    return ", ".join(f"{decision} {count}" for decision, count in sorted(approvals.items())) or "-"


def run_json(summary: RunSummary) -> dict[str, Any]:
    """One line of ``ditto-tui runs --json``."""
    return {
        "run_id": summary.run_id,
        "graph": summary.graph,
        "started_at": summary.started_at,
        "status": summary.outcome,
        "duration_ms": summary.duration_ms,
        "approvals": dict(summary.approvals),
        "path": str(summary.path),
        "waiting_on": summary.waiting_on,
        **({"client": summary.client} if summary.client is not None else {}),
    }


def print_runs(summaries: list[RunSummary], out: TextIO) -> None:
    """The table of ``ditto-tui runs``."""
    if not summaries:
        print(
            "No recorded runs for this workspace (runs are journaled unless --no-journal is given).", file=out
        )
        return
    header = ("RUN", "GRAPH", "STARTED", "DURATION", "OUTCOME", "APPROVALS")
    rows = [
        (
            safe(summary.run_id),
            safe(summary.graph if summary.client is None else f"{summary.graph} ({summary.client})"),
            when(summary.started_at),
            duration(summary.duration_ms),
            summary.outcome,
            approvals_text(summary.approvals),
        )
        for summary in summaries
    ]
    _table([header, *rows], out)
    for summary in summaries:
        if summary.outcome == "interrupted":
            stopped = f" while waiting for {safe(summary.waiting_on)}" if summary.waiting_on else ""
            print(
                f"{safe(summary.run_id)} was interrupted{stopped}: its process ended before the run did "
                "(nothing of it runs any more; run it again to redo it).",
                file=out,
            )


# -- audit ------------------------------------------------------------------------------------------------


def _short(digest: str | None) -> str:
    return "-" if digest is None else digest[:_DIGEST_CHARS] + "…"


def _arguments(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr)
    return safe(text if len(text) <= 200 else text[:199] + "…")


def print_audit(journal: JournalRead, out: TextIO) -> None:
    """The approval trail as text: one block per call."""
    from ditto_tui.supervise.audit import call_records

    header = journal.header
    outcome = journal.outcome
    print(
        f"Run {safe(journal.run_id)} · {safe(header.get('program') or header.get('plan') or '')} · "
        f"{when(journal.started.at if journal.started else None)} · {outcome}",
        file=out,
    )
    approver = safe(header.get("approver") or "not recorded")
    print(f"Approver: {approver} · user {safe(header.get('user') or '-')}", file=out)
    records = call_records(journal)
    if not records:
        print("No tool or MCP calls.", file=out)
    for record in records:
        print(file=out)
        _print_record(header, record, out)


def _print_record(header: Mapping[str, Any], record: CallRecord, out: TextIO) -> None:
    from ditto_tui.supervise.audit import NO_DECISION, decided_by

    node = f"  (node {safe(record.node_id)})" if record.node_id else ""
    print(f"{safe(record.call_id)}  {safe(record.tool)}{node}", file=out)
    lines: list[tuple[str, str]] = []
    if record.request_id is not None:
        rule = safe(record.rule) if record.rule else "the tool asks"
        lines.append(("requested", f"{clock(record.requested_at)}  {rule}  ({safe(record.request_id)})"))
    who = safe(decided_by(header, record)) + (f" via {safe(record.via)}" if record.via else "")
    said = record.reason if record.decided_by not in ("rule", "default") else None  # who says it all
    reason = f": {safe(said)}" if said else ""
    if record.decision is None:
        lines.append(("decided", f"by {who}"))
    elif record.decision in NO_DECISION:
        lines.append(("decided", f"{clock(record.decided_at)}  {NO_DECISION[record.decision]}{reason}"))
    else:
        edited = " (arguments edited)" if record.edited else ""
        lines.append(("decided", f"{clock(record.decided_at)}  {record.decision}{edited} by {who}{reason}"))
    lines.append(("arguments", _arguments(record.arguments)))
    if record.edited and record.executed_arguments is not None:
        lines.append(("ran with", _arguments(record.executed_arguments)))
        lines.extend(("", safe(line)) for line in record.arguments_diff())
    if record.arguments_digest is not None:
        digests = f"arguments {_short(record.arguments_digest)} ({record.digest_check})"
        lines.append(("digests", f"{digests}, tool {_short(record.tool_digest)}"))
    lines.append(("executed", f"{safe(record.outcome)}  {duration(record.duration_ms)}"))
    if record.observation is not None:
        lines.append(("observed", safe(record.observation)))
    if record.delivery is not None:
        lines.append(("delivered", safe(record.delivery)))
    for label, text in lines:
        print(f"  {label:<10} {text}", file=out)


def audit_json(journal: JournalRead) -> dict[str, Any]:
    """The approval trail as JSON data."""
    from ditto_tui.supervise.audit import call_records

    header = journal.header
    return {
        "runId": journal.run_id,
        "program": header.get("program"),
        "plan": header.get("plan"),
        "approver": header.get("approver"),
        "user": header.get("user"),
        "outcome": journal.outcome,
        "truncatedTail": journal.truncated_tail,
        "calls": [_record_json(header, record) for record in call_records(journal)],
    }


def _record_json(header: Mapping[str, Any], record: CallRecord) -> dict[str, Any]:
    from ditto_tui.supervise.audit import decided_by

    return {
        "callId": record.call_id,
        "tool": record.tool,
        "server": record.server,
        "nodeId": record.node_id,
        "requestId": record.request_id,
        "requestedAt": record.requested_at,
        "rule": record.rule,
        "decision": record.decision,
        "decidedBy": decided_by(header, record),
        "via": record.via,
        "decidedAt": record.decided_at,
        "reason": record.reason,
        "edited": record.edited,
        "arguments": record.arguments,
        "executedArguments": record.ran_with,
        "argumentsDiff": record.arguments_diff(),
        "argumentsDigest": record.arguments_digest,
        "digestCheck": record.digest_check,
        "toolDigest": record.tool_digest,
        "executed": record.executed,
        "outcome": record.outcome,
        "status": record.status,
        "errorCode": record.error_code,
        "durationMs": record.duration_ms,
        "observation": record.observation,
        "delivery": record.delivery,
        "redacted": record.redacted,
    }


# -- policy check -----------------------------------------------------------------------------------------


def _verdict(check: PolicyCheck, now: bool) -> str:
    verdict = check.now if now else check.then
    if verdict is None:
        return "not recorded"
    if verdict.depends:
        return "unknown (not recorded)"
    return f"{verdict.decision} ({safe(verdict.rule) if verdict.rule else 'no rule'})"


def print_policy_check(journal: JournalRead, checks: list[PolicyCheck], out: TextIO) -> None:
    """For each call: what happened, what the run's policy said, what the given policy says now."""
    print(f"Run {safe(journal.run_id)}: {len(checks)} recorded call(s)", file=out)
    if not checks:
        return
    header = ("CALL", "TOOL", "RECORDED", "POLICY THEN", "POLICY NOW", "")
    rows = [
        (
            safe(check.record.call_id),
            safe(check.record.tool),
            safe(check.record.decision or check.record.outcome),
            _verdict(check, now=False),
            _verdict(check, now=True),
            "changed" if check.changed else "unknown" if check.unknown else "",
        )
        for check in checks
    ]
    _table([header, *rows], out)
    changed = sum(check.changed for check in checks)
    print(f"{changed} of {len(checks)} call(s) would be decided differently.", file=out)
    unknown = [check for check in checks if check.unknown]
    if unknown:
        needs = sorted(
            {rule for check in unknown for rule in (*check.now.depends, *(check.then or check.now).depends)}
        )
        print(
            f"{len(unknown)} call(s) cannot be checked: the journal does not record what decides "
            f"{'; '.join(safe(rule) for rule in needs)}.",
            file=out,
        )
