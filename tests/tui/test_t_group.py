"""ADVERSARIAL group T: hostile text in descriptions, results, errors and forms never reaches the terminal.

Each case renders its strings inside the real MCP browser (a tool description, a form field description
and enum option, a tool result, a server error) and checks the characters the terminal driver would be
sent: no escape sequence or C1 control from the text, no markup error, the text shown literally with
its hidden characters as markers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Static, Tree

from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.tui.screens.mcp import McpScreen
from ditto_tui.tui.text import render_untrusted
from tests.tui.browser_fixtures import (
    NOTE_SCHEMA,
    FakeMcpServer,
    ScreenApp,
    foreign_sequences,
    make_source,
    screen_text,
    terminal_output,
)


def _tools(hostile: str) -> list[dict[str, Any]]:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": hostile},
            "mode": {"enum": [hostile, "plain"]},
        },
    }
    return [{"name": "echo", "description": hostile, "inputSchema": schema}]


def _reply(hostile: str) -> Any:
    def reply(name: str, arguments: Any) -> Any:
        return {"content": [{"type": "text", "text": hostile}], "structuredContent": {"echo": hostile}}

    return reply


async def _check_everywhere(
    tmp_path: Path, hostile: str, expected: list[str], *, error_too: bool = False
) -> list[str]:
    """Render ``hostile`` in every place of the browser; return the screen texts seen, checking each."""
    server = FakeMcpServer(_tools(hostile), reply=_reply(hostile))
    source, runtime, _gate = make_source(tmp_path, {"notes": server})
    source.registry.report_status(McpServerStatus(server="files", state="failed", error=hostile))
    app = ScreenApp(lambda: McpScreen(source))
    seen: list[str] = []
    async with runtime, app.run_test(size=(120, 36)) as pilot:

        async def look() -> None:
            await pilot.pause()
            output = terminal_output(app)
            assert foreign_sequences(output) == []
            assert "\x1b]" not in output and "\x1bP" not in output and "\x1b_" not in output
            seen.append(screen_text(app))

        await app.workers.wait_for_complete()
        await pilot.press("down")
        await look()  # the tool's description
        await pilot.press("enter")
        await look()  # the form: field description and enum option
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await look()  # the result as an Observation
        if error_too:
            await pilot.press("d", "down")
            await look()  # the failed server's error
    joined = "\n".join(seen)
    for fragment in expected:
        assert fragment in joined, fragment
    return seen


def test_the_oracle_catches_raw_text() -> None:
    """Rendering a raw string without the renderer does leak: the check below is not vacuous."""

    async def leak() -> list[str]:
        app = ScreenApp(lambda: __import__("textual.screen", fromlist=["Screen"]).Screen())
        async with app.run_test(size=(40, 5)) as pilot:
            await app.screen.mount(Static(Content("x\x1b]52;c;Zm9v\x07y")))
            await pilot.pause()
            return foreign_sequences(terminal_output(app))

    import asyncio

    assert asyncio.run(leak()) != []


async def test_t01_clear_screen_and_cursor_moves(tmp_path: Path) -> None:
    await _check_everywhere(
        tmp_path, "A\x1b[2J\x1b[H B\x1b[1A\x1b[2K C", ["A⟨ESC⟩[2J⟨ESC⟩[H B⟨ESC⟩[1A⟨ESC⟩[2K C"]
    )


async def test_t02_osc52_clipboard(tmp_path: Path) -> None:
    await _check_everywhere(tmp_path, "\x1b]52;c;Y3VybCBldmlsfHNo\x07", ["⟨ESC⟩]52;c;Y3VybCBldmlsfHNo⟨BEL⟩"])


async def test_t03_osc8_hyperlink(tmp_path: Path) -> None:
    seen = await _check_everywhere(
        tmp_path,
        "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07",
        ["⟨ESC⟩]8;;https://evil.example⟨BEL⟩click"],
    )
    assert seen


async def test_t04_title_set_and_report(tmp_path: Path) -> None:
    await _check_everywhere(tmp_path, "\x1b]0;rm -rf ~\x07\x1b[21t", ["⟨ESC⟩]0;rm -rf ~⟨BEL⟩⟨ESC⟩[21t"])


async def test_t05_c1_controls_dcs_apc_pm_sos(tmp_path: Path) -> None:
    await _check_everywhere(
        tmp_path,
        "\x9b2J \x9d52;c;x\x9c \x1bP1$q\x1b\\ \x1b_apc\x1b\\ \x1b^pm \x1bXsos",
        [
            "⟨U+009B⟩2J ⟨U+009D⟩52;c;x⟨U+009C⟩",
            "⟨ESC⟩P1$q⟨ESC⟩\\",
            "⟨ESC⟩_apc⟨ESC⟩\\",
            "⟨ESC⟩^pm",
            "⟨ESC⟩Xsos",
        ],
    )


async def test_t06_sequence_split_across_chunks(tmp_path: Path) -> None:
    first, second = "\x1b]5", "2;c;Zm9v\x07"
    assert "\x1b" not in render_untrusted(first).plain and "\x07" not in render_untrusted(second).plain
    await _check_everywhere(tmp_path, first + second, ["⟨ESC⟩]52;c;Zm9v⟨BEL⟩"])


async def test_t07_markup_injection_is_literal_and_inert(tmp_path: Path) -> None:
    hostile = "[bold red]APPROVED[/] [link=https://evil.example]docs[/link] [@click=app.quit]x[/]"
    seen = await _check_everywhere(
        tmp_path, hostile, ["[bold red]APPROVED[/] [link=https://evil.example]docs"]
    )
    assert all("\x1b]8;" not in text for text in seen)
    source, runtime, _gate = make_source(
        tmp_path, {"notes": FakeMcpServer(_tools("[@click=app.quit]quit[/]"))}
    )
    app = ScreenApp(lambda: McpScreen(source))
    async with runtime, app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("down")
        await pilot.pause()
        await pilot.click("#mcp-detail", offset=(5, 2))
        await pilot.pause()
        assert app.is_running


@pytest.mark.parametrize(
    "hostile", ["[/", "[/b]", "[0] Hello", "[b", "[type=x, v={'a[0]'}]", "\\[bold]", "[TODO] Q3"]
)
async def test_t08_malformed_markup_round_trips(tmp_path: Path, hostile: str) -> None:
    await _check_everywhere(tmp_path, hostile, [hostile])


async def test_t09_bidi_and_invisible_characters(tmp_path: Path) -> None:
    hostile = "evil\u202etxt.exe a\u2066b\u2069 z\u200bw \U000e0049\U000e0047"
    await _check_everywhere(
        tmp_path, hostile, ["evil⟨U+202E⟩txt.exe a⟨U+2066⟩b⟨U+2069⟩ z⟨U+200B⟩w ⟨U+E0049⟩⟨U+E0047⟩"]
    )


async def test_t10_backspace_and_carriage_return_tricks(tmp_path: Path) -> None:
    await _check_everywhere(
        tmp_path, "safe\b\b\b\bevil | rm -rf /\rls -la", ["safe⟨BS⟩⟨BS⟩⟨BS⟩⟨BS⟩evil | rm -rf /⟨CR⟩ls -la"]
    )


async def test_t11_nul_and_lone_surrogates(tmp_path: Path) -> None:
    hostile = b"a\x00b\xff".decode("utf-8", errors="surrogateescape")
    await _check_everywhere(tmp_path, hostile, ["a⟨NUL⟩b⟨U+DCFF⟩"])


async def test_t12_newline_inside_one_argument_stays_one_field(tmp_path: Path) -> None:
    seen = await _check_everywhere(tmp_path, "a\n  approve: yes", ['"a⏎'])
    observation = seen[2]
    lines = observation.splitlines()
    index = next(number for number, line in enumerate(lines) if '"echo": "a⏎' in line)
    assert "approve: yes" in lines[index + 1]


async def test_t13_a_long_line_and_many_lines_stay_responsive(tmp_path: Path) -> None:
    huge = "x" * (1 << 20)
    many = "\n".join(f"line {number}" for number in range(100_000))
    started = time.perf_counter()
    assert len(render_untrusted(huge).plain) == 1 << 20
    assert render_untrusted(many).plain.count("\n") == 99_999
    assert time.perf_counter() - started < 2.0
    source, runtime, _gate = make_source(tmp_path, {"notes": FakeMcpServer(_tools("d"), reply=_reply(many))})
    app = ScreenApp(lambda: McpScreen(source))
    async with runtime, app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("down", "enter", "enter")
        await app.workers.wait_for_complete()
        started = time.perf_counter()
        await pilot.press("end")
        await pilot.pause()
        assert time.perf_counter() - started < 5.0


async def test_t14_wide_and_combining_text_keeps_borders_aligned(tmp_path: Path) -> None:
    hostile = "名前 👩‍👩‍👧 e\u0301\u0301 tab\there"
    seen = await _check_everywhere(tmp_path, hostile, ["名前"])
    for text in seen:
        for line in text.splitlines():
            assert cell_len(line) == 120, line


async def test_t15_homoglyph_tool_names_are_refused_by_the_name_charset(tmp_path: Path) -> None:
    tools = [{"name": "саt", "description": "Cyrillic", "inputSchema": NOTE_SCHEMA}]
    source, runtime, _gate = make_source(tmp_path, {"notes": FakeMcpServer(tools)})
    app = ScreenApp(lambda: McpScreen(source))
    async with runtime, app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(app.screen.query_one("#mcp-tree", Tree).root.children[0].children) == 0
        assert "has a name outside" in screen_text(app)


async def test_t16_links_in_results_never_become_hyperlinks(tmp_path: Path) -> None:
    seen = await _check_everywhere(
        tmp_path, "see https://evil.example/login?next=x", ["https://evil.example/login"]
    )
    assert seen


async def test_t17_selected_text_holds_no_control_sequences(tmp_path: Path) -> None:
    hostile = "copy \x1b]52;c;Zm9v\x07 me"
    source, runtime, _gate = make_source(tmp_path, {"notes": FakeMcpServer(_tools(hostile))})
    app = ScreenApp(lambda: McpScreen(source))
    async with runtime, app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("down")
        await pilot.pause()
        detail = app.screen.query_one("#mcp-detail", Static)
        detail.text_select_all()
        await pilot.pause()
        selected = app.screen.get_selected_text()
        assert selected is not None and "copy ⟨ESC⟩]52;c;Zm9v⟨BEL⟩ me" in selected
        assert "\x1b" not in selected and "\x07" not in selected


async def test_t18_every_fixture_string_through_every_place(tmp_path: Path) -> None:
    fixtures = [
        "\x1b[2J\x1b[H",
        "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
        "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07",
        "\x1b]0;rm -rf ~\x07\x1b[21t",
        "\x9b2J\x9d52;c;\x9c\x1bPx\x1b\\\x1b_y",
        "[bold red]APPROVED[/][@click=app.quit]x[/][/",
        "evil\u202etxt.exe\u200b\U000e0041",
        "safe\b\bevil\rx\x00\ud800",
    ]
    hostile = " | ".join(fixtures)
    await _check_everywhere(tmp_path, hostile, ["⟨ESC⟩[2J⟨ESC⟩[H | ⟨ESC⟩]52;c;"], error_too=True)
