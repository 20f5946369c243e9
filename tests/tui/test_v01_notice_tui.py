"""V-01: a workspace file passed over because it changed since trusted is said on the screen, not only
on stderr behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ditto_tui import __main__ as cli
from ditto_tui.trust import trust
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.workspace import resolve_config
from tests.tui.run_fixtures import SIZE, wait_until


def test_v01_the_app_is_given_the_line_naming_the_changed_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ditto.yaml").write_text("sandbox:\n  read: true\n", encoding="utf-8")
    trust(tmp_path)
    (tmp_path / "ditto.yaml").write_text("sandbox:\n  read: true\n  write: true\n", encoding="utf-8")
    opened: list[dict[str, Any]] = []

    def open_app(*_args: Any, **kwargs: Any) -> int:
        opened.append(kwargs)
        return 0

    monkeypatch.setattr(cli, "_open_app", open_app)
    assert cli.main(["--workspace", str(tmp_path)]) == 0
    (notice,) = opened[0]["notices"]
    assert "not using ditto.yaml" in notice and "changed since the folder was trusted" in notice


async def test_v01_the_app_shows_what_was_not_used_when_it_opens(tmp_path: Path) -> None:
    line = "not using ditto.yaml of '/w': ditto.yaml changed since the folder was trusted \x1b[31m"
    config = resolve_config(None, tmp_path).config
    app = DittoApp(RunSpec(config=config, workspace=tmp_path, journal=False, notices=(line,)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app._notifications))
        (shown,) = (str(note.message) for note in app._notifications)
        assert shown.startswith("not using ditto.yaml of '/w': ditto.yaml changed since")
        assert "\x1b" not in shown  # the file name came from the workspace: shown inert
