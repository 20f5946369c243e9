"""Notifications: a request that arrives while the terminal is unfocused rings and notifies; the title
counts what waits; no text can end the escape sequence early."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ditto_tui.tui.notify import MAX_TEXT, Notifier, clean, notification, pick_method, window_title


class Terminal:
    def __init__(self) -> None:
        self.focused = True
        self.written: list[str] = []

    def write(self, text: str) -> None:
        self.written.append(text)


def _notifier(terminal: Terminal, method: str = "osc777") -> Notifier:
    return Notifier(terminal.write, lambda: terminal.focused, method, env={})  # type: ignore[arg-type]


def test_a_request_rings_and_notifies_only_while_the_terminal_is_unfocused() -> None:
    terminal = Terminal()
    notifier = _notifier(terminal)
    notifier.request_arrived("approve write_text")
    assert terminal.written == []
    terminal.focused = False
    notifier.request_arrived("approve write_text")
    assert terminal.written == ["\x07\x1b]777;notify;ditto-tui: a decision waits;approve write_text\x07"]


def test_the_title_counts_what_waits_whatever_the_focus() -> None:
    terminal = Terminal()
    notifier = _notifier(terminal)
    notifier.waiting(2)
    notifier.waiting(2)
    notifier.waiting(0)
    assert terminal.written == ["\x1b]2;ditto-tui · 2 waiting\x07", "\x1b]2;ditto-tui\x07"]


def test_off_writes_nothing_at_all() -> None:
    terminal = Terminal()
    terminal.focused = False
    notifier = _notifier(terminal, "off")
    notifier.request_arrived("x")
    notifier.waiting(3)
    assert terminal.written == []


@pytest.mark.parametrize(
    ("env", "method"),
    [
        ({"TERM": "xterm-kitty"}, "osc99"),
        ({"TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, "osc9"),
        ({"TERM": "foot"}, "osc777"),
        ({"VTE_VERSION": "7600", "TERM": "xterm-256color"}, "osc777"),
        ({"TMUX": "/tmp/tmux-0/default,1,0", "TERM_PROGRAM": "iTerm.app"}, "bell"),
        ({"TERM": "xterm-256color"}, "bell"),
        ({"TERM": "foot", "DITTO_TUI_NOTIFY": "off"}, "off"),
        ({"DITTO_TUI_NOTIFY": "nonsense", "TERM": "foot"}, "osc777"),
    ],
)
def test_auto_picks_what_the_terminal_understands(env: dict[str, str], method: str) -> None:
    assert pick_method("auto", env) == method


def test_every_method_rings_first() -> None:
    for method in ("bell", "osc9", "osc777", "osc99"):
        assert notification(method, "t", "b").startswith("\x07")
    assert (
        notification("osc99", "t", "b") == "\x07\x1b]99;i=ditto:d=0;t\x1b\\\x1b]99;i=ditto:d=1:p=body;b\x1b\\"
    )
    assert notification("osc9", "t", "b") == "\x07\x1b]9;t: b\x07"


@given(st.text())
def test_no_text_can_end_or_start_a_sequence(text: str) -> None:
    for method in ("osc9", "osc777", "osc99"):
        sent = notification(method, "ditto-tui", text)
        body = re.sub(r"\x1b\]99;[^;]*;", "", sent.replace("\x1b\\", "")).replace("\x1b]9;", "")
        body = body.replace("\x1b]777;notify;", "")
        assert "\x1b" not in body and body.count("\x07") == (1 if method == "osc99" else 2)
    cleaned = clean(text)
    assert len(cleaned) <= MAX_TEXT and ";" not in cleaned
    assert all(char.isprintable() for char in cleaned)


def test_t02_a_hostile_summary_carries_no_osc52_or_other_sequence_into_a_notification() -> None:
    assert clean("a\x07b\x1b]52;c;ZXZpbA==\x07\u202ex\u200by;z") == "ab]52,c,ZXZpbA==xy,z"
    assert window_title(1) == "\x1b]2;ditto-tui · 1 waiting\x07"
