"""The approval view: one call that waits for a decision, shown in full, answered with single keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from rich.text import Text
from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Input, Static

from ditto_tui.digest import arguments_digest
from ditto_tui.errors import ValidationError
from ditto_tui.runtime.client import short_run_id
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest
from ditto_tui.supervise.protected import protected_notice
from ditto_tui.supervise.writes import FileWrite, file_write, mcp_file_write
from ditto_tui.tui import clock
from ditto_tui.tui.screens.decision_modal import ARM_SECONDS, SHARED_CSS, DecisionModal
from ditto_tui.tui.text import render_untrusted, untrusted_json
from ditto_tui.tui.widgets.diff import write_diff
from ditto_tui.tui.widgets.hints import hint_line, risk_of
from ditto_tui.tui.widgets.inline import one_line

if TYPE_CHECKING:
    from ditto_tui.tui.widgets.schema_form import SchemaForm

Mode = Literal["review", "deny", "edit", "edited", "grant"]

OVERWRITE_HEADING = "Diff against the current"
"""How :func:`write_diff` opens the diff of a file that exists: the call overwrites it."""


class ApprovalBackend(Protocol):
    """What the view needs from the run: the queue, checks, the current file, and withdrawal."""

    @property
    def timeout(self) -> float | None:
        """Seconds a request may wait before it ends as ``APPROVAL_TIMEOUT``."""
        ...

    def pending(self) -> list[ApprovalRequest]:
        """Requests waiting for a decision, oldest first."""
        ...

    def check_arguments(self, request_id: str, arguments: Mapping[str, Any]) -> None:
        """Raise ``ValidationError`` if approving ``arguments`` would be refused."""
        ...

    def read_text(self, path: str) -> str:
        """Read a workspace file through the sandbox."""
        ...

    def write_targets(self, server: str | None, path: str) -> list[str]:
        """The workspace files a call writing ``path`` may change, most likely first."""
        ...

    def withdraw(self, request_id: str) -> bool:
        """Cancel the request: its call ends ``cancelled``."""
        ...

    def other_run(self, request: ApprovalRequest) -> bool:
        """Whether ``request`` is of a run this session neither started nor shows (it came through the
        run host's inbox): the view then names the run it decides for."""
        ...


class ApprovalModal(DecisionModal[ApprovalDecision]):
    """Tool, title, description, effects, the server's hints, rule, node, the exact arguments and, for a
    call that writes a workspace file (an MCP one too), the diff.

    A call the server says (or the MCP default takes) to be destructive is marked so in a strong style;
    every hint is labelled as the server's claim. The model's message that proposed the call, when
    there is one, stands above the facts as untrusted text, folded to a few lines (``m`` unfolds it). A
    call that overwrites a file shows its diff before the arguments. Below 30 rows the facts scroll in
    a few lines of their own, so the arguments keep at least half the screen.

    Dismisses with the decision, or with ``None`` when there is none: set aside for later, withdrawn,
    timed out or cancelled with its call. Keys work only after :data:`ARM_SECONDS`; Enter never approves.
    """

    CSS_PATH = [SHARED_CSS, "approval.tcss"]
    AUTO_FOCUS = "#body"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    MODES = {
        "review": frozenset({"approve", "approve_always", "deny", "edit", "withdraw", "later"}),
        "deny": frozenset({"back"}),
        "edit": frozenset({"check_edit", "back"}),
        "edited": frozenset({"approve_edited", "deny", "edit", "withdraw", "back"}),
        "grant": frozenset({"save_grant", "back"}),
    }
    DECISIONS = frozenset(
        {"approve", "approve_always", "approve_edited", "deny", "edit", "withdraw", "save_grant"}
    )
    TOPIC = "Approval"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve once"),
        Binding("a", "approve_edited", "Approve edited"),
        Binding("s", "approve_always", "Approve always…"),
        Binding("d", "deny", "Deny…"),
        Binding("e", "edit", "Edit args…"),
        Binding("c", "withdraw", "Cancel call"),
        Binding("ctrl+s", "check_edit", "Check edit"),
        Binding("ctrl+s", "save_grant", "Save grant"),
        Binding("escape", "later", "Later"),
        Binding("escape", "back", "Back"),
        Binding("m", "toggle_proposal", "Model's message", show=False),
    ]

    risk = getters.query_one("#risk", Static)
    proposal_box = getters.query_one("#proposal", VerticalScroll)
    proposal_view = getters.query_one("#proposal-text", Static)
    facts = getters.query_one("#facts", Static)
    queue = getters.query_one("#queue", Static)
    countdown = getters.query_one("#countdown", Static)
    arguments_view = getters.query_one("#arguments", Static)
    diff_view = getters.query_one("#diff", Static)
    reason = getters.query_one("#reason", Input)
    editor_box = getters.query_one("#editor", Vertical)
    hint = getters.query_one("#hint", Static)

    def __init__(self, request: ApprovalRequest, backend: ApprovalBackend) -> None:
        super().__init__()
        self.request = request
        self.backend = backend
        self.edited: dict[str, Any] | None = None
        self.diff_text = ""
        """The diff shown, as plain text, one diff line per line (empty when the call writes no file)."""

    # -- layout -----------------------------------------------------------------------------------------

    def compose_above(self) -> ComposeResult:
        yield Static(id="risk")
        with VerticalScroll(id="proposal"):
            yield Static(id="proposal-text")
        with VerticalScroll(id="about"):
            yield Static(id="facts")
            yield Static(id="queue")
        yield Static(id="countdown")

    def compose_body(self) -> ComposeResult:
        yield Static(id="arguments")
        yield Static(id="diff")

    def compose_below(self) -> ComposeResult:
        yield Input(placeholder="Why is it denied? (sent back to the graph; Enter denies)", id="reason")
        yield Vertical(id="editor")
        yield Static(id="hint")

    def on_mount(self) -> None:
        request = self.request
        title = Text.assemble(("Approve ", "bold"), one_line(request.tool, style="bold reverse"), " ?")
        if request.server:
            title.append_text(Text.assemble("  on MCP server ", one_line(request.server, style="bold")))
        self.heading.update(title)
        self._show_risk()
        self._show_proposal()
        self.facts.update(self._facts())
        self._show_arguments(dict(request.arguments))
        self._show_queue(self.backend.pending())
        self._tick()
        if self._timeout is not None:
            self.set_interval(1.0, self._tick)
        self.arm_later()
        self._set_mode("review")

    @property
    def _from_server(self) -> bool:
        """Whether the call goes to an MCP server (or carries a server's hints): its hints apply."""
        return self.request.server is not None or self.request.annotations is not None

    def offers(self, action: str) -> bool:
        """No "approve always" for a write of a control file: no grant covers one, so it is not offered."""
        if action == "approve_always" and self.request.protected:
            return False
        return super().offers(action)

    def _show_risk(self) -> None:
        """The server's word on the call's risk, in a strong style when destructive (looks in TCSS); for a
        write of a control file, first of all that it changes what ditto-tui itself runs."""
        protected = self.request.protected
        self.risk.display = self._from_server or bool(protected)
        if protected:
            self.risk.set_class(True, "destructive")
            self.risk.update(
                Text.assemble(
                    "⚠ Control file: ",
                    one_line(protected_notice(protected)),
                    ". Decided each time: no mode, rule or grant approves it.",
                )
            )
            return
        if not self._from_server:
            return
        risk = risk_of(self.request.annotations)
        self.risk.set_class(risk.kind == "destructive", "destructive")
        self.risk.set_class(risk.kind != "destructive", "harmless")
        why = {
            "destructive": " the call may delete or overwrite data",
            "read-only": " the call only reads, by the server's claim",
            "not-destructive": " the call only adds, by the server's claim",
        }[risk.kind]
        marker = "⚠ " if risk.kind == "destructive" else ""
        self.risk.update(Text(f"{marker}{risk.label.capitalize()}:{why}"))

    def _effects(self) -> Text:
        request = self.request
        if request.effects:
            return Text(", ".join(request.effects), style="bold yellow")
        if request.annotations:
            return Text("not declared by the tool; see the server's hints")
        return Text("none declared")

    def _facts(self) -> Text:
        request = self.request
        if request.rule:
            rule = f"rule {request.rule}"
        elif request.server is not None:
            rule = "no rule allows this tool (an MCP tool asks unless a rule allows it)"
        else:
            rule = "the tool requires approval"
        lines = []
        if request.title:
            lines.append(Text.assemble(("Title        ", "dim"), one_line(request.title, style="bold")))
        lines += [
            Text.assemble(("Description  ", "dim"), one_line(request.description or "(none)")),
            Text.assemble(("Effects      ", "dim"), self._effects()),
        ]
        if self._from_server:
            lines.append(
                Text.assemble(
                    ("Server hints ", "dim"),
                    hint_line(request.annotations),
                    ("  (claims of the server, not checked by ditto)", "dim"),
                )
            )
        lines.append(
            Text.assemble(
                ("Asked by     ", "dim"),
                one_line(rule),
                ("  node ", "dim"),
                one_line(request.node_id or "(direct call)"),
                ("  call ", "dim"),
                one_line(request.call.id),
                ("  arguments ", "dim"),
                f"sha256 {request.arguments_digest[:16]}…",
            )
        )
        if request.run_id is not None and self.backend.other_run(request):
            lines[-1].append_text(Text.assemble(("  of run ", "dim"), one_line(short_run_id(request.run_id))))
        return Text("\n").join(lines)

    # -- the model's message ----------------------------------------------------------------------------

    def _show_proposal(self) -> None:
        """The model's words before the call, plain text with hidden characters marked, folded."""
        self.proposal_box.display = self.request.proposal is not None
        if self.request.proposal is not None:
            self._label_proposal()
            self.call_after_refresh(self._label_proposal)

    def _label_proposal(self) -> None:
        proposal = self.request.proposal
        if proposal is None or not self.is_mounted:
            return
        box = self.proposal_box
        folded = not box.has_class("-open")
        if folded and box.max_scroll_y > 0:
            fold = " (m shows all of it)"
        elif not folded:
            fold = " (m folds it)"
        else:
            fold = ""
        label = Text.assemble(("The model said", "bold"), (fold, "dim italic"), (": ", "bold"))
        self.proposal_view.update(label + render_untrusted(proposal.strip()))

    def action_toggle_proposal(self) -> None:
        """Show the whole message of the model that proposed the call, or fold it again."""
        self.proposal_box.toggle_class("-open")
        self.set_class(self.proposal_box.has_class("-open"), "-proposal-open")
        self.proposal_box.scroll_home(animate=False)
        self.call_after_refresh(self._label_proposal)

    def on_resize(self, event: events.Resize) -> None:
        """Whether the message needs unfolding depends on the width it wraps at; below 100 columns the
        footer is compact, so every key of the view fits on it."""
        self.query_one(Footer).compact = event.size.width < 100
        self.call_after_refresh(self._label_proposal)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``m`` exists only for a call with a model's message."""
        if action == "toggle_proposal":
            return self.request.proposal is not None
        return super().check_action(action, parameters)

    # -- arguments and diff -----------------------------------------------------------------------------

    def _show_arguments(self, arguments: dict[str, Any]) -> None:
        if self.edited is None:
            label = "Arguments, exactly as they will run"
        else:
            label = (
                f"Edited arguments (checked; approval binds to sha256 {arguments_digest(arguments)[:16]}…)"
            )
        self.arguments_view.update(Text.assemble((label + "\n", "bold underline"), untrusted_json(arguments)))
        write = self._file_write(arguments)
        self.diff_view.display = write is not None
        diff = None if write is None else write_diff(write, self.backend.read_text)
        self.diff_text = "" if diff is None else diff.plain
        if diff is not None:
            self.diff_view.update(diff)
        self._put_diff_first(self.diff_text.startswith(OVERWRITE_HEADING))

    def _put_diff_first(self, first: bool) -> None:
        """An overwrite is read as its diff first; a new file as its arguments (they hold it all)."""
        if first == self.diff_view.has_class("-first"):
            return
        self.diff_view.set_class(first, "-first")
        if first:
            self.body.move_child(self.diff_view, before=self.arguments_view)
        else:
            self.body.move_child(self.diff_view, after=self.arguments_view)

    def _file_write(self, arguments: Mapping[str, Any]) -> FileWrite | None:
        """The file ``arguments`` write: a local tool's ``path``, or where an MCP call most likely writes."""
        request = self.request
        if request.server is None:
            return file_write(request.effects, arguments)
        write = mcp_file_write(request.annotations, arguments)
        if write is None:
            return None
        return replace(write, targets=tuple(self.backend.write_targets(request.server, write.path)))

    # -- attributes down --------------------------------------------------------------------------------

    def update_queue(self, pending: Sequence[ApprovalRequest]) -> None:
        """Show the pending requests, this one marked (nothing before it opens or once it closed)."""
        if not self._answered and self.is_mounted:
            self._show_queue(pending)

    def _show_queue(self, pending: Sequence[ApprovalRequest]) -> None:
        others = [request for request in pending if request.request_id != self.request.request_id]
        runs = len({request.run_id for request in others} | {self.request.run_id}) > 1
        text = Text(f"Queue: {len(others) + 1} pending  ", style="bold")
        text.append("▶ ")
        text.append_text(one_line(_queue_label(self.request, runs), style="reverse"))
        for request in others[:_QUEUE_SHOWN]:
            text.append(" · ")
            text.append_text(one_line(_queue_label(request, runs)))
        if len(others) > _QUEUE_SHOWN:
            text.append(f" · … and {len(others) - _QUEUE_SHOWN:,} more", style="dim")
        self.queue.update(text)

    # -- modes and keys ---------------------------------------------------------------------------------

    @property
    def _timeout(self) -> float | None:
        """This request's own limit (its rule's timeout, else the gate's), or the session default."""
        timeout = self.request.timeout_seconds
        return timeout if timeout is not None else self.backend.timeout

    def _tick(self) -> None:
        timeout = self._timeout
        if timeout is None:
            self.countdown.display = False
            return
        left = max(0, int(self.request.requested_at + timeout - clock.now() + 0.999))
        self.countdown.update(Text(f"Times out in {left} s: then the call fails with APPROVAL_TIMEOUT"))

    def _set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self.reason.display = mode == "deny"
        self.editor_box.display = mode in ("edit", "grant")
        hints = {
            "review": "Read the arguments (arrow keys scroll), then decide with a key below.",
            "deny": "Type the reason, Enter denies. Escape goes back.",
            "edit": "Edit, then ctrl+s checks them with the tool's own validation. Escape goes back.",
            "edited": "The edited arguments passed the tool's checks: a approves them as shown.",
            "grant": "Choose which calls and for how long (arrows and space; Tab moves on), ctrl+s "
            "approves this call and saves the grant. Escape goes back.",
        }
        self.hint.update(Text(hints[mode], style="italic"))
        self.refresh_bindings()

    def action_approve(self) -> None:
        """Approve this call once, with the arguments shown."""
        self._close(ApprovalDecision(kind="approve"))

    async def action_approve_always(self) -> None:
        """Choose the grant: which later calls it approves without asking, and for how long."""
        from ditto_tui.tui.widgets.grant_chooser import GrantChooser

        await self.editor_box.remove_children()
        recorded = getattr(self.backend, "recorded_calls", None)
        await self.editor_box.mount(GrantChooser(self.request, recorded, id="grant"))
        self._set_mode("grant")
        self.call_after_refresh(self._focus_editor)

    def action_save_grant(self) -> None:
        """Approve this call and save the grant chosen (or say what to fix)."""
        from ditto_tui.tui.widgets.grant_chooser import GrantChooser

        chooser = self.query_one("#grant", GrantChooser)
        try:
            decision = chooser.decision()
        except ValidationError as exc:
            chooser.show_error(exc.message)
            return
        self._close(decision)

    def action_approve_edited(self) -> None:
        """Approve once with the checked, edited arguments."""
        if self.edited is not None:
            self._close(ApprovalDecision(kind="approve", arguments=self.edited))

    def action_deny(self) -> None:
        """Ask for the reason of the denial."""
        self._set_mode("deny")
        self.reason.focus()

    @on(Input.Submitted, "#reason")
    def deny_with_reason(self, event: Input.Submitted) -> None:
        """Deny with the typed reason."""
        event.stop()
        if self.mode == "deny" and self.armed:
            reason = event.value.strip() or "Denied by the user"
            self._close(ApprovalDecision(kind="deny", reason=reason))

    def action_later(self) -> None:
        """Set the request aside undecided: it stays pending (``p`` on any screen shows it again)."""
        self._close(None)

    def action_withdraw(self) -> None:
        """Cancel the call: it ends ``cancelled`` and never runs."""
        self.backend.withdraw(self.request.request_id)
        self._close(None)

    async def action_edit(self) -> None:
        """Edit the arguments in a form built from the tool's input schema (JSON editor fallback)."""
        from ditto_tui.tui.widgets.schema_form import SchemaForm  # jsonschema loads only when editing

        await self.editor_box.remove_children()
        form = SchemaForm(
            self.request.input_schema,
            value=self.edited if self.edited is not None else dict(self.request.arguments),
            validate=self._check,
            submit_on_enter=False,
            id="form",
        )
        await self.editor_box.mount(form)
        self._set_mode("edit")
        self.call_after_refresh(self._focus_editor)

    def _focus_editor(self) -> None:
        focusable = [widget for widget in self.editor_box.query("*") if widget.focusable]
        if focusable:
            focusable[0].focus()

    def _check(self, arguments: Mapping[str, Any]) -> None:
        self.backend.check_arguments(self.request.request_id, arguments)

    def action_check_edit(self) -> None:
        """Check the edited arguments; when they pass, show them and allow "approve edited"."""
        from ditto_tui.tui.widgets.schema_form import SchemaForm

        self.query_one("#form", SchemaForm).submit()

    def on_schema_form_submitted(self, event: SchemaForm.Submitted) -> None:
        """The edit passed the schema and the tool's own validation."""
        event.stop()
        self.edited = event.arguments
        self._show_arguments(event.arguments)
        self._set_mode("edited")
        self.body.focus()

    def action_back(self) -> None:
        """Leave the reason or the editor and return to the call as it was asked."""
        self.edited = None
        self._show_arguments(dict(self.request.arguments))
        self._set_mode("review")
        self.body.focus()


__all__ = ["ARM_SECONDS", "ApprovalBackend", "ApprovalModal"]


_QUEUE_SHOWN = 12
"""How many of the other pending requests the queue line names (a line holds no more)."""


def _queue_label(request: ApprovalRequest, runs: bool) -> str:
    """A request in the queue line: its tool and call, and its run when the queue holds several runs'."""
    where = f", run {short_run_id(request.run_id)}" if runs and request.run_id else ""
    return f"{request.tool} ({request.call.id}{where})"
