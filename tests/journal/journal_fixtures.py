"""Helpers for the journal tests: workspaces, the test graphs, files that record or fail, screen text."""

from __future__ import annotations

import asyncio
import errno
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from ditto_tui.config import RuntimeConfig, load_runtime_config_file
from ditto_tui.home import runs_dir
from ditto_tui.program import Program, load_program
from ditto_tui.supervise.journal import DiskFile, JournalFile, open_journal_file

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
STEPS_GRAPH = DATA / "graphs" / "recorded_steps.py"
NOTE_GRAPH = DATA / "graphs" / "recorded_note.py"

STEPS_CONFIG = """\
sandbox:
  tools: [record_step]
  write: true
approval:
  rules:
    - tool: record_*
      decision: ask
"""

NOTE_CONFIG = """\
sandbox:
  tools: [read_text, record_note]
  read: true
  write: true
approval:
  rules:
    - tool: read_*
      decision: allow
    - tool: record_*
      decision: ask
"""


def make_workspace(tmp_path: Path, config: str, name: str = "ws") -> Path:
    """A workspace with a README and ``config`` as its ditto.yaml."""
    root = tmp_path / name
    root.mkdir()
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    (root / "ditto.yaml").write_text(config, encoding="utf-8")
    return root


def headless_steps(root: Path) -> list[str]:
    """The command line of a headless run of the steps graph in ``root``, with its own ditto.yaml."""
    config = str(root / "ditto.yaml")
    return ["run", str(STEPS_GRAPH), "--headless", "--workspace", str(root), "--config", config]


def load(root: Path, graph_file: Path, env: dict[str, str] | None = None) -> tuple[RuntimeConfig, Program]:
    """The workspace config and the program of ``graph_file``, as the CLI loads them."""
    config = load_runtime_config_file(root / "ditto.yaml", env or {})
    return config, load_program(graph_file, config, root)


def executions(root: Path) -> list[str]:
    """The call ids the recording tools executed, in order."""
    log = root / "executions.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def journals(root: Path) -> list[Path]:
    """Every journal file of the workspace."""
    directory = runs_dir(root)
    return sorted(directory.glob("*.jsonl")) if directory.is_dir() else []


class RecordingFile:
    """A real journal file that also notes each write and fsync in a shared log."""

    def __init__(self, path: Path, log: list[tuple[str, str]]) -> None:
        self.file = open_journal_file(path)
        self.log = log

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.log.append(("write", data.decode("utf-8")))

    def sync(self) -> None:
        self.file.sync()
        self.log.append(("sync", ""))

    def close(self) -> None:
        self.file.close()


class FullDisk(DiskFile):
    """A journal file that accepts ``room`` bytes, then fails like a full disk (a short write first)."""

    def __init__(self, path: Path, room: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(path)
        self.room = room

    def write(self, data: bytes) -> None:
        if len(data) > self.room:
            super().write(data[: self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        super().write(data)


def full_disk_opener(room: int) -> Callable[[Path], JournalFile]:
    """An opener whose files fill up after ``room`` bytes."""
    return lambda path: FullDisk(path, room)


def screen_text(app: App[Any]) -> str:
    """Everything on screen as plain text, one line per row."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


async def wait_until(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` holds (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.01)
