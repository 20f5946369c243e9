"""Turning a command's bounded output into result fields: decoded, capped by lines and bytes, reported."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ditto_tui.sandbox import CommandResult, truncate_utf8
from ditto_tui.sanitize import sanitize_public_message

EXIT_CODE_ERROR = "COMMAND_EXIT_NONZERO"
_FATAL_SIGNAL_STATUS = 128


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How much of each stream a result keeps."""

    max_entries: int
    max_output_bytes: int
    max_error_bytes: int


@dataclass(frozen=True, kw_only=True)
class BoundedText:
    """One stream as text, and which of its caps cut it."""

    text: str
    bytes_cut: bool
    entries_cut: bool

    def truncation(self) -> dict[str, bool]:
        """The stream's entry in ``structured_content.truncated``."""
        return {"bytes": self.bytes_cut, "entries": self.entries_cut}


def _first_lines(text: str, max_entries: int) -> tuple[str, bool]:
    """At most ``max_entries`` newline-terminated lines (a last unterminated line counts as one)."""
    end = -1
    for _ in range(max_entries):
        end = text.find("\n", end + 1)
        if end < 0:
            return text, False
    return text[: end + 1], end + 1 < len(text)


def bound_stream(data: bytes, *, max_bytes: int, max_entries: int, cut_before: bool = False) -> BoundedText:
    """Decode ``data`` (invalid UTF-8 and NUL become U+FFFD), keep ``max_entries`` lines and ``max_bytes``.

    The byte cap applies to the returned text's UTF-8 form and never cuts a code point; ``cut_before`` says
    the stream was already cut upstream (the executor stopped reading it at its cap).
    """
    text = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
    text, entries_cut = _first_lines(text, max_entries)
    encoded = text.encode("utf-8")
    kept = truncate_utf8(encoded, max_bytes)
    return BoundedText(
        text=kept.decode("utf-8"), bytes_cut=cut_before or len(kept) < len(encoded), entries_cut=entries_cut
    )


def _killed_at_cap(result: CommandResult) -> bool:
    """The executor killed the command because stdout reached its cap: a truncated success, not a failure."""
    return result.stdout_truncated and (result.exit_code < 0 or result.exit_code > _FATAL_SIGNAL_STATUS)


def _failure_message(tool: str, exit_code: int, stderr: str, workspace: str | os.PathLike[str]) -> str:
    head = (
        f"{tool} exited with code {exit_code}"
        if exit_code >= 0
        else f"{tool} was killed by signal {-exit_code}"
    )
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    return sanitize_public_message(f"{head}: {first}" if first else head, workspace=workspace)


def command_outcome(
    tool: str, argv: list[str], result: CommandResult, limits: Limits, *, workspace: str | os.PathLike[str]
) -> dict[str, Any]:
    """The result fields of one run: success on exit 0 (or a kill at the stdout cap), else a failure."""
    stdout = bound_stream(
        result.stdout,
        max_bytes=limits.max_output_bytes,
        max_entries=limits.max_entries,
        cut_before=result.stdout_truncated,
    )
    stderr = bound_stream(
        result.stderr,
        max_bytes=limits.max_error_bytes,
        max_entries=limits.max_entries,
        cut_before=result.stderr_truncated,
    )
    outcome: dict[str, Any] = {
        "status": "success",
        "content": stdout.text,
        "structured_content": {
            "command": argv[0],
            "args": argv[1:],
            "exitCode": result.exit_code,
            "stdout": stdout.text,
            "stderr": stderr.text,
            "truncated": {"stdout": stdout.truncation(), "stderr": stderr.truncation()},
        },
    }
    if result.exit_code != 0 and not _killed_at_cap(result):
        outcome["status"] = "failed"
        outcome["error"] = {
            "code": EXIT_CODE_ERROR,
            "message": _failure_message(tool, result.exit_code, stderr.text, workspace),
            "retryable": False,
        }
    return outcome
