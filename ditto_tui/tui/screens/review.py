"""The result review view: a call's result held before any node or model sees it; pass, redact or fail.

The result is untrusted text (a file, a web page or a server wrote it): it is shown with
:func:`render_untrusted`, never as markup, its control characters made visible, and the spans the review
heuristic (:func:`~ditto_tui.supervise.review.suspicious_spans`) found are highlighted and listed. A
redaction is the result's wire form edited as JSON, checked as an ``ExternalResult`` of the same call
before it can be accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from rich.style import Style
from rich.text import Text
from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static, TextArea

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import ValidationError
from ditto_tui.json_text import parse_json_text
from ditto_tui.supervise.requests import ReviewDecision, ReviewRequest
from ditto_tui.supervise.review import Span, labels_of, result_text, suspicious_spans
from ditto_tui.tui.screens.decision_modal import SHARED_CSS, DecisionModal
from ditto_tui.tui.text import editable_json, render_untrusted
from ditto_tui.tui.widgets.inline import one_line

Mode = Literal["review", "redact", "redacted", "fail"]
Check = Callable[[Mapping[str, Any]], None]

FLAGGED_STYLE = Style(reverse=True, bold=True)
"""How a span that looks like an instruction to a model stands out in the result."""
SHOWN_CHARACTERS = 100_000
"""At most this much of a result's text is laid out in the view; the editor holds all of it."""
_EXCERPT = 60
"""Characters of each flagged span quoted in the list of spans."""
_HINTS: Mapping[Mode, str] = {
    "review": "Nothing has seen this result yet: read it (arrows scroll), then decide.",
    "redact": "Edit the result as JSON, then ctrl+s checks it. Escape goes back.",
    "redacted": "Valid: r sends it on instead of the original, e edits again, Escape: back.",
    "fail": "Enter fails the call (RESULT_REJECTED) with this reason. Escape goes back.",
}


def flagged_text(text: str, spans: Sequence[Span], *, limit: int = SHOWN_CHARACTERS) -> Text:
    """``text`` as plain ``Text`` with every character some span covers in :data:`FLAGGED_STYLE`.

    Spans may overlap; each run of covered characters is highlighted once. Only the first ``limit``
    characters are laid out, followed by a note of how many more there are.
    """
    shown = text[:limit]
    covered = _merged((max(0, s.start), min(len(shown), s.end)) for s in spans)
    out = Text(end="")
    at = 0
    for start, end in covered:
        if start > at:
            out.append_text(render_untrusted(shown[at:start]))
        out.append_text(render_untrusted(shown[start:end], style=FLAGGED_STYLE))
        at = end
    if at < len(shown):
        out.append_text(render_untrusted(shown[at:]))
    if len(text) > limit:
        more = len(text) - limit
        out.append(f"\n… {more} more characters not shown here (r opens the whole result)", style="italic")
    return out


