"""Grants: "approve always", with the scope and the lifetime the person chose, each one revocable.

A grant is written from the approval view (or by an approver that answers ``approve_always``) and lets
later calls run without asking, but only calls the policy would otherwise *ask* about: a rule that
denies still denies. What it covers (``scope``):

- ``call``: exactly this call: the same tool and the same arguments (their sha256);
- ``rule``: a generalisation the person saw and could edit, a rule body (``tool``/``mcp`` and ``args``
  as in ``approval.rules``) matched the way an ``allow`` rule is (only where it certainly applies);
- ``tool``: every call of the tool.

How long (``lifetime``): the ``run`` it was written in, the ``session`` (until the app ends), or the
``project`` (kept in the state database in the user state directory, keyed by the workspace's real
path, never inside the workspace, and read at each decision). ``expires`` (seconds) and ``uses`` (a
count) shorten any of them. Every grant is pinned to the digest of the tool definition it was written
for: a server that changes the tool's definition ends the grant's effect, and :meth:`GrantStore.stale`
says which grants that hit.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from ditto_tui.config import ApprovalRule
from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.state_db import LEGACY_GRANTS, StateDB, state_db_file
from ditto_tui.supervise import grant_rows
from ditto_tui.supervise.matching import Call, glob_regex, rule_matches
from ditto_tui.supervise.policy import coerce_rule

GrantScope = Literal["call", "rule", "tool"]
GrantLifetime = Literal["run", "session", "project"]
GRANT_SCOPES: tuple[GrantScope, ...] = get_args(GrantScope)
GRANT_LIFETIMES: tuple[GrantLifetime, ...] = get_args(GrantLifetime)
GRANTS_FILE = LEGACY_GRANTS
"""The JSON file earlier versions kept project grants in (migrated once into the state database)."""
_RULE_KEYS = frozenset({"tool", "mcp", "args", "effects", "hints"})


@dataclass(frozen=True, kw_only=True)
class Grant:
    """One "approve always": what it covers, for how long, and where it came from.

    ``tool`` is the call's label (``write_text``; ``SERVER:TOOL`` for an MCP tool, with ``mcp`` True);
    ``match`` is the rule body of a ``rule`` grant; ``expires_at`` is seconds since the epoch; ``uses``
    is how many calls it may still approve (``None``: no limit).
    """

    id: str
    tool: str
    tool_digest: str
    scope: GrantScope = "tool"
    mcp: bool = False
    arguments_digest: str | None = None
    match: Mapping[str, Any] | None = None
    lifetime: GrantLifetime = "session"
    run_id: str | None = None
    expires_at: float | None = None
    uses: int | None = None
    created_at: float = 0.0
    origin: str = ""
    workspace: str | None = None
    _rule: ApprovalRule | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.scope not in GRANT_SCOPES:
            raise ValidationError(f"grant scope {self.scope!r} must be one of {', '.join(GRANT_SCOPES)}")
        if self.lifetime not in GRANT_LIFETIMES:
            raise ValidationError(
                f"grant lifetime {self.lifetime!r} must be one of {', '.join(GRANT_LIFETIMES)}"
            )
        if self.scope == "call" and not self.arguments_digest:
            raise ValidationError("a grant of one call needs the digest of its arguments")
        if self.lifetime == "run" and not self.run_id:
            raise ValidationError("a grant for this run needs the run's id")
        if self.uses is not None and (isinstance(self.uses, bool) or self.uses < 0):
            raise ValidationError("a grant's uses must be a count of at least 1")
        if self.scope == "rule":
            object.__setattr__(self, "_rule", grant_rule(self.tool, self.mcp, self.match, self.id))

    def covers(self, call: Call, arguments_digest: str | None) -> bool:
        """Whether the grant covers ``call`` (its tool definition is checked apart, see :meth:`applies`)."""
        name = call.mcp if self.mcp else call.tool
        if self.scope == "tool":
            return name == self.tool
        if self.scope == "call":
            return name == self.tool and arguments_digest == self.arguments_digest
        assert self._rule is not None
        return rule_matches(self._rule, call) is True

    def describe(self) -> str:
        """What the grant covers, in one line: ``write_text with path notes/**``."""
        if self.scope == "tool":
            return f"{self.tool}: every call"
        if self.scope == "call":
            return f"{self.tool}: exactly one call (arguments {str(self.arguments_digest)[:12]})"
        args = (self.match or {}).get("args") or {}
        shown = ", ".join(f"{key} {_match_text(value)}" for key, value in args.items())
        return f"{self.tool} with {shown}" if shown else f"{self.tool}: every call"

    def record(self) -> dict[str, Any]:
        """The grant as JSON (the journal line of the decision that wrote it, and the state database)."""
        data = asdict(self)
        data.pop("_rule", None)
        return {key: value for key, value in data.items() if value is not None}


def _match_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def grant_rule(tool: str, mcp: bool, match: Mapping[str, Any] | None, grant_id: str) -> ApprovalRule:
    """The rule a ``rule`` grant matches with: its body, on its own tool, deciding ``allow``.

    The body may name the tool (the same tool, or a glob that matches it); it is always narrowed to the
    granted tool, so editing the suggestion can never widen a grant to other tools.
    """
    if not isinstance(match, Mapping):
        raise ValidationError("a grant of a rule needs the rule: {args: {FIELD: MATCH}}")
    unknown = sorted(set(match) - _RULE_KEYS)
    if unknown:
        raise ValidationError(
            f"a grant's rule takes {', '.join(sorted(_RULE_KEYS))}, not {', '.join(unknown)}"
        )
    body = {key: value for key, value in match.items() if key not in ("tool", "mcp")}
    body["mcp" if mcp else "tool"] = tool
    body["decision"] = "allow"
    return coerce_rule(body, f"grant {grant_id}")


def suggest_match(arguments: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A generalisation of one call's arguments for a ``rule`` grant, or ``None`` when there is none.

    Each argument that reads as a workspace path becomes its folder with ``**`` (``notes/a/b.md`` →
    ``notes/a/**``); a file at the top of the workspace keeps its own name's extension
    (``todo.md`` → ``*.md``). Other arguments are left out, so they may be anything. A glob that would
    also cover a control file (``*.yaml`` covers ``ditto.yaml``, ``graphs/**`` is one) is narrowed to
    the path itself, and a control file is not suggested at all (:mod:`ditto_tui.supervise.protected`;
    the gate asks about those whatever a grant says).
    """
    if not arguments:
        return None
    args = {key: glob for key, value in arguments.items() if (glob := _safe_glob(value)) is not None}
    return {"args": args} if args else None


_CONTROL_SAMPLES = ("ditto.yaml", "graphs/react_agent.py", ".ditto/state.db", ".git/hooks/pre-commit")
"""One path of each kind of control file at the top of a workspace: what no suggested glob may match."""


def _safe_glob(value: Any) -> str | None:
    """A glob suggested from one path argument, unless it could cover a control file (compared without
    case, as the gate compares them): then the exact path, or nothing when that is a control file too.
    A folder's ``**`` may still cover a repository nested in it; no grant applies to a control file."""
    glob = _path_glob(value)
    if glob is None or not _controls(glob):
        return glob
    exact = posixpath.normpath(str(value))
    if any(char in exact for char in "*?[") or _controls(exact):
        return None
    return exact


def _controls(pattern: str) -> bool:
    """Whether ``pattern`` (a glob or a path) may name a control file: it matches one of a workspace's
    top-level ones, or it lies in ``graphs/`` or ``.ditto/`` or in any ``.git`` folder (without case)."""
    folded = pattern.casefold()
    parts = folded.split("/")
    if ".git" in parts:
        return True
    if parts[0] in _CONTROL_FOLDERS and parts[:2] != [".ditto", "notes"]:  # the agent's notes are not
        return True
    return any(glob_regex(folded).fullmatch(sample) for sample in _CONTROL_SAMPLES)


_CONTROL_FOLDERS = ("graphs", ".ditto", ".git")


def _path_glob(value: Any) -> str | None:
    if not isinstance(value, str) or not value or "\n" in value or len(value) > 1024:
        return None
    if value.startswith(("/", "~")) or "://" in value or ".." in value.split("/"):
        return None
    folder, name = posixpath.split(posixpath.normpath(value))
    if folder:
        return f"{folder}/**"
    if "/" not in value and "." in name.strip("."):
        return f"*{posixpath.splitext(name)[1]}"
    return None


@dataclass(frozen=True, kw_only=True)
class GrantState:
    """A grant as it stands now: seconds and uses left, and whether its tool's definition changed."""

    grant: Grant
    uses_left: int | None
    seconds_left: float | None
    stale: bool = False


class GrantStore:
    """The grants of one session: those of its runs, of the session, and the workspace's project grants.

    Run and session grants live in the store. Project grants live in the state database
    (:mod:`ditto_tui.state_db`), shared by every process: each decision (:meth:`find`, :meth:`use`) reads
    them as they are now, so a grant revoked elsewhere (``ditto-tui grants --revoke``, another session)
    stops applying at the next call, and a use counts down the stored row, never writes a grant back. A
    database that cannot be read grants nothing. ``clock`` gives seconds since the epoch.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        persist: bool = True,
    ) -> None:
        self.workspace = os.path.realpath(workspace) if workspace is not None else None
        self.env = env
        self.clock = clock
        self.persist = persist and self.workspace is not None
        self._lock = threading.Lock()
        self._grants: dict[str, Grant] = {}
        self._uses: dict[str, int | None] = {}
        self._stale_digests: dict[str, str] = {}
        self._listeners: list[Callable[[], object]] = []
        self._db = StateDB(env) if self.persist else None
        self._parsed: dict[str, tuple[str, Grant | None]] = {}

    @property
    def path(self) -> Path:
        """Where project grants are kept."""
        return grants_file(self.env)

    def on_change(self, listener: Callable[[], object]) -> None:
        """Call ``listener()`` after a grant is added, used up, expired or revoked (in this process)."""
        self._listeners.append(listener)

    def add(
        self,
        *,
        tool: str,
        tool_digest: str,
        scope: GrantScope = "tool",
        mcp: bool = False,
        arguments_digest: str | None = None,
        match: Mapping[str, Any] | None = None,
        lifetime: GrantLifetime = "session",
        run_id: str | None = None,
        expires: float | None = None,
        uses: int | None = None,
        origin: str = "",
    ) -> Grant:
        """Write a grant (checked first: a bad scope, lifetime, rule or count raises ValidationError)."""
        if expires is not None and (isinstance(expires, bool) or not expires > 0):
            raise ValidationError("a grant's expiry must be a number of seconds greater than 0")
        if uses is not None and (isinstance(uses, bool) or not isinstance(uses, int) or uses < 1):
            raise ValidationError("a grant's uses must be a count of at least 1")
        if lifetime == "project" and not self.persist:
            raise ValidationError("a project grant needs a workspace whose grants can be kept")
        now = self.clock()
        grant = Grant(
            id=f"g-{uuid.uuid4().hex[:8]}",
            tool=tool,
            tool_digest=tool_digest,
            scope=scope,
            mcp=mcp,
            arguments_digest=arguments_digest if scope == "call" else None,
            match=dict(match) if scope == "rule" and match is not None else None,
            lifetime=lifetime,
            run_id=run_id if lifetime == "run" else None,
            expires_at=now + expires if expires is not None else None,
            uses=uses,
            created_at=now,
            origin=origin,
            workspace=self.workspace if lifetime == "project" else None,
        )
        if lifetime == "project" and self._db is not None and self.workspace is not None:
            grant_rows.insert(self._db, self.workspace, grant.record(), uses)
        else:
            with self._lock:
                self._grants[grant.id] = grant
                self._uses[grant.id] = uses
        self._changed()
        return grant

    def find(
        self, call: Call, tool_digest: str, arguments_digest: str | None, run_id: str | None = None
    ) -> Grant | None:
        """The oldest live grant that covers ``call`` of the tool whose definition has ``tool_digest``.

        A grant for the same tool pinned to another definition does not apply; it is remembered as
        stale (:meth:`stale`). Finding does not use the grant up: :meth:`use` does.
        """
        live, expired = self._live()
        found = None
        with self._lock:
            for grant, _uses in live:
                if grant.lifetime == "run" and grant.run_id != run_id:
                    continue
                if not grant.covers(call, arguments_digest):
                    continue
                if grant.tool_digest != tool_digest:
                    self._stale_digests[grant.id] = tool_digest
                    continue
                found = grant
                break
        if expired:
            self._changed()
        return found

    def use(self, grant: Grant) -> bool:
        """Count one call approved by ``grant``; False if it has ended meanwhile (nothing is counted)."""
        if grant.lifetime == "project":
            return self._use_project(grant)
        with self._lock:
            if grant.id not in self._grants:
                return False
            left = self._uses.get(grant.id)
            if left is None:
                return True
            left -= 1
            self._uses[grant.id] = left
            if left <= 0:
                del self._grants[grant.id]
                del self._uses[grant.id]
        self._changed()
        return True

    def _use_project(self, grant: Grant) -> bool:
        if self._db is None:
            return False
        try:
            left = grant_rows.take_use(self._db, grant.id)
        except DittoError:
            return False
        if left == grant_rows.GONE:
            return False
        if left is not None:
            self._changed()
        return True

    def revoke(self, grant_id: str) -> Grant | None:
        """End grant ``grant_id`` (or the only one whose id starts with it); the grant ended, if any."""
        live, _ = self._live()
        matches = [grant for grant, _ in live if grant.id == grant_id or grant.id.startswith(grant_id)]
        if len(matches) != 1 or not grant_id:
            return None
        grant = matches[0]
        if grant.lifetime == "project":
            if self._db is None or not grant_rows.delete(self._db, [grant.id]):
                return None
        with self._lock:
            self._grants.pop(grant.id, None)
            self._uses.pop(grant.id, None)
            self._stale_digests.pop(grant.id, None)
        self._changed()
        return grant

    def revoke_tool(self, tool: str) -> bool:
        """End every grant of ``tool``; False if it had none."""
        ids = [grant.id for grant in self.grants() if grant.tool == tool]
        return any([self.revoke(gid) is not None for gid in ids])

    def end_run(self, run_id: str) -> None:
        """Drop the grants written for run ``run_id`` (it has ended)."""
        with self._lock:
            ended = [gid for gid, grant in self._grants.items() if grant.run_id == run_id]
            for gid in ended:
                del self._grants[gid]
                self._uses.pop(gid, None)
        if ended:
            self._changed()

    def grants(self) -> list[Grant]:
        """The live grants, oldest first."""
        return [grant for grant, _ in self._live()[0]]

    def states(self) -> list[GrantState]:
        """The live grants with what is left of them and whether their tool's definition changed."""
        now = self.clock()
        live, _ = self._live()
        with self._lock:
            return [
                GrantState(
                    grant=grant,
                    uses_left=uses,
                    seconds_left=max(0.0, grant.expires_at - now) if grant.expires_at is not None else None,
                    stale=grant.id in self._stale_digests,
                )
                for grant, uses in live
            ]

    def stale(self) -> list[Grant]:
        """Grants that did not apply to a call because their tool's definition has changed since."""
        live = {grant.id: grant for grant, _ in self._live()[0]}
        with self._lock:
            return [live[gid] for gid in self._stale_digests if gid in live]

    def _live(self) -> tuple[list[tuple[Grant, int | None]], bool]:
        """Every live grant with its uses left, oldest first, and whether some had just expired (those
        are dropped, from the database too)."""
        now = self.clock()
        project = self._project()
        with self._lock:
            ended = [g for g in self._grants.values() if g.expires_at is not None and g.expires_at <= now]
            for grant in ended:
                del self._grants[grant.id]
                self._uses.pop(grant.id, None)
            live = [(grant, self._uses.get(grant.id)) for grant in self._grants.values()]
        gone = [grant.id for grant, _ in project if grant.expires_at is not None and grant.expires_at <= now]
        if gone and self._db is not None:
            with contextlib.suppress(DittoError):
                grant_rows.delete(self._db, gone)
        live += [(grant, uses) for grant, uses in project if grant.id not in gone]
        return sorted(live, key=lambda pair: pair[0].created_at), bool(ended or gone)

    def _project(self) -> list[tuple[Grant, int | None]]:
        """The workspace's project grants as the database holds them now (none when it cannot be read)."""
        if self._db is None or self.workspace is None:
            return []
        try:
            rows = grant_rows.read_rows(self._db, self.workspace)
        except DittoError:
            return []
        return [(grant, row.uses_left) for row in rows if (grant := self._parse(row)) is not None]

    def _parse(self, row: grant_rows.GrantRow) -> Grant | None:
        """The grant a row holds (parsed once per record text), ``None`` for one that makes no sense."""
        cached = self._parsed.get(row.id)
        if cached is not None and cached[0] == row.record:
            return cached[1]
        try:
            raw = json.loads(row.record)
        except ValueError:
            raw = None
        grant = _grant_of(raw, self.workspace) if self.workspace is not None else None
        self._parsed[row.id] = (row.record, grant)
        return grant

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()


def duration(seconds: float) -> str:
    """``45 s``, ``9 min``, ``1.5 h``: how long a grant has left."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def grants_file(env: Mapping[str, str] | None = None) -> Path:
    """Where project grants are kept: the state database (:func:`ditto_tui.state_db.state_db_file`)."""
    return state_db_file(env)


def _grant_of(raw: Any, workspace: str) -> Grant | None:
    """A project grant read back, or ``None`` for an entry that does not make sense (granting nothing)."""
    if not isinstance(raw, dict):
        return None
    known = {name for name in Grant.__dataclass_fields__ if not name.startswith("_")}
    try:
        grant = Grant(**{key: value for key, value in raw.items() if key in known})
    except (TypeError, ValidationError):
        return None
    if grant.lifetime != "project" or not isinstance(grant.id, str) or not isinstance(grant.tool, str):
        return None
    return replace(grant, workspace=workspace)


def project_grants(
    workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> list[GrantState]:
    """The project grants of ``workspace``, as ``ditto-tui grants`` lists them."""
    return GrantStore(workspace, env=env).states()


def recorded_matches(grant: Grant, calls: Iterable[tuple[Call, str | None, str]]) -> list[str]:
    """Which of the recorded ``calls`` (each a call, its arguments' digest, and a label to show) the
    grant would have approved: what it covers, whatever the definition then (the journal keeps none)."""
    return [label for call, digest, label in calls if grant.covers(call, digest)]


__all__ = [
    "GRANTS_FILE",
    "GRANT_LIFETIMES",
    "GRANT_SCOPES",
    "Grant",
    "GrantLifetime",
    "GrantScope",
    "GrantState",
    "GrantStore",
    "duration",
    "grant_rule",
    "grants_file",
    "project_grants",
    "recorded_matches",
    "suggest_match",
]
