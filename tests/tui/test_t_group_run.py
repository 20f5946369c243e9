"""ADVERSARIAL group T on the Run screen and the approval view: every hostile string of the group, as tool
arguments, tool description, result content, structured content, delivered message and error, through
the real application.

One run (module fixture) is driven with Pilot: the approval view is read page by page, then, after the
approval, the timeline, the failure toast and every entry's detail in both views (normalised and raw
JSON), each scrolled page by page. For every screenful the characters a terminal driver would be sent
are checked: no escape sequence or C1 control from the text, borders aligned; the text shows literally
with its hidden characters as markers. Group T on the MCP browser is ``test_t_group.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from rich.cells import cell_len
from textual.pilot import Pilot
from textual.widget import Widget

from ditto_tui.config import parse_runtime_config
from ditto_tui.interaction import Tool
from ditto_tui.program import Program
from ditto_tui.runtime import WorkerContext, graph
from ditto_tui.tui import DittoApp, RunSpec
from tests.tui.browser_fixtures import foreign_sequences, screen_text, terminal_output
from tests.tui.run_fixtures import DATA, approval_view, keys_armed, run_screen, wait_until

SIZE = (160, 60)
HOSTILE: dict[str, str] = {
    "t01": "A\x1b[2J\x1b[H B\x1b[1A\x1b[2K C",
    "t02": "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
    "t03": "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07",
    "t04": "\x1b]0;rm -rf ~\x07\x1b[21t",
    "t05": "\x9b2J \x9d52;c;x\x9c \x1bP1$q\x1b\\ \x1b_apc\x1b\\ \x1b^pm \x1bXsos",
    "t06": "\x1b]5" + "2;c;Zm9v\x07",
    "t07": "[bold red]APPROVED[/] [link=https://evil.example]docs[/link] [@click=app.quit]x[/]",
    "t08": "[/ [/b] [0] Hello [b [type=x, v={'a[0]'}] [TODO] Q3",
    "t09": "evil\u202etxt.exe a\u2066b\u2069 z\u200bw \U000e0049\U000e0047",
    "t10": "safe\b\b\b\bevil | rm -rf /\rls -la",
    "t11": "a\x00b\x7fc",
    "t12": "a\n  approve: yes",
    "t14": "名前 👩‍👩‍👧 e\u0301\u0301 tab\there",
    "t16": "see https://evil.example/login?next=x",
}
"""Each case's string (T-06 arrives joined; T-11's lone surrogate rides in the result, see SURROGATE)."""
SURROGATE = b"x\xff".decode("utf-8", errors="surrogateescape")
SHOWN: dict[str, list[str]] = {
    "t01": ["A⟨ESC⟩[2J⟨ESC⟩[H B⟨ESC⟩[1A⟨ESC⟩[2K C"],
    "t02": ["⟨ESC⟩]52;c;Y3VybCBldmlsfHNo⟨BEL⟩"],
    "t03": ["⟨ESC⟩]8;;https://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩"],
    "t04": ["⟨ESC⟩]0;rm -rf ~⟨BEL⟩⟨ESC⟩[21t"],
    "t05": ["⟨U+009B⟩2J ⟨U+009D⟩52;c;x⟨U+009C⟩ ⟨ESC⟩P1$q⟨ESC⟩", "⟨ESC⟩_apc⟨ESC⟩", "⟨ESC⟩^pm ⟨ESC⟩Xsos"],
    "t06": ["⟨ESC⟩]52;c;Zm9v⟨BEL⟩"],
    "t07": ["[bold red]APPROVED[/] [link=https://evil.example]docs[/link] [@click=app.quit]x[/]"],
    "t08": ["[/ [/b] [0] Hello [b [type=x, v={'a[0]'}] [TODO] Q3"],
    "t09": ["evil⟨U+202E⟩txt.exe a⟨U+2066⟩b⟨U+2069⟩ z⟨U+200B⟩w ⟨U+E0049⟩⟨U+E0047⟩"],
    "t10": ["safe⟨BS⟩⟨BS⟩⟨BS⟩⟨BS⟩evil | rm -rf /⟨CR⟩ls -la"],
    "t11": ["a⟨NUL⟩b⟨DEL⟩c"],
    "t12": ["a⏎"],
    "t14": ["名前 👩⟨U+200D⟩👩⟨U+200D⟩👧 e\u0301\u0301 tab"],  # a joiner is a format character
    "t16": ["see https://evil.example/login?next=x"],
}
"""What each string must look like on screen (JSON views escape only quotes and backslashes)."""
DESCRIPTION = "Echo the text " + HOSTILE["t07"] + " " + HOSTILE["t02"] + " " + HOSTILE["t09"]
ERROR = "backend said " + " ".join(HOSTILE.values())


@dataclass
class Page:
    """One screenful: what the terminal driver would be sent, and the same screen as plain text."""

    place: str
    output: str
    text: str


@dataclass
class Views:
    """Every screenful the run went through, by place."""

    pages: list[Page] = field(default_factory=list)
    echo_detail: str = ""

    def text(self, prefix: str) -> str:
        """The plain text of every page whose place starts with ``prefix``."""
        return "\n".join(page.text for page in self.pages if page.place.startswith(prefix))


async def _echo(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    text = " | ".join([*args.values(), SURROGATE])
    return {"status": "success", "content": text, "structuredContent": {"echo": dict(args)}}


async def _fail(args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
    raise RuntimeError(ERROR)


def _program() -> Program:
    schema = {"type": "object", "properties": {key: {"type": "string"} for key in HOSTILE}}
    echo = Tool(name="echo_text", description=DESCRIPTION, input_schema=schema, effects=[], execute_fn=_echo)
    fail = Tool(
        name="fail_text", description="Fail.", input_schema={"type": "object"}, effects=[], execute_fn=_fail
    )
    call = {"call": {"id": "echo-1", "name": "echo_text", "arguments": HOSTILE}}
    plan = (
        graph("hostile-run")
        .node("echo", "INTERACTION.ACT.TOOL", [], lambda _i, _d: call)
        .node("observe", "INTERACTION.OBSERVE", ["echo"], lambda _i, deps: {"result": deps["echo"]})
        .node(
            "output",
            "INTERACTION.OUTPUT",
            ["observe"],
            lambda _i, deps: {"deliveryId": "hostile:1", "message": deps["observe"].message},
        )
        .node(
            "fail",
            "INTERACTION.ACT.TOOL",
            ["output"],
            lambda _i, _d: {"call": {"id": "fail-1", "name": "fail_text", "arguments": {}}},
        )
    )
    return Program(name="hostile-run", description="Hostile text everywhere.", plan=plan, tools=(echo, fail))


def _app(root: Path) -> DittoApp:
    config = parse_runtime_config(
        {
            "sandbox": {"tools": ["echo_text", "fail_text"]},
            "approval": {
                "rules": [{"tool": "echo_*", "decision": "ask"}, {"tool": "fail_*", "decision": "allow"}]
            },
        },
        {},
    )
    return DittoApp(RunSpec(config=config, workspace=root, program=_program()))


async def _capture(pilot: Pilot[Any], views: Views, place: str, scroller: Widget | None = None) -> None:
    """Record the screen; with ``scroller``, one record per page while scrolling it to its end."""
    app = pilot.app
    if scroller is not None:
        scroller.scroll_to(y=0, animate=False, immediate=True)
    while True:
        await pilot.pause()
        views.pages.append(Page(place, terminal_output(app), screen_text(app)))
        if scroller is None or scroller.scroll_offset.y >= scroller.max_scroll_y:
            return
        step = max(1, scroller.scrollable_content_region.height - 1)
        scroller.scroll_to(y=scroller.scroll_offset.y + step, animate=False, immediate=True)


async def _every_detail(pilot: Pilot[Any], views: Views) -> None:
    app = pilot.app
    assert isinstance(app, DittoApp)
    screen = run_screen(app)
    screen.timeline.focus()
    await pilot.press("home")
    for index, entry in enumerate(screen.model.entries):
        if index:
            await pilot.press("down")
        assert screen.timeline.selected is entry
        if entry.node_id == "echo" and entry.kind == "call":
            views.echo_detail = screen.detail.text.plain
        await _capture(pilot, views, f"detail {index}", screen.detail)
        await pilot.press("v")
        await _capture(pilot, views, f"raw {index}", screen.detail)
        await pilot.press("v")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def views(tmp_path_factory: pytest.TempPathFactory) -> Views:
    """Drive one hostile run through the approval view and the Run screen; every screenful seen."""
    root = tmp_path_factory.mktemp("hostile") / "ws"
    root.mkdir()
    shutil.copy(DATA / "ditto.tui.yaml", root / "ditto.yaml")
    app = _app(root)
    seen = Views()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        view = await approval_view(pilot)
        await _capture(pilot, seen, "approval", view.body)
        await pilot.press("a")
        screen = run_screen(app)
        await wait_until(pilot, lambda: screen.model.finished)
        await wait_until(pilot, lambda: "Run failed" in screen_text(app))
        await _capture(pilot, seen, "timeline")
        await keys_armed(pilot)
        await _every_detail(pilot, seen)
        assert app.is_running
    return seen


def _shown_everywhere(views: Views, case: str) -> None:
    """The case's string shows, literally with its markers, in the approval view and the call's detail."""
    for fragment in SHOWN[case]:
        assert fragment in views.text("approval"), (case, fragment)
        assert fragment in views.echo_detail, (case, fragment)


def test_every_page_reaches_the_terminal_clean(views: Views) -> None:
    """T-18 (a): no ESC-introduced sequence or C1 control from the text, on any page of any place."""
    assert len({page.place for page in views.pages}) >= 10
    for page in views.pages:
        assert foreign_sequences(page.output) == [], page.place
        for introducer in ("\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\x9b", "\x9d", "\x07"):
            assert introducer not in page.output, (page.place, introducer)


def test_t01_screen_clearing_and_cursor_moves_show_as_text(views: Views) -> None:
    _shown_everywhere(views, "t01")


def test_t02_osc52_never_reaches_the_clipboard(views: Views) -> None:
    _shown_everywhere(views, "t02")
    assert all("\x1b]52" not in page.output for page in views.pages)


def test_t03_osc8_links_are_text(views: Views) -> None:
    _shown_everywhere(views, "t03")
    assert all("\x1b]8;" not in page.output for page in views.pages)


def test_t04_title_set_and_report_are_neutralised(views: Views) -> None:
    _shown_everywhere(views, "t04")
    assert all("\x1b]0;" not in page.output and "\x1b[21t" not in page.output for page in views.pages)


def test_t05_c1_and_string_controls_are_neutralised(views: Views) -> None:
    _shown_everywhere(views, "t05")


def test_t06_a_sequence_split_across_chunks_is_neutralised_joined(views: Views) -> None:
    _shown_everywhere(views, "t06")


def test_t07_markup_shows_literally_without_style_link_or_action(views: Views) -> None:
    _shown_everywhere(views, "t07")
    assert "Echo the text [bold red]APPROVED[/]" in views.text("approval")  # the description too


def test_t08_malformed_markup_opens_the_approval_view_and_round_trips(views: Views) -> None:
    _shown_everywhere(views, "t08")


def test_t09_bidi_and_invisible_characters_are_visible_markers(views: Views) -> None:
    _shown_everywhere(views, "t09")


def test_t10_backspace_and_carriage_return_are_visible(views: Views) -> None:
    _shown_everywhere(views, "t10")


def test_t11_nul_del_and_lone_surrogates_are_visible(views: Views) -> None:
    _shown_everywhere(views, "t11")
    assert "x⟨U+DCFF⟩" in views.echo_detail


def test_t12_a_newline_in_an_argument_stays_inside_its_field(views: Views) -> None:
    _shown_everywhere(views, "t12")
    lines = views.text("approval").splitlines()
    index = next(number for number, line in enumerate(lines) if '"t12": "a⏎' in line)
    assert 'approve: yes",' in lines[index + 1] and '"t1' not in lines[index + 1]


def test_t14_wide_and_combining_text_keeps_every_border_aligned(views: Views) -> None:
    _shown_everywhere(views, "t14")
    for page in views.pages:
        for line in page.text.splitlines():
            assert cell_len(line) == SIZE[0], (page.place, line)


def test_t16_urls_in_results_are_plain_text(views: Views) -> None:
    _shown_everywhere(views, "t16")
    assert all("\x1b]8;" not in page.output for page in views.pages)


def test_t18_errors_and_toasts_are_one_clean_line(views: Views) -> None:
    """The failing call's error, in its timeline row, its detail and the toast, holds no raw control."""
    timeline = views.text("timeline")
    assert "Run failed" in timeline and "backend said" in timeline and "RuntimeError" not in timeline
    for page in views.pages:
        assert "\x1b" not in page.text and "\x00" not in page.text and "\u202e" not in page.text
