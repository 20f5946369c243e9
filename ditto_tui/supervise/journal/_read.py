"""Reading run journals back: events, header and links; a truncated last line is reported, not fatal."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from ditto_tui.home import runs_dir
from ditto_tui.processes import writer_alive
from ditto_tui.runtime.events import (
    EVENT_TYPES,
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    CustomEvent,
    ExecutionEvent,
    RunFinished,
    RunStarted,
)
from ditto_tui.supervise.clients import client_label
from ditto_tui.supervise.journal._lines import HEADER_KIND, LINKS_KEY, OLD_REDACTED_KEY, REDACTED_KEY
from ditto_tui.supervise.journal._writer import CLIENT_REQUEST, JournalError

MAX_JOURNAL_BYTES = 1 << 30
"""A journal larger than this is refused rather than read into memory."""


@dataclass(frozen=True, kw_only=True)
class JournalEntry:
    """One event of a journal, with the line it was read from and what the journal added to it."""

    event: ExecutionEvent
    line: int
    call_id: str | None = None
    delivery_id: str | None = None
    redacted: bool = False


@dataclass(frozen=True, kw_only=True)
class JournalRead:
    """A journal as read back.

    ``truncated_tail`` is True when the file ends inside a line (the process stopped mid-write): that
    line is left out. ``invalid_lines`` numbers the other lines that could not be read (left out too).
    """

    path: Path
    header: Mapping[str, Any]
    entries: tuple[JournalEntry, ...]
    truncated_tail: bool = False
    invalid_lines: tuple[int, ...] = ()
    events: tuple[ExecutionEvent, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(entry.event for entry in self.entries))

    @property
    def run_id(self) -> str:
        """The run's id: from the header, else the first event, else the file name."""
        found = self.header.get("run_id")
        if isinstance(found, str):
            return found
        return self.events[0].run_id if self.events else self.path.stem

    @property
    def started(self) -> RunStarted | None:
        """The ``run_started`` event, if the journal has it."""
        return next((event for event in self.events if isinstance(event, RunStarted)), None)

    @property
    def finished(self) -> RunFinished | None:
        """The ``run_finished`` event; None when the run did not finish (it was killed, or still runs)."""
        return next((event for event in reversed(self.events) if isinstance(event, RunFinished)), None)

    @property
    def outcome(self) -> str:
        """The run's status when it finished, else :func:`unfinished_outcome` (running, interrupted…)."""
        finished = self.finished
        return finished.status if finished is not None else unfinished_outcome(self.header)

    def client_requests(self) -> list[Mapping[str, Any]]:
        """The decisions on MCP server requests (sampling, elicitation) this journal records, in order."""
        return [
            event.data
            for event in self.events
            if isinstance(event, CustomEvent)
            and event.name == CLIENT_REQUEST
            and isinstance(event.data, Mapping)
        ]

    def problems(self) -> list[str]:
        """What was left out while reading, in words (empty when the journal read back whole)."""
        notes = []
        if self.truncated_tail:
            notes.append("the journal ends inside a line (the run stopped mid-write); that line is left out")
        if self.invalid_lines:
            lines = ", ".join(str(line) for line in self.invalid_lines[:5])
            more = "…" if len(self.invalid_lines) > 5 else ""
            notes.append(f"{len(self.invalid_lines)} unreadable line(s) left out: {lines}{more}")
        return notes


