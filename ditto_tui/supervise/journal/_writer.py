"""The run journal: every event of a run as one JSON line, in the state directory of its workspace."""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ditto_tui.errors import DittoError
from ditto_tui.home import open_private
from ditto_tui.infer.worker import MESSAGE_DELTA
from ditto_tui.processes import writer_identity
from ditto_tui.runtime.events import (
    ApprovalRequested,
    ApprovalResolved,
    CustomEvent,
    ExecutionEvent,
    NodeFailed,
    NodeFinished,
    NodeStarted,
    ReviewRequested,
    ReviewResolved,
    RunStarted,
)
from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.supervise.journal._lines import (
    EVERY_DECISION,
    HEADER_KIND,
    INTERACTION_PREFIX,
    JOURNAL_FORMAT,
    JOURNAL_VERSION,
    OUTPUT,
    LineEncoder,
    Links,
    input_links,
    output_links,
)
from ditto_tui.supervise.policy import VERDICT_EVENT

if TYPE_CHECKING:
    from ditto_tui.runtime import Runtime

logger = logging.getLogger(__name__)

FLUSH_BYTES = 64 * 1024
"""Buffered lines are written out at the latest when they reach this size."""

_PARTS = 100
"""How many journal files one run may have (one per process that ran its nodes, for a durable run)."""
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

_DURABLE = frozenset({"approval_resolved", "review_resolved", "breakpoint_resolved", "run_finished"})
"""Kinds of lines written and fsynced at once: decisions, and the end of a run."""

CLIENT_REQUEST = "mcp_client_request"
"""The ``name`` of the custom event that records a decision on an MCP server's request."""
CLIENT_REQUESTS_PLAN = "mcp-client-requests"
"""The plan of the journal that holds a session's decisions on MCP server requests."""


def _by_policy(event: ExecutionEvent) -> bool:
    return isinstance(event, ApprovalResolved) and event.decided_by in ("rule", "default")


_UNSYNCED_REQUESTS = frozenset({"limit"})
"""Who decided the server requests whose line is written but not fsynced: a refusal by the server's bounds
(too many, too often, too large) lets nothing through, and a flood must not cost an fsync per request."""


class JournalError(DittoError):
    """The run journal could not be written, or a journal could not be found or read."""

    title = "Run journal"
    code = "JOURNAL_ERROR"


class JournalFile(Protocol):
    """Where one run's lines go: append-only bytes that can be made durable."""

    def write(self, data: bytes) -> None:
        """Append all of ``data``, or raise ``OSError``."""
        ...

    def sync(self) -> None:
        """Make everything written so far durable (``fsync``), or raise ``OSError``."""
        ...

    def close(self) -> None:
        """Release the file; later calls change nothing."""
        ...


JournalOpener = Callable[[Path], JournalFile]


class DiskFile:
    """A journal file on disk, created for one run only (mode 0600) and appended with ``os.write``.

    It is opened without following links, in a directory made without following links: a link planted
    where the journal goes is refused (``StateDirError``), never written through.
    """

    def __init__(self, path: Path) -> None:
        self._fd: int | None = open_private(path, append=True, exclusive=True)

    def write(self, data: bytes) -> None:
        """Append all of ``data`` (a short write is continued; a full disk raises)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._descriptor(), view) :]

    def sync(self) -> None:
        """``fsync`` the file."""
        os.fsync(self._descriptor())

    def close(self) -> None:
        """Close the descriptor once."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _descriptor(self) -> int:
        if self._fd is None:
            raise OSError(errno.EBADF, "the journal file is closed")
        return self._fd


def open_journal_file(path: Path) -> JournalFile:
    """The default opener: a :class:`DiskFile`, its directory created (mode 0700) on first use."""
    return DiskFile(path)


@dataclass(eq=False)
class _RunFile:
    """One journaled run: its file, the lines not written yet, and the links of its running calls."""

    path: Path
    file: JournalFile | None = None
    pending: list[str] = field(default_factory=list)
    pending_chars: int = 0
    scheduled: bool = False
    error: JournalError | None = None
    calls: dict[str, Links] = field(default_factory=dict)
    last_decision: int | None = None


