"""``ditto-tui grants [--revoke ID] [--json]``: the project grants of the workspace, and revoking one.

Grants written for a run or a session live only as long as it does (the Grants panel of the app shows
them); project grants are kept in the state database and apply to every later session in the same
workspace, so they are the ones a command lists. A revocation reaches the sessions already running: they
read the project grants from the state database at each decision.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from ditto_tui.sanitize import escape_controls
from ditto_tui.supervise.grants import GrantState, GrantStore, duration, grants_file


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``grants`` on the CLI's subparsers."""
    grants = commands.add_parser(
        "grants",
        help="list the project grants of the workspace (approve always, kept), or revoke one",
        description="List the grants written with 'approve always … for this project' in the workspace: "
        "id, tool and what it covers, uses and time left, where it came from. They are kept in "
        "the state database (state.db in your state directory, never in the workspace). --revoke ID "
        "ends one, in running sessions too: each reads the grants again before its next decision.",
    )
    grants.add_argument("--revoke", metavar="ID", help="end the grant with this id (or a unique prefix)")
    grants.add_argument("--json", action="store_true", help="one JSON object per grant")


def grants_command(args: argparse.Namespace, workspace: Path, out: TextIO | None = None) -> int:
    """Run ``grants``; returns the exit code (1: no grant has the id given to ``--revoke``)."""
    out = out or sys.stdout
    store = GrantStore(workspace)
    if args.revoke is not None:
        revoked = store.revoke(args.revoke)
        if revoked is None:
            ids = ", ".join(state.grant.id for state in store.states()) or "none"
            print(
                f"ditto-tui: no single grant has the id {escape_controls(args.revoke)!r} (grants: {ids})",
                file=sys.stderr,
            )
            return 1
        print(escape_controls(f"revoked {revoked.id}  {revoked.describe()}"), file=out)
        return 0
    states = store.states()
    if args.json:
        for state in states:
            record = dict(state.grant.record(), usesLeft=state.uses_left, secondsLeft=state.seconds_left)
            print(json.dumps(record, ensure_ascii=True, sort_keys=True), file=out)
        return 0
    if not states:
        print(f"No project grants for {escape_controls(str(workspace))} (kept in {grants_file()}).", file=out)
        return 0
    for state in states:
        print(grant_line(state), file=out)
    return 0


def grant_line(state: GrantState) -> str:
    """``g-1a2b3c4d  write_text with path notes/**  3 uses left · 9 min left · from run 1a2b``."""
    grant = state.grant
    left = []
    if state.uses_left is not None:
        left.append(f"{state.uses_left} use{'s' if state.uses_left != 1 else ''} left")
    if state.seconds_left is not None:
        left.append(f"{duration(state.seconds_left)} left")
    if state.stale:
        left.append("the tool's definition changed: no longer applies")
    written = time.strftime("%Y-%m-%d %H:%M", time.localtime(grant.created_at))
    origin = f"from {grant.origin}, {written}" if grant.origin else f"written {written}"
    parts = [grant.id, grant.describe(), " · ".join(left) or "until revoked", origin]
    return escape_controls("  ".join(parts))


__all__ = ["add_command", "grant_line", "grants_command"]
