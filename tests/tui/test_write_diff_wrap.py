"""The diff of a file write in the approval view: a line wider than the view continues on screen lines
that repeat its sign and mark the continuation, so no wrapped part reads as an unchanged line."""

from __future__ import annotations

import io

from rich.console import Console

from ditto_tui.supervise.writes import FileWrite
from ditto_tui.tui.widgets.diff import CONTINUED, write_diff

OLD = "# ditto.yaml for this folder, written by init: edit it so that this file is used.\nkeep\n"
NEW = "# ditto.yaml for this folder, written by init; the rules below are what make it used.\nkeep\n"


def _screen(width: int) -> list[str]:
    diff = write_diff(FileWrite(path="ditto.yaml", text=NEW, targets=("ditto.yaml",)), lambda _: OLD)
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(diff)
    return console.export_text().splitlines()


def test_a_wrapped_diff_line_repeats_its_sign_and_marks_each_continuation() -> None:
    lines = _screen(40)
    removed = [line for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert len(removed) == 3 and len(added) == 3
    assert all(line.startswith(f"-{CONTINUED}") for line in removed[1:])
    assert all(line.startswith(f"+{CONTINUED}") for line in added[1:])
    assert all(len(line) <= 40 for line in lines)
    assert " keep" in lines  # an unchanged line keeps its own sign, a space
    assert (
        "".join(line[2:] if line.startswith(f"+{CONTINUED}") else line[1:] for line in added)
        == (NEW.splitlines()[0])
    )


def test_a_diff_that_fits_is_shown_as_it_is() -> None:
    lines = _screen(120)
    assert f"+{NEW.splitlines()[0]}" in lines and f"-{OLD.splitlines()[0]}" in lines
    assert not any(CONTINUED in line for line in lines)
