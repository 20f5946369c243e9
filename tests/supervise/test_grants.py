"""Grants: scopes, lifetimes, uses, expiry, project grants kept outside the workspace, stale definitions."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from ditto_tui.errors import ValidationError
from ditto_tui.home import StateDirError, config_dir
from ditto_tui.supervise.grants import (
    GRANTS_FILE,
    GrantStore,
    grants_file,
    project_grants,
    recorded_matches,
    suggest_match,
)
from ditto_tui.supervise.matching import Call


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DITTO_TUI_HOME", str(tmp_path / "home"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _write(path: str) -> Call:
    return Call(tool="write_text", effects=("write",), arguments={"path": path, "text": "x"})


def _store(tmp_path: Path, clock: Clock | None = None) -> GrantStore:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return GrantStore(workspace, clock=clock or Clock())


def test_a_tool_grant_covers_every_call_of_that_tool_only(tmp_path: Path) -> None:
    store = _store(tmp_path)
    grant = store.add(tool="write_text", tool_digest="d1")
    assert store.find(_write("a.md"), "d1", "x") == grant
    assert store.find(Call(tool="read_text", arguments={}), "d1", "x") is None


def test_a_call_grant_covers_those_exact_arguments_only(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", scope="call", arguments_digest="sha-a")
    assert store.find(_write("a.md"), "d1", "sha-a") is not None
    assert store.find(_write("a.md"), "d1", "sha-b") is None
    with pytest.raises(ValidationError, match="digest of its arguments"):
        store.add(tool="write_text", tool_digest="d1", scope="call")


def test_a_path_rule_grant_allows_the_folder_and_nothing_beside_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", scope="rule", match={"args": {"path": "notes/**"}})
    assert store.find(_write("notes/a/b.md"), "d1", None) is not None
    assert store.find(_write("other.md"), "d1", None) is None
    assert store.find(_write("notes/../x"), "d1", None) is None  # an allow never rests on ".."
    assert store.find(Call(tool="write_text", effects=("write",), arguments=None), "d1", None) is None


def test_an_edited_rule_cannot_widen_a_grant_to_other_tools(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", scope="rule", match={"tool": "*", "args": {"path": "**"}})
    assert store.find(_write("a.md"), "d1", None) is not None
    delete = Call(tool="delete_file", effects=("write",), arguments={"path": "a.md"})
    assert store.find(delete, "d1", None) is None
    with pytest.raises(ValidationError, match="not decision"):
        store.add(tool="write_text", tool_digest="d1", scope="rule", match={"decision": "deny"})


def test_a_grant_with_k_uses_stops_after_k(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", uses=2)
    for _ in range(2):
        grant = store.find(_write("a.md"), "d1", None)
        assert grant is not None and store.use(grant)
    assert store.find(_write("a.md"), "d1", None) is None
    with pytest.raises(ValidationError, match="at least 1"):
        store.add(tool="write_text", tool_digest="d1", uses=0)


def test_a_grant_expires_after_its_seconds(tmp_path: Path) -> None:
    clock = Clock()
    store = _store(tmp_path, clock)
    store.add(tool="write_text", tool_digest="d1", expires=60)
    [state] = store.states()
    assert state.seconds_left == 60
    clock.now += 59
    assert store.find(_write("a.md"), "d1", None) is not None
    clock.now += 1
    assert store.find(_write("a.md"), "d1", None) is None and store.grants() == []


def test_a_run_grant_covers_its_run_only_and_ends_with_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", lifetime="run", run_id="run-1")
    assert store.find(_write("a.md"), "d1", None, run_id="run-1") is not None
    assert store.find(_write("a.md"), "d1", None, run_id="run-2") is None
    store.end_run("run-1")
    assert store.find(_write("a.md"), "d1", None, run_id="run-1") is None


def test_a_grant_whose_tool_definition_changed_no_longer_applies_and_says_so(tmp_path: Path) -> None:
    store = _store(tmp_path)
    grant = store.add(tool="notes:write_note", mcp=True, tool_digest="before")
    call = Call(mcp="notes:write_note", arguments={"name": "a"})
    assert store.find(call, "after", None) is None
    assert store.stale() == [grant]
    [state] = store.states()
    assert state.stale


def test_a_project_grant_survives_a_restart_and_is_gone_after_revoke(tmp_path: Path) -> None:
    store = _store(tmp_path)
    grant = store.add(tool="write_text", tool_digest="d1", lifetime="project", uses=3, origin="run r1")
    used = store.find(_write("a.md"), "d1", None)
    assert used is not None and store.use(used)
    again = _store(tmp_path)  # a new session in the same workspace
    [state] = again.states()
    assert state.grant.id == grant.id and state.uses_left == 2 and state.grant.origin == "run r1"
    assert [s.grant.id for s in project_grants(tmp_path / "ws")] == [grant.id]
    assert again.revoke(grant.id[:5])
    assert _store(tmp_path).grants() == [] and project_grants(tmp_path / "ws") == []


def test_project_grants_are_kept_per_workspace_in_the_state_database(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(tool="write_text", tool_digest="d1", lifetime="project")
    path = grants_file()
    assert path.is_relative_to(tmp_path / "home" / "state") and path.name == "state.db"
    assert not any((tmp_path / "ws").iterdir())  # nothing is written inside the workspace
    other = tmp_path / "other"
    other.mkdir()
    assert GrantStore(other).grants() == []
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT workspace FROM grants").fetchall()
    assert rows == [(os.path.realpath(tmp_path / "ws"),)]


def test_a_session_grant_is_not_kept(tmp_path: Path) -> None:
    _store(tmp_path).add(tool="write_text", tool_digest="d1")
    assert _store(tmp_path).grants() == [] and not grants_file().exists()


def test_a_damaged_grants_file_grants_nothing(tmp_path: Path) -> None:
    legacy = config_dir() / GRANTS_FILE
    legacy.parent.mkdir(parents=True)
    workspace = os.path.realpath(tmp_path / "ws")
    for text in (
        "{not json",
        json.dumps({"workspaces": {workspace: [{"id": "g-1", "tool": "w", "lifetime": "session"}]}}),
        json.dumps({"workspaces": {workspace: [{"id": "g-1", "tool": "w", "scope": "everything"}]}}),
        json.dumps({"workspaces": []}),
    ):
        for stale in grants_file().parent.glob("state.db*"):
            stale.unlink()
        legacy.write_text(text)  # migrated when the database is made, then never read again
        assert _store(tmp_path).grants() == []
    grants_file().write_text("{not a database")
    for stale in grants_file().parent.glob("state.db-*"):
        stale.unlink()
    assert _store(tmp_path).grants() == []


def test_u03_a_linked_grants_file_is_refused_not_followed(tmp_path: Path) -> None:
    path = grants_file()
    path.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    path.symlink_to(target)
    with pytest.raises(StateDirError, match="symbolic link"):
        _store(tmp_path).add(tool="write_text", tool_digest="d1", lifetime="project")
    assert target.read_text() == "{}"


def test_bad_lifetimes_and_scopes_are_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(ValidationError, match="lifetime"):
        store.add(tool="w", tool_digest="d", lifetime="forever")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="scope"):
        store.add(tool="w", tool_digest="d", scope="all")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="run's id"):
        store.add(tool="w", tool_digest="d", lifetime="run")
    with pytest.raises(ValidationError, match="greater than 0"):
        store.add(tool="w", tool_digest="d", expires=0)
    with pytest.raises(ValidationError, match="workspace"):
        GrantStore(None).add(tool="w", tool_digest="d", lifetime="project")


def test_the_suggested_generalisation_is_the_folder_of_each_path() -> None:
    assert suggest_match({"path": "notes/a/b.md", "text": "hello"}) == {"args": {"path": "notes/a/**"}}
    assert suggest_match({"path": "todo.md"}) == {"args": {"path": "*.md"}}
    assert suggest_match({"path": "/etc/passwd"}) is None
    assert suggest_match({"path": "../x/y"}) is None
    assert suggest_match({"count": 3}) is None and suggest_match(None) is None


def test_recorded_matches_lists_the_calls_a_grant_would_have_approved(tmp_path: Path) -> None:
    grant = _store(tmp_path).add(
        tool="write_text", tool_digest="d1", scope="rule", match={"args": {"path": "notes/**"}}
    )
    calls = [
        (_write("notes/a.md"), None, "r1 #1"),
        (_write("b.md"), None, "r1 #2"),
        (_write("notes/c"), None, "r2"),
    ]
    assert recorded_matches(grant, calls) == ["r1 #1", "r2"]


def test_listeners_hear_every_change(tmp_path: Path) -> None:
    store = _store(tmp_path)
    heard: list[int] = []
    store.on_change(lambda: heard.append(len(store.grants())))
    grant = store.add(tool="w", tool_digest="d", uses=1)
    store.use(grant)
    assert heard == [1, 0]
