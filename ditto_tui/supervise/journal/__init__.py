"""The run journal: writing a run's events as JSON lines, reading them back, and wiring it into a run."""

from ditto_tui.supervise.journal._lines import (
    ACT_MCP,
    ACT_TOOL,
    EVERY_DECISION,
    OBSERVE,
    OUTPUT,
    LineEncoder,
    field_of,
    wire_form,
)
from ditto_tui.supervise.journal._read import (
    JournalEntry,
    JournalRead,
    RunSummary,
    find_journal,
    list_runs,
    read_journal,
    unfinished_outcome,
)
from ditto_tui.supervise.journal._setup import create_run_journal
from ditto_tui.supervise.journal._writer import (
    CLIENT_REQUEST,
    CLIENT_REQUESTS_PLAN,
    DiskFile,
    JournalError,
    JournalFile,
    RunJournal,
    open_journal_file,
)

__all__ = [
    "ACT_MCP",
    "ACT_TOOL",
    "CLIENT_REQUEST",
    "CLIENT_REQUESTS_PLAN",
    "EVERY_DECISION",
    "OBSERVE",
    "OUTPUT",
    "DiskFile",
    "JournalEntry",
    "JournalError",
    "JournalFile",
    "JournalRead",
    "LineEncoder",
    "RunJournal",
    "RunSummary",
    "create_run_journal",
    "field_of",
    "find_journal",
    "list_runs",
    "open_journal_file",
    "read_journal",
    "unfinished_outcome",
    "wire_form",
]