class RunJournal:
    """A runtime subscriber that writes every event of each run to ``<directory>/<run_id>.jsonl``.

    The first line says what the run ran under (``about``: program, policy, tools, approver); then one
    line per event, as ``event_json`` prints it, plus ``links`` (the call id or delivery id the event
    concerns). Lines are buffered and written at the end of the event-loop step that produced them;
    a delivery receipt is written at once; ``run_finished`` is written and fsynced before later
    subscribers hear of it. Strings holding configured ``secrets`` or credential markers are redacted,
    tool output included, and the line is flagged.

    It is also the approval gate's :class:`~ditto_tui.supervise.record.DecisionRecorder`
    (``ApprovalGate(recorder=journal)``): :meth:`record` writes and fsyncs a decision, whether or not the
    subscriber has seen it yet, and raises when it could not, so the call it approves does not execute;
    :meth:`ready` refuses to let a run whose journal failed ask anyone. A call made outside any run
    (``runtime.invoke``) is journaled too, from its approval request on, as a run of its own.

    A failure never raises into the run through the subscriber: that run's journal stops,
    :meth:`failure` returns the error, and it is logged and reported as a ``journal_failed`` event.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        secrets: Iterable[str] = (),
        about: Mapping[str, Any] | None = None,
        opener: JournalOpener = open_journal_file,
        workspace: str | os.PathLike[str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self._encoder = LineEncoder(tuple(secrets))
        self._about = dict(about or {})
        self._opener = opener
        self._workspace = workspace
        self._runs: dict[str, _RunFile] = {}
        self._failures: dict[str, JournalError] = {}
        self._runtime: Runtime | None = None
        self._requests_run: str | None = None
        self._requests_seq = itertools.count(1)
        self._follows: str | None = None
        self._input: tuple[Any] | None = None
        self.mode: Callable[[], str] | None = None
        """The session's mode now, written in each run's header (its changes are ``mode_changed`` lines)."""

    def attach(self, runtime: Runtime) -> Callable[[], bool]:
        """Subscribe to ``runtime`` (before any other subscriber); returns the unsubscribe function."""
        self._runtime = runtime
        return runtime.subscribe(self)

    def path_for(self, run_id: str) -> Path:
        """The journal file of ``run_id``."""
        if not _RUN_ID.match(run_id):
            raise JournalError(f"run id {run_id!r} cannot name a journal file")
        return self.directory / f"{run_id}.jsonl"

    def failure(self, run_id: str) -> JournalError | None:
        """Why the journal of ``run_id`` stopped, or None (journaled so far, or not journaled at all)."""
        return self._failures.get(run_id)

    # -- the decision recorder ------------------------------------------------------------------------

    def ready(self, run_id: str) -> None:
        """Raise :class:`JournalError` when the journal of ``run_id`` has failed: ask nobody in vain."""
        failure = self._failures.get(run_id)
        if failure is not None:
            raise JournalError(
                f"the call was not executed: its approval cannot be recorded: {failure.message}"
            )

    def record(self, decision: ApprovalResolved | ReviewResolved) -> None:
        """Write and fsync ``decision`` (an approval, or the end of a result review) now; raise
        :class:`JournalError` when it is not on disk."""
        run = self._runs.get(decision.run_id)
        if run is None and decision.run_id not in self._failures:
            run = self._start_outside_run(decision)
        if run is not None and run.error is None and run.last_decision != decision.seq:
            self._record(decision, run)
        failure = self._failures.get(decision.run_id)
        if failure is not None and isinstance(decision, ReviewResolved):
            raise JournalError(
                f"the result of call {decision.call_id!r} ({decision.tool}) was held back: its review "
                f"could not be recorded: {failure.message}"
            )
        if failure is not None:
            raise JournalError(
                f"call {decision.call_id!r} ({decision.tool}) was approved but not executed: the decision "
                f"could not be recorded: {failure.message}"
            )

    def record_client_request(self, fields: Mapping[str, Any]) -> None:
        """Write and fsync one decision on an MCP server's request (sampling, elicitation) now.

        The decisions of a session go to a journal of their own (plan :data:`CLIENT_REQUESTS_PLAN`), one
        ``custom`` line named :data:`CLIENT_REQUEST` each, redacted as every line is; raises
        :class:`JournalError` when the decision is not on disk, so it is not sent. A refusal by the
        server's bounds (``by: limit``) is written at once but not fsynced.
        """
        run_id = self._requests_run
        if run_id is None or run_id not in self._runs:
            run_id = self._requests_run = f"mcp-requests-{uuid.uuid4().hex[:12]}"
            self._start(
                RunStarted.trusted(
                    {
                        "run_id": run_id,
                        "seq": 0,
                        "at": time.time(),
                        "plan": CLIENT_REQUESTS_PLAN,
                        "plan_kind": "invoke",
                    }
                )
            )
        run = self._runs[run_id]
        if run.error is None:
            event = CustomEvent.trusted(
                {
                    "kind": "custom",
                    "run_id": run_id,
                    "seq": next(self._requests_seq),
                    "at": time.time(),
                    "name": CLIENT_REQUEST,
                    "data": dict(fields),
                }
            )
            self._record(event, run)
            by = fields.get("by")
            self._write(run_id, run, sync=not (isinstance(by, str) and by in _UNSYNCED_REQUESTS))
        failure = self._failures.get(run_id)
        if failure is not None:
            raise JournalError(f"the decision could not be recorded: {failure.message}")

    def close(self) -> None:
        """Close the journals still open (those of calls made outside any run); later events reopen none."""
        for run_id in list(self._runs):
            run = self._runs.pop(run_id)
            self._write(run_id, run, sync=True)
            self._close(run)

    def follow_up(self, run_id: str) -> None:
        """Record in the next run's header that it ``follows`` run ``run_id`` (it continues that run's
        conversation): a follow-up's journal names the run it continues."""
        self._follows = run_id

    def next_input(self, value: Any) -> None:
        """Record ``value`` in the next run's header as its ``input`` (redacted as every line is), so that
        a run cut short can be run again on it."""
        self._input = (value,)

    # -- the subscriber -------------------------------------------------------------------------------

    def __call__(self, event: ExecutionEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            if isinstance(event, RunStarted):
                run = self._start(event)
            elif (
                isinstance(event, ApprovalRequested | ReviewRequested) and event.run_id not in self._failures
            ):
                run = self._start_outside_run(event)
            else:
                return
        if run.error is None and not _streamed_piece(event):
            self._record(event, run)
        if event.kind == "run_finished":
            self._close(run)
            del self._runs[event.run_id]

    def _start_outside_run(
        self, event: ApprovalRequested | ApprovalResolved | ReviewRequested | ReviewResolved
    ) -> _RunFile:
        """A call made with ``runtime.invoke`` has no ``run_started``: its journal opens at its request."""
        started = RunStarted.trusted(
            {
                "run_id": event.run_id,
                "seq": event.seq,
                "at": event.at,
                "plan": "invoke",
                "plan_kind": "invoke",
            }
        )
        return self._start(started)

    def _open_new(self, event: RunStarted) -> tuple[Path, JournalFile]:
        """A new journal file for the run. A run this process joins (a durable run's node, started
        elsewhere: ``plan_kind`` invoke) may have a file of another process already, one that ran its
        nodes before (a worker that stopped): this process's part of the record is a file of its own
        beside it, ``RUN_ID.2.jsonl``... Never an existing file reopened."""
        path = self.path_for(event.run_id)
        if event.plan_kind != "invoke" or not os.path.lexists(path):
            return path, self._opener(path)  # exclusive: a file made meanwhile is refused, not reopened
        for part in range(2, _PARTS):
            path = self.path_for(f"{event.run_id}.{part}")
            if not os.path.lexists(path):
                return path, self._opener(path)
        raise JournalError(f"run {event.run_id!r} has {_PARTS - 1} journal files already")

    def _start(self, event: RunStarted) -> _RunFile:
        run = _RunFile(path=self.directory / f"{event.run_id}.jsonl")
        self._runs[event.run_id] = run
        try:
            run.path, run.file = self._open_new(event)
        except Exception as exc:  # whatever the opener raises, the run is not journaled: say so, fail closed
            self._fail(event.run_id, run, "cannot create", exc)
            return run
        header: dict[str, Any] = {"kind": HEADER_KIND, **self._about}
        header.update(
            kind=HEADER_KIND,
            format=JOURNAL_FORMAT,
            version=JOURNAL_VERSION,
            run_id=event.run_id,
            plan=event.plan,
            plan_kind=event.plan_kind,
            opened_at=event.at,
            decisions=EVERY_DECISION,
            writer=writer_identity(),
        )
        if self.mode is not None:
            header["mode"] = self.mode()
        if self._follows is not None and event.plan_kind != "invoke":
            header["follows"] = self._follows
            self._follows = None
        if self._input is not None and event.plan_kind != "invoke":
            header["input"] = self._input[0]
            self._input = None
        self._append(run, self._encoder.encode_fields(header))
        return run

    def _record(self, event: ExecutionEvent, run: _RunFile) -> None:
        try:
            line = self._encoder.encode(event, self._links(event, run))
        except Exception as exc:  # an event that cannot be recorded must stop the journal, not vanish
            self._write(event.run_id, run, sync=True)
            if run.error is None:
                self._fail(event.run_id, run, "cannot encode an event for", exc)
            return
        self._append(run, line)
        kind = event.kind
        if kind in _DURABLE:
            if kind == "approval_resolved" or kind == "review_resolved":
                run.last_decision = event.seq
            # The policy's own decisions are written before their call runs, not fsynced: the rule is in
            # its file already, and an fsync per allowed call would cost more than most calls.
            self._write(event.run_id, run, sync=not _by_policy(event))
        elif kind == "node_finished" and isinstance(event, NodeFinished) and event.node_type == OUTPUT:
            self._write(event.run_id, run, sync=False)
        elif run.pending_chars >= FLUSH_BYTES:
            self._write(event.run_id, run, sync=False)
        elif not run.scheduled:
            self._schedule(event.run_id, run)

    @staticmethod
    def _links(event: ExecutionEvent, run: _RunFile) -> Links | None:
        if isinstance(event, ApprovalRequested | ApprovalResolved | ReviewRequested | ReviewResolved):
            return {"callId": event.call_id}
        if isinstance(event, NodeStarted):
            if not event.node_type.startswith(INTERACTION_PREFIX):
                return None
            links = input_links(event.node_type, event.input)
            if links:
                run.calls[event.execution_id] = links
            return links
        if isinstance(event, NodeFinished) and event.node_type.startswith(INTERACTION_PREFIX):
            known = run.calls.pop(event.execution_id, None)
            return output_links(event.node_type, event.output) or known
        if isinstance(event, NodeFailed):
            return run.calls.pop(event.execution_id, None)
        if isinstance(event, CustomEvent) and event.name == VERDICT_EVENT and isinstance(event.data, Mapping):
            call_id = event.data.get("call_id")
            return {"callId": call_id} if isinstance(call_id, str) else None
        return None

    # -- writing --------------------------------------------------------------------------------------

    @staticmethod
    def _append(run: _RunFile, line: str) -> None:
        run.pending.append(line)
        run.pending_chars += len(line) + 1

    def _schedule(self, run_id: str, run: _RunFile) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write(run_id, run, sync=False)
            return
        run.scheduled = True
        loop.call_soon(self._write_soon, run_id, run)

    def _write_soon(self, run_id: str, run: _RunFile) -> None:
        run.scheduled = False
        self._write(run_id, run, sync=False)

    def _write(self, run_id: str, run: _RunFile, *, sync: bool) -> None:
        if run.file is None or run.error is not None:
            return
        if run.pending:
            data = "\n".join(run.pending) + "\n"
            run.pending.clear()
            run.pending_chars = 0
        else:
            data = ""
        try:
            if data:
                run.file.write(data.encode("utf-8", "backslashreplace"))
            if sync:
                run.file.sync()
        except Exception as exc:  # not only OSError: a decision that was not written must not count as one
            self._fail(run_id, run, "cannot write", exc)

    def _close(self, run: _RunFile) -> None:
        file, run.file = run.file, None
        if file is None:
            return
        try:
            file.close()
        except Exception as exc:  # closing is best effort: the lines are already written or reported
            logger.warning("closing the run journal %s failed: %s", run.path.name, exc)

    # -- failures -------------------------------------------------------------------------------------

    def _fail(self, run_id: str, run: _RunFile, action: str, exc: BaseException) -> None:
        detail = exc.message if isinstance(exc, DittoError) else str(exc)
        message = sanitize_public_message(
            f"{action} the run journal {run.path}: {detail}", workspace=self._workspace
        )
        error = JournalError(message)
        run.error = error
        run.pending.clear()
        self._failures[run_id] = error
        self._close(run)
        logger.error("%s", message)
        if self._runtime is not None:
            self._runtime.create_context(node_type="JOURNAL.WRITE").emit(
                "journal_failed", run_id=run_id, error=message
            )


def _streamed_piece(event: ExecutionEvent) -> bool:
    """A model's streamed piece is not recorded: the sampling node's output holds the whole message."""
    return isinstance(event, CustomEvent) and event.name == MESSAGE_DELTA
