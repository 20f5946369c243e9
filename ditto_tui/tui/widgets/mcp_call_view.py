"""What an MCP tool call from the browser shows: its progress while it runs, then what came back.

While the call runs: a progress bar fed by the server's progress notifications, their last message, and a
button (and ``x``) to cancel it. Once it ends: each content block as a person reads it (text through the
untrusted-text rules, images drawn in the terminal, audio and binary resources by type and size, content
annotations beside their block), a list of the resource links and media to open or save, and then the
Observation exactly as the model gets it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from ditto_tui.contracts import Observation, TextPart
from ditto_tui.errors import PathError
from ditto_tui.interaction.mcp import McpBlock
from ditto_tui.tui.mcp_source import McpSource
from ditto_tui.tui.text import render_untrusted, untrusted_json
from ditto_tui.tui.widgets.mcp_browse_text import bounded
from ditto_tui.tui.widgets.mcp_image import picture
from ditto_tui.tui.widgets.mcp_save import save_under_workspace

__all__ = ["McpCallView", "block_text", "observation_text"]

_KIND_NAMES = {"image": "Image", "audio": "Audio", "resource": "Embedded resource", "link": "Resource link"}


def observation_text(observation: Observation) -> Text:
    """An Observation: a status line, then every field as highlighted JSON (cut with a note when huge)."""
    style = "green" if observation.status == "success" else "red"
    text = Text("Observation  ", style="bold")
    text.append(observation.status, style=f"bold {style}")
    text.append("  ")
    text.append_text(render_untrusted(observation.source, newlines="visible"))
    text.append("  (what the model reads)", style="dim")
    text.append("\n")
    text.append_text(untrusted_json(observation.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return bounded(text)


def _annotations(notes: dict[str, Any] | None) -> Text:
    if not notes:
        return Text()
    parts = []
    if "audience" in notes:
        parts.append(f"for {' and '.join(map(str, notes['audience'] or ()))}")
    if "priority" in notes:
        parts.append(f"priority {notes['priority']}")
    if "lastModified" in notes:
        parts.append(f"modified {notes['lastModified']}")
    return Text("  [").append_text(render_untrusted(", ".join(parts))).append("]")


def _media_line(block: McpBlock) -> Text:
    line = Text(_KIND_NAMES.get(block.kind, block.kind), style="bold")
    if block.uri:
        line.append(" ").append_text(render_untrusted(block.uri, newlines="visible", style="underline"))
    if block.mime_type:
        line.append("  ").append_text(render_untrusted(block.mime_type))
    if block.size is not None:
        line.append(f"  {block.size:,} bytes")
    return line.append_text(_annotations(block.annotations))


def block_text(block: McpBlock) -> Text:
    """One content block as a person reads it (never markup; images drawn as half cells)."""
    match block.kind:
        case "text":
            head = Text("Text", style="bold").append_text(_annotations(block.annotations))
            return head.append("\n").append_text(render_untrusted(block.text or ""))
        case "image":
            drawn = picture(block.payload())
            return _media_line(block).append("  (w saves it)", style="dim").append("\n").append_text(drawn)
        case "audio":
            return _media_line(block).append("  (w saves it)", style="dim")
        case "link":
            line = _media_line(block).append("\n  ")
            line.append_text(render_untrusted(block.title or block.name or "", newlines="visible"))
            if block.description:
                line.append(" — ").append_text(render_untrusted(block.description, newlines="visible"))
            return line.append("  (Enter in the list below opens it)", style="dim")
        case "resource":
            line = _media_line(block)
            if block.text is not None:
                return line.append("\n").append_text(render_untrusted(block.text))
            return line.append("  (w saves it)", style="dim")


def _text_blocks(observation: Observation) -> tuple[McpBlock, ...]:
    """The text of an Observation's tool message as text blocks (none when it holds no text)."""
    content = observation.message.content
    if isinstance(content, str):
        return (McpBlock(kind="text", text=content),) if content else ()
    if isinstance(content, list):
        texts = [part.text for part in content if isinstance(part, TextPart)]
        return tuple(McpBlock(kind="text", text=text) for text in texts)
    return ()


def _item_label(block: McpBlock, number: int) -> Text:
    """``open <name or URI>`` for a link, ``save <kind> N (type, size)`` for media."""
    if block.kind == "link":
        label = Text("open  ", style="bold")
        return label.append_text(render_untrusted(block.name or block.uri or "", newlines="visible"))
    label = Text(f"save  {_KIND_NAMES.get(block.kind, block.kind).lower()} {number}", style="bold")
    details = [render_untrusted(block.uri)] if block.uri else []
    details += [render_untrusted(block.mime_type)] if block.mime_type else []
    details += [Text(f"{block.size:,} bytes")] if block.size is not None else []
    return label.append("  ").append_text(Text(", ").join(details)) if details else label


