"""The sampling view: what an MCP server wants the model to answer, then the model's answer, each decided.

Everything the server sent is untrusted text: shown with :func:`render_untrusted`, never as markup, its
control characters made visible.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static, TextArea

from ditto_tui.supervise.mcp_requests import (
    SamplingAnswer,
    SamplingRequest,
    SamplingResultAnswer,
    SamplingResultReview,
    message_text,
)
from ditto_tui.tui.screens.decision_modal import ARM_SECONDS, SHARED_CSS, DecisionModal
from ditto_tui.tui.text import editable_json, render_untrusted, untrusted_json
from ditto_tui.tui.widgets.inline import one_line

Mode = Literal["review", "edit"]
_EDITABLE = ("systemPrompt", "messages", "maxTokens")


def request_text(request: SamplingRequest) -> Text:
    """Server, system prompt, model preferences, token limit and every message, as plain text."""
    label = "dim"
    lines = [
        Text.assemble(("Server             ", label), one_line(request.server, style="bold")),
        Text.assemble(("Token limit        ", label), str(request.max_tokens or "(none)")),
        Text.assemble(("Model preferences  ", label), untrusted_json(request.model_preferences or {})),
        Text("System prompt", style="bold underline"),
        render_untrusted(request.system_prompt or "(none)", newlines="keep"),
    ]
    for number, message in enumerate(request.messages, 1):
        role = str(message.get("role", "?"))
        lines.append(Text.assemble((f"Message {number} ", "bold underline"), one_line(role, style="bold")))
        lines.append(render_untrusted(message_text(message)))
    return Text("\n").join(lines)


class SamplingModal(DecisionModal[SamplingAnswer | SamplingResultAnswer]):
    """One sampling request (approve, edit, reject) or the model's answer to one (the same keys).

    Dismisses with the answer, or ``None`` when set aside for later. Keys work only after the view has
    been open for :data:`ARM_SECONDS`.
    """

    CSS_PATH = [SHARED_CSS, "sampling.tcss"]
    AUTO_FOCUS = "#body"
    MODES = {
        "review": frozenset({"approve", "edit", "reject", "later"}),
        "edit": frozenset({"save_edit", "back"}),
    }
    DECISIONS = frozenset({"approve", "edit", "reject", "save_edit"})
    TOPIC = "Sampling"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve"),
        Binding("e", "edit", "Edit…"),
        Binding("r", "reject", "Reject"),
        Binding("ctrl+s", "save_edit", "Approve edited"),
        Binding("escape", "back", "Back"),
        Binding("escape", "later", "Later"),
    ]

    body_text = getters.query_one("#content", Static)
    problem = getters.query_one("#problem", Static)
    editor = getters.query_one("#editor", TextArea)

    def __init__(self, request: SamplingRequest | SamplingResultReview) -> None:
        super().__init__()
        self.request = request

    @property
    def reviewing(self) -> bool:
        """Whether this is the model's answer rather than the server's request."""
        return isinstance(self.request, SamplingResultReview)

    def compose_body(self) -> ComposeResult:
        yield Static(id="content")

    def compose_below(self) -> ComposeResult:
        yield TextArea(id="editor", soft_wrap=True)
        yield Static(id="problem")

    def on_mount(self) -> None:
        request = self.request
        what = (
            "Send the model's answer to"
            if isinstance(request, SamplingResultReview)
            else "Let the model answer"
        )
        self.heading.update(
            Text.assemble((what + " MCP server ", "bold"), one_line(request.server, style="bold"))
        )
        if isinstance(request, SamplingResultReview):
            content = Text.assemble(
                ("The model's answer (model ", "bold underline"),
                one_line(str(request.result.get("model", "?"))),
                (")\n", "bold underline"),
                render_untrusted(request.text),
                ("\n\nWhat the server asked\n", "bold underline"),
                request_text(request.request),
            )
        else:
            content = request_text(request)
        self.body_text.update(content)
        self.set_timer(ARM_SECONDS, self.arm)
        self._set_mode("review")

    def _set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self.editor.display = mode == "edit"
        self.problem.update("")
        self.refresh_bindings()

    def action_approve(self) -> None:
        """Approve as shown."""
        self._close(SamplingResultAnswer(approves=True) if self.reviewing else SamplingAnswer(approves=True))

    def action_reject(self) -> None:
        """Refuse: the server is told the user rejected it."""
        reason = "Rejected by the user"
        if self.reviewing:
            self._close(SamplingResultAnswer(approves=False, reason=reason))
        else:
            self._close(SamplingAnswer(approves=False, reason=reason))

    def action_later(self) -> None:
        """Set it aside undecided (``p`` shows it again)."""
        self._close(None)

    def action_edit(self) -> None:
        """Edit the answer's text, or the request's system prompt, messages and token limit as JSON."""
        request = self.request
        if isinstance(request, SamplingResultReview):
            self.editor.text = request.text
        else:
            self.editor.text = editable_json(
                {key: request.params[key] for key in _EDITABLE if key in request.params}
            )
        self._set_mode("edit")
        self.editor.focus()

    def action_back(self) -> None:
        """Leave the editor unchanged."""
        self._set_mode("review")
        self.body.focus()

    def action_save_edit(self) -> None:
        """Approve what the editor holds (a request's JSON must still be an object of the same keys)."""
        text = self.editor.text
        request = self.request
        if isinstance(request, SamplingResultReview):
            self._close(SamplingResultAnswer(approves=True, text=text))
            return
        edited = _edited_params(request.params, text)
        if isinstance(edited, str):
            self.problem.update(render_untrusted(edited))
            return
        self._close(SamplingAnswer(approves=True, params=edited))


def _edited_params(params: Mapping[str, Any], text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(value, dict) or not set(value) <= set(_EDITABLE):
        return f"an object with only {', '.join(_EDITABLE)}"
    if not isinstance(value.get("messages", []), list):
        return "messages must be a list"
    return {**params, **value}


__all__ = ["SamplingModal", "request_text"]
