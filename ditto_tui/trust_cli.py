"""``ditto-tui trust [DIR] [--list | --show]`` and ``ditto-tui untrust [DIR]``: trust, pinned to content.

``trust DIR`` pins the files trust covers (``ditto.yaml`` and ``graphs/**/*.py``) as they are now; a file
edited, added or removed later is not used until ``trust DIR`` again, and ``trust --show DIR`` shows how
each differs from what was trusted: a unified diff of the text kept when it was trusted. Every line
printed goes through :func:`~ditto_tui.sanitize.escape_controls`, the files being the workspace's.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ditto_tui.errors import ValidationError
from ditto_tui.sanitize import escape_controls
from ditto_tui.trust import (
    KEPT_BYTES,
    FileChange,
    TrustState,
    covered_files,
    listed,
    real_path,
    trust,
    trust_state,
    trusted_workspaces,
    untrust,
)

SHOWN_LINES = 400
"""The most diff lines shown for one file."""


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``trust`` and ``untrust`` on the CLI's subparsers."""
    command = commands.add_parser(
        "trust",
        help="trust a workspace: use its ditto.yaml and graphs, as they are now",
        description="Trust DIR (default: .): from now on its ditto.yaml and graphs/react_agent.py are used, "
        "as they are now. They can widen the sandbox, start servers and run code: trust only folders whose "
        "files you know. A file edited, added or removed later is not used until you trust DIR again; "
        "--show says which and how.",
    )
    command.add_argument("dir", nargs="?", default=".", help="the folder (default: .)")
    shown = command.add_mutually_exclusive_group()
    shown.add_argument("--list", action="store_true", help="list the trusted folders")
    shown.add_argument(
        "--show",
        action="store_true",
        help="show how DIR's files differ from what was trusted (trusts nothing)",
    )
    untrusting = commands.add_parser(
        "untrust", help="stop trusting a workspace", description="Stop trusting DIR (default: .)."
    )
    untrusting.add_argument("dir", nargs="?", default=".", help="the folder (default: .)")


def trust_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``trust`` or ``untrust``; returns the exit code."""
    out = out or sys.stdout
    if args.command == "trust" and args.list:
        lines = [entry.path for entry in trusted_workspaces()] or ["No trusted folders."]
    elif args.command == "trust" and args.show:
        lines = show_lines(Path(real_path(args.dir)))
    elif args.command == "untrust":
        folder = real_path(args.dir)
        lines = [f"{'No longer trusted' if untrust(folder) else 'Was not trusted'}: {folder}"]
    else:
        lines = _trust_lines(Path(real_path(args.dir)), args.dir)
    for line in lines:
        print(escape_controls(line), file=out)
    return 0


def _trust_lines(folder: Path, given: str) -> list[str]:
    before = trust_state(folder)
    try:
        changed = trust(folder)
    except NotADirectoryError:
        raise ValidationError(f"{given!r} is not a directory") from None
    if not changed:
        return [f"Already trusted: {folder}"]
    pinned = list(covered_files(folder))
    if before.trusted:
        lines = [f"Trusted again, as its files are now: {folder}"]
        lines += [f"Changed since it was trusted: {_changes(before)}"] if before.changes else []
    else:
        lines = [f"Trusted: {folder}"]
        lines += ["Its ditto.yaml and graphs/ will now be used; `ditto-tui untrust` undoes this."]
    return [*lines, _pinned_line(pinned)]


def _changes(state: TrustState) -> str:
    return ", ".join(f"{change.name} ({change.kind})" for change in state.changes)


def _pinned_line(names: list[str]) -> str:
    if not names:
        return "Pinned: no ditto.yaml or graphs/*.py yet (one added later is not used until you trust again)."
    return f"Pinned: {listed(names)} (a change to any of them is not used until you trust the folder again)."


def show_lines(folder: Path) -> list[str]:
    """What ``trust --show`` prints: whether ``folder`` is trusted, and a diff of each changed file."""
    state = trust_state(folder, content=True)
    if not state.trusted or not state.changes:  # nothing to diff: which files trust covers
        names = ", ".join(covered_files(folder)) or "no ditto.yaml or graphs/*.py"
        if not state.trusted:
            return [f"Not trusted: {folder}", f"`ditto-tui trust` would trust: {names}"]
        return [f"Trusted: {folder}; its files are as they were trusted ({names})."]
    head = f"Trusted: {folder}; {len(state.changes)} file(s) differ from what was trusted:"
    if not state.pinned:
        head = f"Trusted by an earlier version, before trust was pinned to content: {folder}; its files:"
    lines = [head]
    for change in state.changes:
        lines += list(_file_diff(folder, change))
    return [*lines, f"`ditto-tui trust {folder}` trusts them as they are now."]


def _file_diff(folder: Path, change: FileChange) -> Iterator[str]:
    """The diff of one file, trusted text against the text now, at most :data:`SHOWN_LINES` lines."""
    trusted = change.trusted
    yield f"== {change.name}: {change.kind}"
    if trusted is not None and trusted.content is None:
        yield f"   (only its digest was kept: it was {trusted.size} bytes, over {KEPT_BYTES // 1024} KiB)"
        return
    before = _lines(trusted.content) if trusted is not None and trusted.content is not None else []
    now = _current_lines(folder / change.name) if change.kind != "removed" else []
    if now is None:
        yield f"   (it is over {KEPT_BYTES // 1024} KiB now, or cannot be read: not shown)"
        return
    diff = difflib.unified_diff(
        before, now, f"{change.name} (trusted)", f"{change.name} (now)", lineterm="", n=2
    )
    for count, line in enumerate(diff):
        if count == SHOWN_LINES:
            yield f"   (… the rest of the diff of {change.name} is not shown)"
            return
        yield line


def _lines(data: bytes) -> list[str]:
    """Text lines split on newlines only, so every other control character is shown escaped."""
    text = data.decode("utf-8", "replace")
    return text.removesuffix("\n").split("\n") if text else []


def _current_lines(path: Path) -> list[str] | None:
    try:
        with open(path, "rb") as file:
            data = file.read(KEPT_BYTES + 1)
    except OSError:
        return None
    return _lines(data) if len(data) <= KEPT_BYTES else None


__all__ = ["SHOWN_LINES", "add_commands", "show_lines", "trust_command"]