class McpCallView(Vertical):
    """The Invoke tab's lower half: a running call's progress, then its content, links and Observation."""

    DEFAULT_CSS = """
    McpCallView { height: auto; }
    McpCallView > #mcp-call-running { height: auto; display: none; }
    McpCallView > #mcp-call-running > ProgressBar { width: auto; margin-right: 2; }
    McpCallView > #mcp-call-running > Button { margin-left: 2; }
    McpCallView > #mcp-call-progress-note { height: auto; }
    McpCallView > #mcp-call-content { height: auto; }
    McpCallView > #mcp-call-items { height: auto; max-height: 8; display: none; }
    McpCallView > #mcp-call-said { height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("w", "save", "Save", show=False)]

    class CancelRequested(Message):
        """The person asked to cancel the running call."""

    class OpenResource(Message):
        """The person chose a resource link: read ``uri`` on ``server`` in the Resources tab."""

        def __init__(self, server: str, uri: str) -> None:
            super().__init__()
            self.server = server
            self.uri = uri

    def __init__(self, source: McpSource, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.server: str | None = None
        self.call_id: str | None = None
        self.blocks: tuple[McpBlock, ...] = ()
        self.items: list[McpBlock] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="mcp-call-running"):
            yield ProgressBar(id="mcp-call-progress", show_eta=False)
            yield Button("Cancel call (x, ctrl+x)", id="mcp-call-cancel", variant="warning", compact=True)
        yield Static(id="mcp-call-progress-note")
        yield Static(id="mcp-call-content")
        yield OptionList(id="mcp-call-items")
        yield Static(id="mcp-call-said")
        yield Static(id="mcp-result")

    def on_mount(self) -> None:
        for selector in ("#mcp-call-progress-note", "#mcp-call-content", "#mcp-call-said", "#mcp-result"):
            self._show(selector, "")

    # -- a running call ---------------------------------------------------------------------------------

    def started(self, server: str, call_id: str, waiting: Text) -> None:
        """A call began: clear the last one, show the indeterminate bar and ``waiting``."""
        self.server, self.call_id, self.blocks, self.items = server, call_id, (), []
        self.query_one("#mcp-call-running").display = True
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._show("#mcp-call-progress-note", waiting)
        self._show("#mcp-call-content", "")
        self._show_items()
        self._say(Text())
        self._show("#mcp-result", "")

    def progressed(self, call_id: str, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification of the running call (others are ignored)."""
        if call_id != self.call_id:
            return
        self.query_one(ProgressBar).update(total=total, progress=progress)
        note = Text(f"progress {progress:g}" + (f" of {total:g}" if total is not None else ""), style="dim")
        if message:
            note.append("  ").append_text(render_untrusted(message, newlines="visible"))
        self._show("#mcp-call-progress-note", note)

    def ended(self, outcome: Observation | Text, blocks: Sequence[McpBlock] | None = None) -> None:
        """The call ended with an Observation (and the blocks the server sent) or a problem line.

        A result of text only is not kept as blocks by the registry: its text is read from the
        Observation, so it shows as plain text too, not only JSON-escaped.
        """
        self.query_one("#mcp-call-running").display = False
        self._show("#mcp-call-progress-note", "")
        if blocks is None and isinstance(outcome, Observation):
            blocks = _text_blocks(outcome)
        self.blocks = tuple(blocks or ())
        content = Text()
        for index, block in enumerate(self.blocks):
            content.append("\n" if index else "").append_text(block_text(block))
        self._show("#mcp-call-content", bounded(content) if self.blocks else "")
        self.items = [block for block in self.blocks if block.kind == "link" or block.data is not None]
        self._show_items()
        shown = observation_text(outcome) if isinstance(outcome, Observation) else outcome
        self._show("#mcp-result", shown)

    @property
    def running(self) -> bool:
        """Whether a call is running (its progress bar shows)."""
        return bool(self.query_one("#mcp-call-running").display)

    @on(Button.Pressed, "#mcp-call-cancel")
    def _cancel_pressed(self) -> None:
        self.post_message(self.CancelRequested())

    # -- links and media --------------------------------------------------------------------------------

    def _show_items(self) -> None:
        listing = self.query_one("#mcp-call-items", OptionList)
        listing.clear_options()
        listing.add_options(
            [Option(_item_label(block, index + 1), id=str(index)) for index, block in enumerate(self.items)]
        )
        listing.display = bool(self.items)
        self._drop_save_box()

    def _drop_save_box(self) -> None:
        for box in self.query("#mcp-call-save-name"):
            box.remove()

    def _chosen(self) -> McpBlock | None:
        listing = self.query_one("#mcp-call-items", OptionList)
        index = listing.highlighted
        return self.items[index] if index is not None and index < len(self.items) else None

    @on(OptionList.OptionSelected, "#mcp-call-items")
    async def _item_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        block = self._chosen()
        if block is None:
            return
        if block.kind == "link" and block.uri and self.server:
            self.post_message(self.OpenResource(self.server, block.uri))
        else:
            await self.action_save()

    async def action_save(self) -> None:
        """Ask for a file name to save the highlighted image, audio or binary resource under the workspace."""
        block = self._chosen()
        if block is None or block.data is None:
            self._say(Text("Highlight an image, audio clip or binary resource in the list to save it."))
            return
        found = self.query("#mcp-call-save-name")
        if found:
            box = found.first(Input)
        else:
            box = Input(placeholder="file name under the workspace; Enter saves", id="mcp-call-save-name")
            await self.mount(box, before="#mcp-call-said")
        box.value = ""
        box.focus()

    @on(Input.Submitted, "#mcp-call-save-name")
    def _save_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        block = self._chosen()
        data = block.payload() if block is not None else None
        if data is None:
            self._say(Text("Nothing to save: the data is not valid base64 or is too big.", style="red"))
            return
        try:
            saved = save_under_workspace(self.source.workspace, event.value, data)
        except PathError as exc:
            self._say(
                Text("Not saved: ", style="bold red").append_text(render_untrusted(exc.message, style="red"))
            )
            return
        self.query_one("#mcp-call-items", OptionList).focus()
        self._drop_save_box()
        self._say(
            Text(f"Saved {len(data):,} bytes to ").append_text(render_untrusted(saved, newlines="visible"))
        )

    def _say(self, text: Text) -> None:
        self._show("#mcp-call-said", text)

    def _show(self, selector: str, text: Text | str) -> None:
        """Show ``text`` in one of the view's lines; an empty one takes no room."""
        line = self.query_one(selector, Static)
        line.update(text)
        line.display = bool(text.plain if isinstance(text, Text) else text)
