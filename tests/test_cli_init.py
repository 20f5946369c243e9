"""``ditto-tui init``: a commented ditto.yaml for a folder of one's own, the folder trusted, and then used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.project import project_config_text
from ditto_tui.trust import is_trusted
from ditto_tui.workspace import resolve_config


def test_init_writes_a_commented_config_trusts_the_folder_and_it_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not is_trusted(tmp_path)
    assert main(["init", str(tmp_path)]) == 0
    written = tmp_path / "ditto.yaml"
    assert written.read_text(encoding="utf-8") == project_config_text()
    assert "ditto-tui init" in written.read_text(encoding="utf-8").splitlines()[0]
    assert is_trusted(tmp_path)
    resolved = resolve_config(None, tmp_path)
    assert resolved.source == os.fspath(written)
    sandbox = resolved.config.sandbox
    assert sandbox.read and sandbox.write and "write_text" in sandbox.tools and sandbox.network == ()
    out = capsys.readouterr().out
    assert f"Wrote {written} and trusted {tmp_path}." in out


def test_init_never_overwrites_a_config_nor_writes_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "ditto.yaml").write_text("sandbox: {}\n", encoding="utf-8")
    assert main(["init", str(mine)]) == 2
    assert (mine / "ditto.yaml").read_text(encoding="utf-8") == "sandbox: {}\n" and not is_trusted(mine)
    linked = tmp_path / "linked"
    linked.mkdir()
    outside = tmp_path / "outside.yaml"
    os.symlink(outside, linked / "ditto.yaml")  # dangling: init must not create the file it points at
    assert main(["init", str(linked)]) == 2
    assert not outside.exists() and not is_trusted(linked)
    assert "exists already" in capsys.readouterr().err


def test_init_of_something_that_is_no_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
