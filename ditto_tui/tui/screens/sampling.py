"""The sampling view: what an MCP server wants the model to answer, then the model's answer, each decided.

With no model configured the view says so and the person may write the assistant's reply themselves.
Everything the server sent is untrusted text: shown with :func:`render_untrusted`, never as markup, its
control characters made visible.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static, TextArea

from ditto_tui.errors import ValidationError
from ditto_tui.supervise.mcp_requests import (
    EDITABLE,
    PERSON_MODEL,
    SamplingAnswer,
    SamplingRequest,
    SamplingResultAnswer,
    SamplingResultReview,
    message_text,
)
from ditto_tui.tui.screens.decision_modal import SHARED_CSS, DecisionModal
from ditto_tui.tui.text import editable_json, render_untrusted, untrusted_json
from ditto_tui.tui.widgets.inline import one_line

Mode = Literal["review", "edit", "write"]
Check = Callable[[Mapping[str, Any]], None]
_MODEL_ONLY = frozenset({"approve", "edit"})
"""What no request without a model offers: there is nothing to approve it for, or to edit it for."""


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


def no_model_text() -> Text:
    """What the view says when no model can answer: why, and what the person may do instead."""
    return Text.assemble(
        ("No model is configured", "bold"),
        " (infer: in ditto.yaml), so no model can answer this request.\n",
        ("w", "bold"),
        "  write the assistant's reply yourself: it goes to the server as written, with model ",
        (repr(PERSON_MODEL), "bold"),
        "\n",
        ("r", "bold"),
        "  reject the request\n\n",
    )


class SamplingModal(DecisionModal[SamplingAnswer | SamplingResultAnswer]):
    """One sampling request (approve, edit, reject) or the model's answer to one (the same keys).

    A request no model can answer offers ``w`` instead of approve and edit: the person writes the reply.
    ``check`` is the core's check of an edited request; an edit it refuses stays in the editor with the
    reason. Dismisses with the answer, or ``None`` when set aside for later. Keys work only after the
    view has been open for :data:`ARM_SECONDS`.
    """

    CSS_PATH = [SHARED_CSS, "sampling.tcss"]
    AUTO_FOCUS = "#body"
    MODES = {
        "review": frozenset({"approve", "edit", "write", "reject", "later"}),
        "edit": frozenset({"save_edit", "back"}),
        "write": frozenset({"send_written", "back"}),
    }
    DECISIONS = frozenset({"approve", "edit", "write", "reject", "save_edit", "send_written"})
    TOPIC = "Sampling"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve"),
        Binding("e", "edit", "Edit…"),
        Binding("w", "write", "Write the reply…"),
        Binding("r", "reject", "Reject"),
        Binding("ctrl+s", "save_edit", "Approve edited"),
        Binding("ctrl+s", "send_written", "Send my reply"),
        Binding("escape", "back", "Back"),
        Binding("escape", "later", "Later"),
    ]

    body_text = getters.query_one("#content", Static)
    problem = getters.query_one("#problem", Static)
    editor = getters.query_one("#editor", TextArea)

    def __init__(self, request: SamplingRequest | SamplingResultReview, check: Check | None = None) -> None:
        super().__init__()
        self.request = request
        self.check = check

    @property
    def reviewing(self) -> bool:
        """Whether this is the model's answer rather than the server's request."""
        return isinstance(self.request, SamplingResultReview)

    @property
    def has_model(self) -> bool:
        """Whether a model answers (or answered) this request; without one only the person can."""
        return isinstance(self.request, SamplingResultReview) or self.request.has_model

    def compose_body(self) -> ComposeResult:
        yield Static(id="content")

    def compose_below(self) -> ComposeResult:
        yield TextArea(id="editor", soft_wrap=True)
        yield Static(id="problem")

    def on_mount(self) -> None:
        self.heading.update(self._heading())
        self.body_text.update(self._content())
        self.arm_later()
        self._set_mode("review")

    def _heading(self) -> Text:
        request = self.request
        server = one_line(request.server, style="bold")
        if isinstance(request, SamplingResultReview):
            return Text.assemble(("Send the model's answer to MCP server ", "bold"), server)
        if not request.has_model:
            return Text.assemble(
                ("No model is configured: answer MCP server ", "bold"), server, (" yourself?", "bold")
            )
        return Text.assemble(("Let the model answer MCP server ", "bold"), server)

    def _content(self) -> Text:
        request = self.request
        if isinstance(request, SamplingResultReview):
            return Text.assemble(
                ("The model's answer (model ", "bold underline"),
                one_line(str(request.result.get("model", "?"))),
                (")\n", "bold underline"),
                render_untrusted(request.text),
                ("\n\nWhat the server asked\n", "bold underline"),
                request_text(request.request),
            )
        if not request.has_model:
            return Text.assemble(no_model_text(), request_text(request))
        return request_text(request)

    def _set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self.editor.display = mode in ("edit", "write")
        self.problem.update("")
        self.refresh_bindings()

    def offers(self, action: str) -> bool:
        """Approve and edit need a model; writing the reply is for a request without one."""
        if action in _MODEL_ONLY and not self.has_model:
            return False
        if action == "write" and self.has_model:
            return False
        return super().offers(action)

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
                {key: request.params[key] for key in EDITABLE if key in request.params}
            )
        self._set_mode("edit")
        self.editor.focus()

    def action_write(self) -> None:
        """Write the assistant's reply in the editor (a request no model can answer)."""
        self.editor.text = ""
        self.editor.placeholder = "The assistant's reply, sent to the server as written"
        self._set_mode("write")
        self.editor.focus()

    def action_back(self) -> None:
        """Leave the editor unchanged."""
        self._set_mode("review")
        self.body.focus()

    def action_save_edit(self) -> None:
        """Approve what the editor holds (a request's edit once it passes the core's check)."""
        text = self.editor.text
        request = self.request
        if isinstance(request, SamplingResultReview):
            self._close(SamplingResultAnswer(approves=True, text=text))
            return
        edited = _edited_params(request.params, text)
        if isinstance(edited, str):
            self.problem.update(render_untrusted(edited))
            return
        if self.check is not None:
            try:
                self.check(edited)
            except ValidationError as exc:
                self.problem.update(render_untrusted(exc.message))
                return
        self._close(SamplingAnswer(approves=True, params=edited))

    def action_send_written(self) -> None:
        """Send the reply the person wrote (not an empty one)."""
        text = self.editor.text
        if not text.strip():
            self.problem.update(Text("Write the reply first, or press Escape to go back."))
            return
        self._close(SamplingAnswer(approves=True, text=text))


def _edited_params(params: Mapping[str, Any], text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(value, dict) or not set(value) <= set(EDITABLE):
        return f"an object with only {', '.join(EDITABLE)}"
    return {**params, **value}


__all__ = ["SamplingModal", "no_model_text", "request_text"]
