"""The breakpoint view: a node paused before it starts, with its input; continue, edit, skip or abort.

The input is untrusted (it was built from tool results and model output): it is shown in its JSON form
(the journal's: models by alias) as plain text with :func:`untrusted_json`, its control characters made
visible, and handed to the editor with :func:`editable_json`. An edited input is checked as JSON and
against the types of the input it replaces, a given output against the output its node type declares,
before either can be accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static, TextArea

from ditto_tui.errors import ValidationError
from ditto_tui.json_text import parse_json_text
from ditto_tui.runtime.breakpoints import STEP, BreakpointDecision, BreakpointRequest, check_json
from ditto_tui.tui.screens.decision_modal import SHARED_CSS, DecisionModal
from ditto_tui.tui.text import editable_json, untrusted_json
from ditto_tui.tui.widgets.inline import one_line

Mode = Literal["review", "edit", "edited", "skip", "skipping", "abort"]
Check = Callable[[Mapping[str, Any]], None]

_AGAIN = frozenset({"not_again", "pause_again"})
"""The loop toggle's two faces: offered only for a node inside a loop, one at a time."""
_HINTS: Mapping[Mode, str] = {
    "review": "Read the input, then decide with a key. Other branches keep running.",
    "edit": "Edit the input as JSON, then ctrl+s checks it. Escape goes back.",
    "edited": "Valid JSON: n runs the node on it, e edits it again, Escape goes back.",
    "skip": "Write the node's output as JSON, then ctrl+s checks it. Escape goes back.",
    "skipping": "The node will not run: k skips it with this output, Escape goes back.",
    "abort": "Enter aborts the whole run (the reason is optional). Escape goes back.",
}


