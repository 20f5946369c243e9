"""The prompt box: where a person types the agent's task, or a follow-up once a run has ended.

Multi-line: Enter starts the run; Ctrl+J (Shift+Enter where the terminal tells it apart), or a
backslash before Enter, starts a new line; pasted text keeps its lines. Ctrl+↑ and Ctrl+↓ go through
the tasks given before in this workspace, which are kept in the workspace's state directory
(``prompt-history.jsonl``, never inside the workspace). Empty, Enter gives the graph's own task when
it has one (shown as the placeholder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static, TextArea

from ditto_tui.home import StateDirError, append_private, workspace_state_dir
from ditto_tui.tui.widgets.inline import visible

__all__ = ["HISTORY_FILE", "MAX_HISTORY", "PromptBox", "PromptHistory"]

HISTORY_FILE = "prompt-history.jsonl"
MAX_HISTORY = 200
"""How many earlier tasks are offered (the newest)."""
MAX_TASK_CHARS = 100_000


class PromptHistory:
    """The tasks given before in one workspace, oldest first; :meth:`add` appends to the file."""

    def __init__(self, workspace: Path) -> None:
        self.path = workspace_state_dir(workspace.resolve()) / HISTORY_FILE
        self.entries = self._read()

    def _read(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        entries: list[str] = []
        for line in lines[-MAX_HISTORY:]:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str) and value.strip():
                entries.append(value)
        return entries

    def add(self, task: str) -> None:
        """Remember ``task`` (not twice in a row); a state directory that cannot be written is no error."""
        if self.entries and self.entries[-1] == task:
            return
        self.entries.append(task)
        try:
            append_private(self.path, json.dumps(task, ensure_ascii=False) + "\n")
        except (StateDirError, OSError):
            pass


class _PromptArea(TextArea):
    """A text area where Enter submits and Ctrl+J or ``\\`` Enter breaks the line."""

    class Submit(Message):
        """Enter was pressed."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            row, column = self.cursor_location
            line = self.document.get_line(row)
            if column > 0 and line[column - 1 : column] == "\\":
                self.replace("\n", (row, column - 1), (row, column))
                return
            self.post_message(self.Submit())
            return
        if event.key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        await super()._on_key(event)


class PromptBox(Vertical):
    """Asks for the task (or a follow-up); posts :class:`PromptBox.Submitted` with the text."""

    DEFAULT_CSS = """
    PromptBox {
        height: auto;
        max-height: 12;
        border: round $accent;
        border-title-color: $text;
        padding: 0 1;
        #prompt-hint { height: 1; color: $text-muted; }
        #prompt-text { height: auto; min-height: 2; max-height: 8; border: none; padding: 0; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+up", "history(-1)", "Earlier task", show=False),
        Binding("ctrl+down", "history(1)", "Later task", show=False),
        Binding("escape", "leave", "Leave the box", show=False),
    ]

    class Submitted(Message):
        """The person gave ``text`` (never empty)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, history: PromptHistory, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.history = history
        self.default: str | None = None
        self._position: int | None = None
        self._draft = ""
        self.asked: tuple[str, str, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="prompt-hint")
        yield _PromptArea(id="prompt-text", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")

    @property
    def area(self) -> TextArea:
        """The text area typed into."""
        return self.query_one("#prompt-text", TextArea)

    def ask(
        self,
        title: str,
        hint: str,
        *,
        default: str | None = None,
        placeholder: str = "Type the task for the agent",
    ) -> None:
        """Show the box, empty and focused, with ``title`` and ``hint``; an empty Enter gives ``default``."""
        self.border_title = title
        self.default = default
        self.asked = (title, hint, default)
        self.query_one("#prompt-hint", Static).update(Text(hint))
        area = self.area
        area.load_text("")
        if default:
            placeholder = f"Enter runs the graph's task: {default}"
        area.placeholder = Content(visible(placeholder))
        self._position = None
        self.display = True
        area.focus()

    def on__prompt_area_submit(self, event: _PromptArea.Submit) -> None:
        event.stop()
        text = self.area.text
        if not text.strip():
            if not self.default:
                self.app.bell()
                self.notify("Type the task first: Enter starts the run with it.", markup=False)
                return
            text = self.default
        if len(text) > MAX_TASK_CHARS:
            self.notify(
                f"The task is longer than {MAX_TASK_CHARS} characters.", severity="error", markup=False
            )
            return
        self.history.add(text)
        self.display = False
        self.post_message(self.Submitted(text))

    def action_leave(self) -> None:
        """Hide the box, so keys reach the screen again (the screen's ``i`` brings it back)."""
        self.display = False
        self.screen.focus_next()

    def reopen(self) -> bool:
        """Show the box again as it was last asked, keeping what was typed; False if it never was."""
        if self.asked is None:
            return False
        self.display = True
        self.area.focus()
        return True

    def action_history(self, step: int) -> None:
        """Show an earlier (``-1``) or later (``1``) task of the history in the box."""
        entries = self.history.entries
        if not entries:
            return
        if self._position is None:
            if step > 0:
                return
            self._draft = self.area.text
            position = len(entries) - 1
        else:
            position = self._position + step
        if position >= len(entries):
            self._position = None
            self.area.load_text(self._draft)
            return
        self._position = max(0, position)
        self.area.load_text(entries[self._position])
        self.area.move_cursor(self.area.document.end)
