"""U-14 in the UI: the detail of a decision whose arguments were edited shows what executed against what
was requested, as a diff (the timeline marks the edit with ✎)."""

from __future__ import annotations

from ditto_tui.runtime import ApprovalRequested, ApprovalResolved
from ditto_tui.tui.run_state import RunModel
from ditto_tui.tui.widgets.detail import edit_diff, entry_detail

ASKED = {"path": "notes/a.md", "text": "as requested\n"}
RAN = {"path": "notes/a.md", "text": "as edited\n"}


def _events(edited: bool) -> list[ApprovalRequested | ApprovalResolved]:
    base = {"run_id": "r", "request_id": "q1", "call_id": "c1", "tool": "write_text"}
    requested = ApprovalRequested.trusted(
        {**base, "seq": 1, "at": 1.0, "arguments": ASKED, "arguments_digest": "a", "tool_digest": "t"}
    )
    resolved = ApprovalResolved.trusted(
        {
            **base,
            "seq": 2,
            "at": 2.0,
            "decision": "approve",
            "arguments_digest": "b" if edited else "a",
            "edited": edited,
            "arguments": RAN if edited else None,
        }
    )
    return [requested, resolved]


def test_an_edited_decision_shows_the_diff_of_what_ran() -> None:
    model = RunModel()
    model.apply(_events(edited=True))
    (entry,) = [entry for entry in model.entries if entry.kind == "approval"]
    assert "✎" in entry.status
    text = entry_detail(entry, raw=False).plain
    assert "The arguments were edited: what executed, against what was requested" in text
    assert '-  "text": "as requested\\n"' in text and '+  "text": "as edited\\n"' in text


def test_a_decision_without_an_edit_shows_no_diff() -> None:
    assert edit_diff(_events(edited=False)) == ""