def _merged(intervals: Any) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(interval for interval in intervals if interval[0] < interval[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def flags_line(spans: Sequence[Span]) -> Text:
    """One line saying how many spans look like instructions to a model, and of which kinds."""
    if not spans:
        return Text("Nothing in it looks like instructions to a model (a heuristic: read it anyway).")
    count = len(spans)
    noun = "span looks" if count == 1 else "spans look"
    return Text(f"{count} {noun} like instructions to a model: {', '.join(labels_of(spans))}")


def spans_list(text: str, spans: Sequence[Span]) -> Text:
    """Each flagged span on a line of its own: its number, label and the text it covers."""
    lines = [Text("Flagged spans", style="bold underline")]
    for number, span in enumerate(spans, 1):
        quoted = text[span.start : span.end]
        if len(quoted) > _EXCERPT:
            quoted = quoted[: _EXCERPT - 1] + "…"
        lines.append(Text.assemble(f"{number:>3}. ", (span.label, "bold"), "  ", one_line(quoted)))
    return Text("\n").join(lines)


def parse_result(text: str) -> dict[str, Any]:
    """The editor's text as a JSON object; raises :class:`ValidationError` saying where it is wrong."""
    value: dict[str, Any] = parse_json_text(text, "the redacted result", require_object=True)
    return value


class ReviewModal(DecisionModal[ReviewDecision]):
    """Tool, server, node, run, who asked for the review, and the result with its flagged spans.

    ``p`` passes the result as it is, ``r`` redacts it (the wire form in an editor; ctrl+s checks it,
    then ``r`` sends the redaction on), ``f`` asks for a reason and fails the call
    (``RESULT_REJECTED``). ``check`` is the core's check of a redaction (same call, valid result).
    Dismisses with the decision, or ``None`` when set aside for later (the result stays held) or ended
    elsewhere. Keys work only after :data:`ARM_SECONDS`.
    """

    CSS_PATH = [SHARED_CSS, "review.tcss"]
    AUTO_FOCUS = "#body"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    MODES = {
        "review": frozenset({"pass", "redact", "fail", "later"}),
        "redact": frozenset({"check_redaction", "back"}),
        "redacted": frozenset({"send_redaction", "edit_again", "back"}),
        "fail": frozenset({"back"}),
    }
    DECISIONS = frozenset({"pass", "redact", "fail", "check_redaction", "send_redaction", "edit_again"})
    TOPIC = "Result review"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pass", "Pass"),
        Binding("r", "redact", "Redact…"),
        Binding("r", "send_redaction", "Send redacted"),
        Binding("e", "edit_again", "Edit again"),
        Binding("f", "fail", "Fail…"),
        Binding("ctrl+s", "check_redaction", "Check"),
        Binding("escape", "later", "Later"),
        Binding("escape", "back", "Back"),
    ]

    facts = getters.query_one("#facts", Static)
    flags = getters.query_one("#flags", Static)
    result_view = getters.query_one("#result", Static)
    editor = getters.query_one("#editor", TextArea)
    problem = getters.query_one("#problem", Static)
    reason = getters.query_one("#reason", Input)
    hint = getters.query_one("#hint", Static)

    def __init__(self, request: ReviewRequest, check: Check | None = None) -> None:
        super().__init__()
        self.request = request
        self.check = check
        self.redaction: ExternalResult | None = None
        """The checked redaction, once ctrl+s has accepted the editor's text."""
        self._draft = editable_json(request.result.to_wire())

    # -- layout -----------------------------------------------------------------------------------------

    def compose_above(self) -> ComposeResult:
        yield Static(id="facts")
        yield Static(id="flags")

    def compose_body(self) -> ComposeResult:
        yield Static(id="result")

    def compose_below(self) -> ComposeResult:
        yield TextArea(id="editor", soft_wrap=True)
        yield Static(id="problem")
        yield Input(placeholder="Why is the result rejected? (told to the model; Enter fails)", id="reason")
        yield Static(id="hint")

    def on_mount(self) -> None:
        self.heading.update(
            Text.assemble(
                ("Review the result of ", "bold"), one_line(self.request.tool, style="bold reverse")
            )
        )
        self.facts.update(self._facts())
        self.arm_later()
        self._set_mode("review")

    def on_resize(self, event: events.Resize) -> None:
        """Below 100 columns the footer is compact, so every key of the view fits on it."""
        self.query_one(Footer).compact = event.size.width < 100

    def _facts(self) -> Text:
        request = self.request
        label = "dim"
        if request.rule is not None:
            asked = Text.assemble("rule ", one_line(request.rule, style="bold"))
        elif request.asked_by == "graph":
            asked = Text("the graph, which reviews this tool's results (its Program(reviews=...))")
        else:
            asked = Text("your review toggle for this tool (v on the Tools screen)")
        result = request.result
        status = Text(result.status, style="green" if result.status == "success" else "red")
        if result.error is not None:
            status.append_text(Text.assemble(" ", one_line(result.error.code)))
        where = Text.assemble(
            ("Server  ", label),
            one_line(request.server) if request.server else Text("(a registered tool)"),
            ("  node ", label),
            one_line(request.node_id or "(none)"),
            ("  run ", label),
            one_line(request.run_id or "(none)"),
        )
        return Text("\n").join(
            [where, Text.assemble(("Asked by ", label), asked), Text.assemble(("Status  ", label), status)]
        )

    def _show_result(self) -> None:
        """The result as a model would read it, or the checked redaction that would replace it."""
        if self.mode == "redacted" and self.redaction is not None:
            heading = "Redacted result (valid): a model reads this instead"
            text = result_text(self.redaction)
            spans = suspicious_spans(text)
        else:
            heading = "Result, exactly as a model would read it"
            text, spans = self.request.text, self.request.spans
        self.flags.set_class(bool(spans), "-flagged")
        self.flags.update(flags_line(spans))
        parts = [Text(heading, style="bold underline"), flagged_text(text, spans)]
        if spans:
            parts.append(spans_list(text, spans))
        self.result_view.update(Text("\n").join(parts))

    # -- modes and keys ---------------------------------------------------------------------------------

    def _set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self.editor.display = mode == "redact"
        self.reason.display = mode == "fail"
        self._show_problem("")
        self.hint.update(Text(_HINTS[mode], style="italic"))
        self._show_result()
        self.refresh_bindings()

    def _show_problem(self, message: str) -> None:
        """Why the editor's text was refused (the line takes no room when there is nothing to say)."""
        self.problem.display = bool(message)
        self.problem.update(render_untrusted(message))

    def action_pass(self) -> None:
        """Let the result go on as it is."""
        self._close(ReviewDecision(action="pass"))

    def action_later(self) -> None:
        """Set the review aside undecided: the result stays held (``p`` on any screen shows it again)."""
        self._close(None)

    def action_redact(self) -> None:
        """Edit the result's wire form as JSON (from the last draft when there is one)."""
        self.editor.text = self._draft
        self.editor.placeholder = "The result that replaces the original, as JSON"
        self._set_mode("redact")
        self.editor.focus()

    def action_edit_again(self) -> None:
        """Go back to the editor with the checked redaction."""
        self.action_redact()

    def action_check_redaction(self) -> None:
        """Check the edited result as the core would; when it is valid, offer to send it on."""
        text = self.editor.text
        try:
            value = parse_result(text)
            decision = ReviewDecision(action="redact", result=value)
            if self.check is not None:
                self.check(value)
        except ValidationError as exc:
            self._show_problem(exc.message)
            return
        self._draft = text
        self.redaction = decision.redaction
        self._set_mode("redacted")
        self.body.focus()

    def action_send_redaction(self) -> None:
        """Send the checked redaction on in place of the original result."""
        if self.redaction is not None:
            self._close(ReviewDecision(action="redact", result=self.redaction))

    def action_fail(self) -> None:
        """Ask why, then fail the call."""
        self._set_mode("fail")
        self.reason.focus()

    @on(Input.Submitted, "#reason")
    def fail_with_reason(self, event: Input.Submitted) -> None:
        """Fail the call with the reason typed (Enter confirms)."""
        event.stop()
        if self.mode == "fail" and self.armed:
            reason = event.value.strip() or "The result was rejected in review"
            self._close(ReviewDecision(action="fail", reason=reason))

    def action_back(self) -> None:
        """Leave the editor or the reason and return to the result as it was held."""
        self.redaction = None
        self._set_mode("review")
        self.body.focus()


__all__ = ["ReviewModal", "flagged_text", "flags_line", "parse_result", "spans_list"]
