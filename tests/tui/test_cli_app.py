"""The command line opens the app unless --headless, and headless runs never load Textual."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.tui.screens.grants import GrantsModal
from tests.tui.run_fixtures import DATA, ROOT, SIZE, app_for, run_screen, screen_text, wait_until, workspace

PROBE = """
import sys
from ditto_tui.__main__ import main
code = main(["run", sys.argv[1], "--headless", "--approve", "allow", "--workspace", sys.argv[2]])
print(code, any(name == "textual" or name.startswith("textual.") for name in sys.modules))
"""


def test_help_names_the_screens_the_keys_and_the_mcp_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for part in ("mcp ", "browse the MCP servers", "a approves once", "d denies", "--headless"):
        assert part in text, part


def test_a_headless_run_never_imports_textual(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    shutil.copy(DATA / "ditto.tui.yaml", root / "ditto.yaml")
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "graphs/write_note.py"), str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines()[-1] == "0 False"
    assert (root / ".ditto/notes/hello.md").exists()


async def test_the_command_palette_offers_the_run_screen_actions(tmp_path: Path) -> None:
    app = app_for(workspace(tmp_path), "tests/data/graphs/slow_call.py")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "read" in run_screen(app).model.nodes)
        await pilot.press("ctrl+p")
        await pilot.press(*"Grants")
        await wait_until(pilot, lambda: "Tools approved always" in screen_text(app))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, GrantsModal))
        await pilot.press("escape")
        run_screen(app).runner.cancel()  # type: ignore[union-attr]
