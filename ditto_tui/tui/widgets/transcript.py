"""The Transcript pane: an agent run's conversation as it happens (see :mod:`ditto_tui.tui.transcript`).

The task, the assistant's text rendered as Markdown while it streams, each tool call on one line with
its status (Enter or a click shows what came back), and the final answer. Model text is untrusted: its
control and hidden characters are shown as markers first (:func:`ditto_tui.tui.text.marked`) and Rich's
Markdown renderer lays it out with hyperlinks off, so a link shows its address as plain text and
nothing becomes a hyperlink (no OSC 8), a Textual action or markup; raw HTML is dropped. A long message
is laid out in segments so that each streamed piece redraws only the last one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from ditto_tui.runtime import ExecutionEvent
from ditto_tui.tui.run_state import arguments_summary
from ditto_tui.tui.text import marked, render_untrusted
from ditto_tui.tui.transcript import OUTCOME_KINDS, OutcomeKind, Transcript, Turn
from ditto_tui.tui.widgets.inline import one_line

__all__ = ["CallLine", "MarkdownText", "OutcomePanel", "TranscriptView"]

RESULT_CHARS = 4_000
SEGMENT_CHARS = 2_000
"""About how much of a message one Markdown segment holds (see :class:`_AssistantBlock`)."""
"""How much of what a call returned its expanded line shows."""

_STATUS_STYLES = {
    "proposed": ("…", "dim"),
    "awaiting": ("⏸", "bold yellow"),
    "approved": ("✓", "green"),
    "running": ("◐", "cyan"),
    "succeeded": ("✓", "bold green"),
    "failed": ("✗", "bold red"),
    "denied": ("⊘", "bold red"),
    "timed out": ("⌛", "bold red"),
    "cancelled": ("–", "dim"),
}
_STATUS_WORDS = {
    "proposed": "proposed",
    "awaiting": "waiting for your approval",
    "approved": "approved",
    "running": "running",
    "succeeded": "done",
    "failed": "failed",
    "denied": "denied",
    "timed out": "timed out",
    "cancelled": "cancelled",
}


class _Block(Vertical):
    """One turn: a heading line and its body."""

    DEFAULT_CSS = """
    _Block {
        height: auto;
        margin: 0 0 1 0;
        .heading { height: 1; text-style: bold; }
        .task { color: $text; }
        .problem { color: $error; }
    }
    """


class CallLine(Static, can_focus=True):
    """A tool call on one line: status, tool, arguments; Enter or a click shows what came back."""

    DEFAULT_CSS = """
    CallLine {
        height: auto;
        padding: 0 0 0 2;
        &:focus { background: $accent 30%; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "expand", "Show result", show=False),
        Binding("up", "step(-1)", "Previous call", show=False),
        Binding("down", "step(1)", "Next call", show=False),
    ]

    class Toggled(Message):
        """A call line was opened or closed (the pane keeps its scroll)."""

    def __init__(self, turn: Turn) -> None:
        super().__init__()
        self.turn = turn
        self.expanded = False
        self._drawn = -1

    def on_mount(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Draw the line again if its turn changed."""
        if self._drawn == self.turn.version:
            return
        self._drawn = self.turn.version
        self.update(self.line_text())

    def line_text(self) -> Text:
        """The line (and, when expanded, the result under it)."""
        turn = self.turn
        glyph, style = _STATUS_STYLES.get(turn.status, ("?", ""))
        line = Text.assemble((f"{glyph} ", style), (turn.tool, "bold"), " ")
        line.append_text(one_line(arguments_summary(turn.arguments), style="dim"))
        status = _STATUS_WORDS.get(turn.status, turn.status) + (", edited" if turn.edited else "")
        line.append(f"  {status}", style=style)
        if turn.result:
            line.append("  ▾" if self.expanded else "  ▸", style="dim")
        if self.expanded and turn.result:
            body = turn.result if len(turn.result) <= RESULT_CHARS else turn.result[:RESULT_CHARS] + "…"
            line.append("\n")
            line.append_text(render_untrusted(body, style="dim"))
        return line

    def action_expand(self) -> None:
        """Show or hide what the call returned."""
        self.expanded = not self.expanded
        self._drawn = -1
        self.redraw()

    def on_click(self, event: events.Click) -> None:
        self.action_expand()

    def action_step(self, step: int) -> None:
        """Go to the call before or after this one; past the first or the last, the pane scrolls."""
        view = next((node for node in self.ancestors if isinstance(node, TranscriptView)), None)
        calls = view.call_lines() if view is not None else [self]
        index = calls.index(self) + step if self in calls else -1
        if not 0 <= index < len(calls):
            raise SkipAction()
        calls[index].focus()


def _split_at(text: str) -> int:
    """Where a long segment may end: after its last blank line outside a code fence (0: nowhere)."""
    end = len(text)
    while (cut := text.rfind("\n\n", 0, end)) > 0:
        if _fences(text[:cut]) % 2 == 0:
            return cut + 2
        end = cut
    return 0


def _fences(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.lstrip().startswith(("```", "~~~")))


class MarkdownText(Static):
    """Untrusted Markdown as one widget: Rich's renderer, hyperlinks off (a link shows its text and its
    address as plain text), hidden characters as markers. ``source`` is the Markdown shown."""

    DEFAULT_CSS = """
    MarkdownText { height: auto; }
    """

    def __init__(self, source: str = "") -> None:
        super().__init__()
        self.source = ""
        self.show(source)

    def show(self, source: str) -> None:
        """Show ``source`` (already marked) instead."""
        from rich.markdown import Markdown as RichMarkdown  # markdown-it and Pygments: loaded when first used

        self.source = source
        self.document = RichMarkdown(source, hyperlinks=False, code_theme="ansi_dark")
        self.update(self.document if source else "")


class _AssistantBlock(_Block):
    """The assistant's message: Markdown, streamed while the model writes it.

    The text is laid out in segments of about :data:`SEGMENT_CHARS`, split at blank lines outside code
    fences: streamed text only ever redraws the last segment, so a long answer costs no more per piece
    than a short one.
    """

    def __init__(self, turn: Turn) -> None:
        super().__init__()
        self.turn = turn
        self.queued = ""
        self.segments: list[MarkdownText] = []
        self._initial = marked(turn.text)

    def compose(self) -> Iterable[Widget]:
        yield Static(Text("Assistant", style="bold magenta"), classes="heading")

    async def on_mount(self) -> None:
        if self._initial:
            await self._extend(self._initial)

    @property
    def source(self) -> str:
        """The Markdown shown, all segments together."""
        return "".join(segment.source for segment in self.segments)

    async def redraw(self) -> None:
        """Show what the model wrote since; if the whole message differs from it, show the message."""
        target = marked(self.turn.text)
        if target == self.queued:
            return
        if not target.startswith(self.queued):
            await self.remove_children(self.segments)
            self.segments = []
            self.queued = ""
        await self._extend(target[len(self.queued) :])

    async def _extend(self, more: str) -> None:
        self.queued += more
        last = self.segments[-1] if self.segments else None
        text = (last.source if last is not None else "") + more
        mounted: list[MarkdownText] = []
        while len(text) > SEGMENT_CHARS and (cut := _split_at(text)) > 0:
            head, text = text[:cut], text[cut:]
            if last is not None:
                last.show(head)
                last = None
            else:
                mounted.append(MarkdownText(head))
        if last is not None:
            last.show(text)
        elif text:
            mounted.append(MarkdownText(text))
        if mounted:
            self.segments.extend(mounted)
            await self.mount_all(mounted)


_OUTCOME_GLYPHS = {"approved": "✓", "denied": "⊘", "edited": "✎", "timed out": "⌛", "failed": "✗"}
_ENDINGS = {"succeeded": ("Finished", "bold green"), "failed": ("Failed", "bold red")}


class OutcomePanel(_Block):
    """How the run ended: its final answer and the counts of calls approved, denied, edited, timed out and
    failed. A count is a button: pressing it selects the next call it counts in the transcript."""

    DEFAULT_CSS = """
    OutcomePanel {
        border: round $success;
        padding: 0 1;
        &.-failed { border: round $error; }
        #counts {
            layout: grid; grid-size: 5; grid-columns: auto; grid-rows: 1; grid-gutter: 0 1; height: auto;
        }
        &.-narrow #counts { grid-size: 2; }
        #counts Button { min-width: 0; height: 1; border: none; margin: 0; padding: 0 1; }
    }
    """

    class CountSelected(Message):
        """A count was pressed: show the calls of ``kind``."""

        def __init__(self, kind: OutcomeKind) -> None:
            super().__init__()
            self.kind: OutcomeKind = kind

    def __init__(self, transcript: Transcript) -> None:
        super().__init__(id="outcome")
        self.transcript = transcript
        if transcript.status != "succeeded":
            self.add_class("-failed")

    def compose(self) -> Iterable[Widget]:
        transcript = self.transcript
        word, style = _ENDINGS.get(transcript.status, ("Cancelled", "bold yellow"))
        heading = Text.assemble((word, style), f" in {transcript.duration_ms / 1000:.1f} s")
        yield Static(heading, classes="heading")
        if transcript.answer and transcript.status == "succeeded":
            yield MarkdownText(marked(transcript.answer))
        counts = transcript.outcome()
        with Horizontal(id="counts"):
            for kind in OUTCOME_KINDS:
                label = f"{_OUTCOME_GLYPHS[kind]} {counts[kind]} {kind}"
                yield Button(label, id=f"count-{kind.replace(' ', '-')}", disabled=not counts[kind])

    def on_resize(self, event: events.Resize) -> None:
        """Counts on two columns when a row of five does not fit."""
        self.set_class(event.size.width < 80, "-narrow")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        kind = next(kind for kind in OUTCOME_KINDS if event.button.id == f"count-{kind.replace(' ', '-')}")
        self.post_message(self.CountSelected(kind))


class TranscriptView(VerticalScroll, can_focus=True):
    """The conversation of the run shown; :meth:`apply` folds events in and redraws what changed."""

    DEFAULT_CSS = """
    TranscriptView {
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = Transcript()
        self._widgets: dict[int, Widget] = {}
        self.outcome: OutcomePanel | None = None
        self.focused_index: int | None = None

    def on_mount(self) -> None:
        self.anchor()

    async def apply(self, events: Sequence[ExecutionEvent]) -> None:
        """Fold ``events`` in: mount the new turns, redraw the changed ones."""
        changed = self.transcript.apply(events)
        added = self.transcript.take_added()
        if not self.is_attached:
            return  # the app is closing (a run cancelled by quitting ends now): nothing is drawn any more
        if added:
            widgets = [self._widget(turn) for turn in added]
            await self.mount_all(widgets)
        for turn in sorted(changed, key=lambda turn: turn.index):
            widget = self._widgets.get(turn.index)
            if isinstance(widget, _AssistantBlock):
                await widget.redraw()
            elif isinstance(widget, CallLine):
                widget.redraw()
        if self.transcript.finished and self.transcript.agent and self.outcome is None:
            self.outcome = OutcomePanel(self.transcript)
            await self.mount(self.outcome)
            self.call_after_refresh(self._reveal_outcome)

    def _reveal_outcome(self) -> None:
        """Keep the outcome's heading in view when the panel is taller than the pane (the pane otherwise
        follows its end)."""
        outcome = self.outcome
        if outcome is not None and outcome.outer_size.height > self.scrollable_content_region.height:
            self.release_anchor()
            self.scroll_to_widget(outcome, top=True, animate=False, immediate=True)

    def on_outcome_panel_count_selected(self, event: OutcomePanel.CountSelected) -> None:
        """Select the next call of the pressed count (after the one selected, round to the first)."""
        lines = [line for line in self.call_lines() if line.turn in self.transcript.calls(event.kind)]
        if not lines:
            return
        after = [
            line for line in lines if self.focused_index is not None and line.turn.index > self.focused_index
        ]
        line = (after or lines)[0]
        self.focused_index = line.turn.index
        line.focus()
        self.scroll_to_widget(line, animate=False)
        self.post_message(self.CallSelected(line.turn))

    class CallSelected(Message):
        """A call of the transcript was selected (from the outcome panel): show it everywhere."""

        def __init__(self, turn: Turn) -> None:
            super().__init__()
            self.turn = turn

    async def restart(self) -> None:
        """Empty the pane for another run's conversation."""
        self.transcript = Transcript()
        self._widgets.clear()
        self.outcome = None
        self.focused_index = None
        await self.remove_children()
        self.anchor()

    def follow_up(self) -> None:
        """Keep the conversation for the run that continues it: its outcome panel goes, its turns stay."""
        self.transcript.follow_up()
        if self.outcome is not None:
            self.outcome.remove()
            self.outcome = None
        self.anchor()

    def _widget(self, turn: Turn) -> Widget:
        widget: Widget
        if turn.kind == "assistant":
            widget = _AssistantBlock(turn)
        elif turn.kind == "call":
            widget = CallLine(turn)
        elif turn.kind == "task":
            widget = _Block(
                Static(Text("Task", style="bold cyan"), classes="heading"),
                Static(render_untrusted(turn.text), classes="task"),
            )
        else:
            widget = _Block(Static(render_untrusted(turn.text), classes="problem"))
        self._widgets[turn.index] = widget
        return widget

    def call_lines(self) -> list[CallLine]:
        """Every call line shown, in order."""
        return [widget for widget in self._widgets.values() if isinstance(widget, CallLine)]