def read_journal(path: str | os.PathLike[str]) -> JournalRead:
    """Read the journal at ``path``; raises :class:`JournalError` only when the file cannot be read."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_JOURNAL_BYTES:
            raise JournalError(f"journal {file.name!r} is larger than {MAX_JOURNAL_BYTES} bytes")
        data = file.read_bytes()
    except OSError as exc:
        raise JournalError(f"cannot read journal {file.name!r}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    tail = lines.pop()
    header: dict[str, Any] = {}
    entries: list[JournalEntry] = []
    invalid: list[int] = []
    for number, raw in enumerate(lines, start=1):
        record = _record(raw)
        if record is None:
            if raw.strip():
                invalid.append(number)
            continue
        if record.get("kind") == HEADER_KIND and not header and not entries:
            header = record
            continue
        entry = _entry(record, number)
        if entry is None:
            invalid.append(number)
        else:
            entries.append(entry)
    return JournalRead(
        path=file,
        header=header,
        entries=tuple(entries),
        truncated_tail=bool(tail),
        invalid_lines=tuple(invalid),
    )


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


_EVENTS: pydantic.TypeAdapter[AnyEvent] = pydantic.TypeAdapter(AnyEvent)
"""Parses a journal line into its event class, chosen by ``kind``."""


def _entry(record: dict[str, Any], line: int) -> JournalEntry | None:
    links = record.pop(LINKS_KEY, None)
    redacted = record.pop(REDACTED_KEY, False) is True
    if record.get(OLD_REDACTED_KEY) is True:  # an older journal's marker (no event field is ever True there)
        redacted = bool(record.pop(OLD_REDACTED_KEY))
    if str(record.get("kind")) not in EVENT_TYPES:
        return None
    try:
        event: ExecutionEvent = _EVENTS.validate_python(record)
    except pydantic.ValidationError:
        return None
    links = links if isinstance(links, dict) else {}
    call_id, delivery_id = links.get("callId"), links.get("deliveryId")
    return JournalEntry(
        event=event,
        line=line,
        call_id=call_id if isinstance(call_id, str) else None,
        delivery_id=delivery_id if isinstance(delivery_id, str) else None,
        redacted=redacted,
    )


# -- finding and listing runs -----------------------------------------------------------------------------


def runs_directory(workspace: str | os.PathLike[str]) -> Path:
    """Where the runs of ``workspace`` are journaled."""
    return runs_dir(workspace)


def find_journal(run: str, workspace: str | os.PathLike[str]) -> Path:
    """The journal named by ``run``: a path to a ``.jsonl`` file, a run id, a unique prefix of one, or
    the short id the app and ``grants`` show (the part after the id's last ``-``, or its start)."""
    given = Path(run)
    if given.suffix == ".jsonl" and given.is_file():
        return given
    directory = runs_directory(workspace)
    exact = directory / f"{run}.jsonl"
    if run and "/" not in run and exact.is_file():
        return exact
    matches = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    found = [path for path in matches if run and path.stem.startswith(run)]
    if not found and run and "-" not in run:
        found = [path for path in matches if path.stem.rpartition("-")[2].startswith(run)]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise JournalError(f"{run!r} names {len(found)} runs; give more of the run id")
    raise JournalError(
        f"no journal for {run!r} (no such file, and no run with that id in {str(directory)!r})"
    )


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One line of ``ditto-tui runs``: a recorded run and how it went."""

    run_id: str
    path: Path
    graph: str
    started_at: float | None
    duration_ms: float | None
    outcome: str
    approvals: Mapping[str, int]
    follows: str | None = None
    """The run whose conversation this one continues (a follow-up), if any."""
    waiting_on: str | None = None
    """For a run without an end: the request it was waiting on where its journal stops."""
    input: Any = None
    """The input the run was started on, as its header records it (``has_input`` says whether it does)."""
    has_input: bool = False

    @property
    def client(self) -> str | None:
        """For a session of the MCP gateway (graph ``mcp-gateway``): the client's name and version, as
        the client gave them (untrusted text)."""
        return client_label(self.graph, self.input)


def unfinished_outcome(header: Mapping[str, Any]) -> str:
    """The outcome of a journal with no ``run_finished``: ``recorded`` for calls made outside any run
    (they have none to write), ``running`` while its writer is alive, ``interrupted`` once it is gone
    (killed or crashed), ``unfinished`` when the journal does not say who writes it."""
    if header.get("plan_kind") == "invoke":
        return "recorded"
    alive = writer_alive(header)
    return "unfinished" if alive is None else "running" if alive else "interrupted"


def waiting_on(journal: JournalRead) -> str | None:
    """The request a run without an end was waiting on when its journal stops (``write_text (write-1)``),
    or ``None``: an approval asked and never answered."""
    open_requests: dict[str, str] = {}
    for event in journal.events:
        if isinstance(event, ApprovalRequested):
            open_requests[event.request_id] = f"approval of {event.tool} ({event.call_id})"
        elif isinstance(event, ApprovalResolved):
            open_requests.pop(event.request_id, None)
    return next(reversed(open_requests.values()), None)


def summarize(journal: JournalRead) -> RunSummary:
    """The summary of one journal (its outcome: :attr:`JournalRead.outcome`)."""
    started, finished = journal.started, journal.finished
    resolved = (event for event in journal.events if isinstance(event, ApprovalResolved))
    decisions = Counter(str(event.decision) for event in resolved)
    graph = journal.header.get("plan") or (started.plan if started is not None else "")
    return RunSummary(
        run_id=journal.run_id,
        path=journal.path,
        graph=str(graph),
        started_at=started.at if started is not None else None,
        duration_ms=finished.duration_ms if finished is not None else None,
        outcome=journal.outcome,
        waiting_on=waiting_on(journal) if finished is None else None,
        input=journal.header.get("input"),
        has_input="input" in journal.header,
        approvals=dict(decisions),
        follows=follows if isinstance(follows := journal.header.get("follows"), str) else None,
    )


def list_runs(workspace: str | os.PathLike[str]) -> list[RunSummary]:
    """Every journaled run of ``workspace``, oldest first (an unreadable file is skipped)."""
    directory = runs_directory(workspace)
    if not directory.is_dir():
        return []
    summaries = []
    for path in directory.glob("*.jsonl"):
        try:
            summaries.append(summarize(read_journal(path)))
        except JournalError:
            continue
    return sorted(summaries, key=lambda summary: (summary.started_at or 0.0, summary.run_id))