class BreakpointModal(DecisionModal[BreakpointDecision]):
    """Node, type, run, loop iteration, the breakpoint that matched (``*``: step mode) and the input.

    ``n`` continues, ``e`` edits the input (checked with ctrl+s, then ``n`` runs the node on it), ``k``
    skips the node with an output the person writes (checked with ctrl+s, then ``k``), ``a`` asks why
    and aborts the run. Inside a loop, ``t`` says "not again in this run". ``check`` is the core's check
    of an edited value. Dismisses with the decision, or ``None`` when set aside for later (the request
    stays pending) or ended elsewhere. Keys work only after :data:`ARM_SECONDS`.
    """

    CSS_PATH = [SHARED_CSS, "breakpoint.tcss"]
    AUTO_FOCUS = "#body"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    MODES = {
        "review": frozenset({"continue", "edit", "skip", "abort", "later", *_AGAIN}),
        "edit": frozenset({"check_input", "back"}),
        "edited": frozenset({"continue_edited", "edit", "back", *_AGAIN}),
        "skip": frozenset({"check_output", "back"}),
        "skipping": frozenset({"skip_with_output", "back", *_AGAIN}),
        "abort": frozenset({"back"}),
    }
    DECISIONS = frozenset(
        {
            "continue",
            "continue_edited",
            "edit",
            "skip",
            "skip_with_output",
            "abort",
            "check_input",
            "check_output",
        }
    )
    TOPIC = "Breakpoint"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "continue", "Continue"),
        Binding("n", "continue_edited", "Run edited"),
        Binding("e", "edit", "Edit input…"),
        Binding("k", "skip", "Skip…"),
        Binding("k", "skip_with_output", "Skip with output"),
        Binding("a", "abort", "Abort run…"),
        Binding("t", "not_again", "Not again"),
        Binding("t", "pause_again", "Pause again"),
        Binding("ctrl+s", "check_input", "Check input"),
        Binding("ctrl+s", "check_output", "Check output"),
        Binding("escape", "later", "Later"),
        Binding("escape", "back", "Back"),
    ]

    facts = getters.query_one("#facts", Static)
    again_line = getters.query_one("#again", Static)
    value_view = getters.query_one("#value", Static)
    editor = getters.query_one("#editor", TextArea)
    problem = getters.query_one("#problem", Static)
    reason = getters.query_one("#reason", Input)
    hint = getters.query_one("#hint", Static)

    def __init__(self, request: BreakpointRequest, check: Check | None = None) -> None:
        super().__init__()
        self.request = request
        self.check = check
        self.again = True
        """False: the node does not pause again in this run (a node inside a loop)."""
        self.edited: Any = None
        self.output: Any = None
        self._output_text = ""

    @property
    def in_loop(self) -> bool:
        """Whether the node runs inside a loop (it would pause again in the next iteration)."""
        return self.request.iteration is not None

    # -- layout -----------------------------------------------------------------------------------------

    def compose_above(self) -> ComposeResult:
        yield Static(id="facts")
        yield Static(id="again")

    def compose_body(self) -> ComposeResult:
        yield Static(id="value")

    def compose_below(self) -> ComposeResult:
        yield TextArea(id="editor", soft_wrap=True)
        yield Static(id="problem")
        yield Input(placeholder="Why is the run aborted? (optional; Enter aborts)", id="reason")
        yield Static(id="hint")

    def on_mount(self) -> None:
        request = self.request
        self.heading.update(
            Text.assemble(("Paused before node ", "bold"), one_line(request.node_id, style="bold reverse"))
        )
        self.facts.update(self._facts())
        self._show_again()
        self._show_value()
        self.arm_later()
        self._set_mode("review")

    def on_resize(self, event: events.Resize) -> None:
        """Below 100 columns the footer is compact, so every key of the view fits on it."""
        self.query_one(Footer).compact = event.size.width < 100

    def _facts(self) -> Text:
        request = self.request
        label = "dim"
        if request.pattern == STEP:
            paused_by = Text("step mode (every node; S on the Run screen turns it off)")
        else:
            paused_by = Text.assemble("breakpoint ", one_line(request.pattern, style="bold"))
        iteration = Text(str(request.iteration)) if request.iteration is not None else Text("(not in a loop)")
        return Text("\n").join(
            [
                Text.assemble(("Node type   ", label), one_line(request.node_type)),
                Text.assemble(("Paused by   ", label), paused_by),
                Text.assemble(
                    ("Iteration   ", label), iteration, ("  run ", label), one_line(request.run_id)
                ),
            ]
        )

    def _show_again(self) -> None:
        self.again_line.display = self.in_loop
        if self.again:
            text = "In a loop: it pauses in every iteration (t: not again in this run)."
        else:
            text = "Not again in this run: later iterations do not pause here (t: pause again)."
        self.again_line.set_class(not self.again, "-once")
        self.again_line.update(Text(text))

    def _show_value(self) -> None:
        """The input as the node gets it, the edited input, or the output given instead of running."""
        if self.mode == "edited":
            heading, value = "Edited input (valid JSON): the node runs on it", self.edited
        elif self.mode == "skipping":
            heading, value = "Output given for the node, which does not run", self.output
        else:
            heading, value = "Input, exactly as the node will get it", self.request.input_json
        self.value_view.update(Text.assemble((heading + "\n", "bold underline"), untrusted_json(value)))

    # -- modes and keys ---------------------------------------------------------------------------------

    def _set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self.editor.display = mode in ("edit", "skip")
        self.reason.display = mode == "abort"
        self._show_problem("")
        self.hint.update(Text(_HINTS[mode], style="italic"))
        self._show_value()
        self.refresh_bindings()

    def _show_problem(self, message: str) -> None:
        """Why the editor's text was refused (the line takes no room when there is nothing to say)."""
        self.problem.display = bool(message)
        self.problem.update(one_line(message))

    def offers(self, action: str) -> bool:
        """The loop toggle only for a node inside a loop, showing the way it would switch."""
        if action in _AGAIN and (not self.in_loop or (action == "not_again") != self.again):
            return False
        return super().offers(action)

    def _decide(self, action: Literal["continue", "edit", "skip", "abort"], **fields: Any) -> None:
        self._close(BreakpointDecision(action=action, again=self.again, **fields))

    def action_continue(self) -> None:
        """Run the node on its input as shown."""
        self._decide("continue")

    def action_continue_edited(self) -> None:
        """Run the node on the checked, edited input."""
        self._decide("edit", input=self.edited)

    def action_skip_with_output(self) -> None:
        """Give the checked output as the node's, without running it."""
        self._decide("skip", output=self.output)

    def action_not_again(self) -> None:
        """Do not pause at this node again in this run (later loop iterations run it straight away)."""
        self.again = False
        self._show_again()
        self.refresh_bindings()

    def action_pause_again(self) -> None:
        """Pause at this node in each iteration after all."""
        self.again = True
        self._show_again()
        self.refresh_bindings()

    def action_later(self) -> None:
        """Set the breakpoint aside undecided: the node stays paused (``p`` on any screen shows it again)."""
        self._close(None)

    def action_edit(self) -> None:
        """Edit the input as JSON (again from the last edit when there is one); an input that holds a
        value with no JSON form cannot be edited, and the view says so."""
        value = self.edited if self.mode == "edited" else self.request.input_json
        try:
            text = editable_json(check_json(value, "the input"))
        except ValidationError as exc:
            self._show_problem(f"It cannot be edited here: {exc.message}")
            return
        self._open_editor("edit", text, "The node's input, as JSON")

    def action_skip(self) -> None:
        """Write the output the node gives without running."""
        self._open_editor("skip", self._output_text, "The node's output, as JSON (null for nothing)")

    def _open_editor(self, mode: Mode, text: str, placeholder: str) -> None:
        self.editor.text = text
        self.editor.placeholder = placeholder
        self._set_mode(mode)
        self.editor.focus()

    def action_check_input(self) -> None:
        """Check the edited input; when it is valid JSON (and the core takes it), offer to run on it."""
        try:
            value = parse_json_text(self.editor.text, "the edited input")
            BreakpointDecision(action="edit", input=value)
            self.request.edited_input(value)
            if self.check is not None and isinstance(value, Mapping):
                self.check(value)
        except ValidationError as exc:
            self._show_problem(exc.message)
            return
        self.edited = value
        self._set_mode("edited")
        self.body.focus()

    def action_check_output(self) -> None:
        """Check the output written; when it is valid JSON, offer to skip the node with it."""
        text = self.editor.text
        try:
            value = parse_json_text(text, "the output")
            BreakpointDecision(action="skip", output=value)
            self.request.given_output(value)
        except ValidationError as exc:
            self._show_problem(exc.message)
            return
        self.output, self._output_text = value, text
        self._set_mode("skipping")
        self.body.focus()

    def action_abort(self) -> None:
        """Ask why, then abort the whole run."""
        self._set_mode("abort")
        self.reason.focus()

    @on(Input.Submitted, "#reason")
    def abort_with_reason(self, event: Input.Submitted) -> None:
        """Abort the run with the reason typed (Enter confirms the abort)."""
        event.stop()
        if self.mode == "abort" and self.armed:
            self._decide("abort", reason=event.value.strip() or "aborted by the user")

    def action_back(self) -> None:
        """Leave the editor or the reason and return to the node as it was paused."""
        self.edited = None
        self.output = None
        self._set_mode("review")
        self.body.focus()


__all__ = ["BreakpointModal"]
