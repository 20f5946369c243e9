"""The scope chooser of "approve always": what the grant covers, for how long, and what it would have
approved in the recorded runs, before it is saved."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, RadioButton, RadioSet, Static

from ditto_tui.errors import ValidationError
from ditto_tui.json_text import parse_json_text
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest
from ditto_tui.supervise.grants import Grant, GrantLifetime, GrantScope, recorded_matches, suggest_match
from ditto_tui.supervise.lint import RecordedCall
from ditto_tui.tui.widgets.inline import one_line

_SHOWN_MATCHES = 3
_LIFETIMES: tuple[tuple[str, str], ...] = (
    ("run", "this run"),
    ("session", "this session"),
    ("minutes", "N minutes"),
    ("uses", "K uses"),
    ("project", "this project"),
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GrantChooser(Vertical):
    """Three scopes (this call, a rule suggested from its arguments and editable, the tool) and five
    lifetimes (this run, this session, N minutes, K uses, this project); :meth:`decision` builds the
    ``approve_always`` answer or raises ValidationError saying what is wrong."""

    DEFAULT_CSS = """
    GrantChooser {
        height: auto;
        RadioSet { layout: horizontal; height: auto; width: 100%; border: none; padding: 0; }
        RadioSet:focus { border: none; }
        RadioSet > RadioButton { width: auto; margin-right: 1; }
        .grant-label { height: 1; color: $text-muted; }
        #grant-rule { height: 1; border: none; padding: 0 1; }
        #grant-count-row { height: auto; }
        #grant-count { width: 12; height: 1; border: none; padding: 0 1; }
        #grant-count-label { width: auto; height: 1; color: $text-muted; }
        #grant-matches { height: auto; max-height: 4; color: $text-muted; }
        #grant-error { height: auto; color: $error; }
    }
    """

    def __init__(
        self,
        request: ApprovalRequest,
        recorded: Callable[[], Sequence[RecordedCall]] | None = None,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.request = request
        self.recorded = recorded
        self.suggestion = suggest_match(request.arguments)
        self._recorded: Sequence[RecordedCall] | None = None

    def compose(self) -> ComposeResult:
        tool = one_line(_cut(self.request.tool, 40))
        yield Static(Text.assemble("Approve always: which calls of ", tool, "?"), classes="grant-label")
        with RadioSet(id="grant-scope"):
            yield RadioButton("exactly this call", name="call", value=True)
            if self.suggestion is not None:
                yield RadioButton("calls like it", name="rule", tooltip="the rule below, which you can edit")
            yield RadioButton("every call of the tool", name="tool")
        rule = Input(
            json.dumps(self.suggestion or {}, ensure_ascii=False),
            id="grant-rule",
            tooltip='the rule the grant matches with, e.g. {"args": {"path": "notes/**"}}',
        )
        rule.display = False
        yield rule
        yield Static("For how long?", classes="grant-label")
        with RadioSet(id="grant-lifetime"):
            for name, label in _LIFETIMES:
                yield RadioButton(label, name=name, value=name == "session")
        with Horizontal(id="grant-count-row"):
            yield Static("uses:", id="grant-count-label")
            yield Input("10", id="grant-count", type="integer")
        yield Static(id="grant-matches")
        yield Static(id="grant-error")

    def on_mount(self) -> None:
        self.query_one("#grant-count-row").display = False
        self._show_matches()

    @property
    def scope(self) -> GrantScope:
        """The scope chosen."""
        pressed = self.query_one("#grant-scope", RadioSet).pressed_button
        return (pressed.name if pressed is not None else "call") or "call"  # type: ignore[return-value]

    @property
    def lifetime_choice(self) -> str:
        """The lifetime chosen (``minutes`` and ``uses`` are session grants with a limit)."""
        pressed = self.query_one("#grant-lifetime", RadioSet).pressed_button
        return (pressed.name if pressed is not None else "session") or "session"

    @on(RadioSet.Changed)
    def _changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        self.query_one("#grant-rule", Input).display = self.scope == "rule"
        choice = self.lifetime_choice
        row = self.query_one("#grant-count-row")
        row.display = choice in ("minutes", "uses")
        count = self.query_one("#grant-count", Input)
        count.placeholder = "minutes" if choice == "minutes" else "uses"
        if event.radio_set.id == "grant-lifetime" and row.display:
            self.call_after_refresh(count.focus)  # the number is what to give next
        self.query_one("#grant-count-label", Static).update(
            "minutes:" if choice == "minutes" else "uses (later calls it approves):"
        )
        self._show_matches()

    @on(Input.Changed, "#grant-rule")
    def _rule_edited(self, event: Input.Changed) -> None:
        event.stop()
        self._show_matches()

    def decision(self) -> ApprovalDecision:
        """The ``approve_always`` answer chosen (ValidationError: what to fix first)."""
        scope = self.scope
        match = self._match() if scope == "rule" else None
        choice = self.lifetime_choice
        lifetime: GrantLifetime = choice if choice in ("run", "session", "project") else "session"  # type: ignore[assignment]
        expires = uses = None
        if choice in ("minutes", "uses"):
            text = self.query_one("#grant-count", Input).value.strip()
            try:
                count = int(text)
            except ValueError:
                raise ValidationError(
                    f"the number of {choice} must be a whole number, not {text!r}"
                ) from None
            if count < 1:
                raise ValidationError(f"the number of {choice} must be at least 1")
            expires, uses = (count * 60.0, None) if choice == "minutes" else (None, count)
        if lifetime == "run" and self.request.run_id is None:
            raise ValidationError("this call belongs to no run: choose this session instead")
        return ApprovalDecision(
            kind="approve_always", scope=scope, match=match, lifetime=lifetime, expires=expires, uses=uses
        )

    def _match(self) -> dict[str, Any]:
        text = self.query_one("#grant-rule", Input).value
        match: dict[str, Any] = parse_json_text(text, "the rule", require_object=True)
        return match

    def preview(self) -> Grant:
        """The grant as it would be written (to count what it would have approved)."""
        decision = self.decision()
        request = self.request
        return Grant(
            id="g-preview",
            tool=request.tool,
            tool_digest=request.tool_digest,
            scope=decision.scope,
            mcp=request.server is not None,
            arguments_digest=request.arguments_digest,
            match=decision.match,
        )

    def show_error(self, message: str | None) -> None:
        """Show why the choice cannot be saved (``None`` clears it)."""
        self.query_one("#grant-error", Static).update(Text(message or ""))

    def _show_matches(self) -> None:
        view = self.query_one("#grant-matches", Static)
        try:
            grant = self.preview()
        except ValidationError as exc:
            view.update(Text(""))
            self.show_error(exc.message)
            return
        self.show_error(None)
        if self.recorded is None:
            view.update(Text("No recorded runs to check it against."))
            return
        if self._recorded is None:
            self._recorded = self.recorded()
        calls = self._recorded
        matched = recorded_matches(grant, calls)
        head = f"In the recorded runs it would have approved {len(matched)} of {len(calls)} calls"
        shown = [one_line(_cut(label, 70)) for label in matched[:_SHOWN_MATCHES]]
        more = len(matched) - len(shown)
        lines = [Text(head + (":" if shown else "."))]
        lines += [Text.assemble("  ", label) for label in shown]
        if more > 0:
            lines.append(Text(f"  … and {more} more"))
        view.update(Text("\n").join(lines))


__all__ = ["GrantChooser", "RecordedCall"]
