"""Workspace trust: the folders whose ``ditto.yaml`` and graphs the user has allowed to be used.

A workspace is untrusted until the user trusts it (``ditto-tui trust DIR`` or ``ditto-tui init``): only
then may its ``ditto.yaml`` set policy, start servers, or its ``graphs/react_agent.py`` run. The store is
one JSON file in the user config directory, keyed by each folder's real path, so a link or a renamed
copy of a trusted folder is a different, untrusted folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ditto_tui.home import config_dir, write_private

TRUST_FILE = "trusted-workspaces.json"
_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class TrustedWorkspace:
    """One trusted folder: its real path and when it was trusted (seconds since the epoch)."""

    path: str
    trusted_at: float


def trust_file(env: Mapping[str, str] | None = None) -> Path:
    """Where the trust store lives."""
    return config_dir(env) / TRUST_FILE


def real_path(directory: str | os.PathLike[str]) -> str:
    """The key of a folder in the store: its real path (links resolved)."""
    return os.path.realpath(directory)


def trusted_workspaces(env: Mapping[str, str] | None = None) -> list[TrustedWorkspace]:
    """Every trusted folder, in the order they were trusted (a damaged store trusts nothing)."""
    try:
        data = json.loads(trust_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("workspaces") if isinstance(data, dict) else None
    return [entry for entry in map(_entry, entries or []) if entry is not None]


def _entry(raw: Any) -> TrustedWorkspace | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        return None
    at = raw.get("trustedAt")
    return TrustedWorkspace(path=raw["path"], trusted_at=float(at) if isinstance(at, int | float) else 0.0)


def is_trusted(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether the user has trusted ``directory`` (by its real path)."""
    key = real_path(directory)
    return any(entry.path == key for entry in trusted_workspaces(env))


def trust(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Trust ``directory``; False when it already was. It must be an existing folder."""
    key = real_path(directory)
    if not os.path.isdir(key):
        raise NotADirectoryError(f"{str(directory)!r} is not a directory")
    entries = trusted_workspaces(env)
    if any(entry.path == key for entry in entries):
        return False
    _save([*entries, TrustedWorkspace(path=key, trusted_at=time.time())], env)
    return True


def untrust(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> bool:
    """Stop trusting ``directory``; False when it was not trusted."""
    key = real_path(directory)
    entries = trusted_workspaces(env)
    kept = [entry for entry in entries if entry.path != key]
    if len(kept) == len(entries):
        return False
    _save(kept, env)
    return True


def _save(entries: list[TrustedWorkspace], env: Mapping[str, str] | None) -> None:
    data = {
        "version": _VERSION,
        "workspaces": [{"path": entry.path, "trustedAt": entry.trusted_at} for entry in entries],
    }
    write_private(trust_file(env), (json.dumps(data, indent=2) + "\n").encode("utf-8"))
