"""Shared pieces for the MCP browser, Tools screen and group T tests: an in-process MCP server, apps."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from textual._compositor import CompositorUpdate
from textual.app import App
from textual.screen import Screen

from ditto_tui.config import RuntimeConfig, parse_runtime_config
from ditto_tui.interaction import McpRegistry, Tool, ToolRegistry, create_interaction_worker
from ditto_tui.runtime import Runtime, create_ditto
from ditto_tui.sandbox import Sandbox
from ditto_tui.signal import CancelSignal
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy, Approver, StaticApprover
from ditto_tui.tui.mcp_source import McpSource

NOTE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The note's name."}},
    "required": ["name"],
}
WRITE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "text": {"type": "string"},
        "mode": {"enum": ["replace", "append"]},
    },
    "required": ["name", "text"],
}
NOTES_TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_note",
        "description": "Read one note from the notes folder.",
        "inputSchema": NOTE_SCHEMA,
        "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "write_note",
        "description": "Write a note, replacing or appending.",
        "inputSchema": WRITE_SCHEMA,
        "annotations": {"destructiveHint": True},
    },
]

CONFIG: dict[str, Any] = {
    "sandbox": {"mcp": ["notes"], "tools": ["read_text", "write_text"], "read": True},
    "mcp": {
        "servers": {
            "notes": {"command": "notes-server", "args": ["--folder", "notes"]},
            "files": {"command": "files-server"},
            "remote": {"url": "http://127.0.0.1:9/mcp?token=hidden", "disabled": True},
        }
    },
    "approval": {
        "rules": [
            {"mcp": "notes:read_*", "decision": "allow"},
            {"mcp": "notes:write_*", "decision": "ask"},
            {"tool": "write_*", "decision": "ask"},
        ]
    },
}


class FakeMcpServer:
    """An in-process MCP client: a fixed tool list (changeable), echoing calls, recording them."""

    def __init__(
        self, tools: Sequence[Mapping[str, Any]], reply: Callable[[str, Mapping[str, Any]], Any] | None = None
    ):
        self.tools = list(tools)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reply = reply

    async def list_tools(
        self, cursor: str | None = None, signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        return {"tools": self.tools}

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], signal: CancelSignal | None = None
    ) -> Mapping[str, Any]:
        self.calls.append((name, dict(arguments)))
        if self.reply is not None:
            return self.reply(name, arguments)  # type: ignore[no-any-return]
        return {"content": [{"type": "text", "text": f"{name} done"}], "structuredContent": {"ok": True}}


def runtime_config(overrides: Mapping[str, Any] | None = None) -> RuntimeConfig:
    """The test configuration, with top-level sections replaced by ``overrides``."""
    return parse_runtime_config({**CONFIG, **(overrides or {})}, {})


def make_source(
    workspace: Path,
    servers: Mapping[str, FakeMcpServer],
    *,
    config: RuntimeConfig | None = None,
    approver: Approver | None = None,
) -> tuple[McpSource, Runtime, ApprovalGate]:
    """An MCP browser source over in-process servers, on a runtime guarded by the config's policy."""
    config = config or runtime_config()
    registry = McpRegistry(**config.mcp.registry_kwargs())
    for name, server in servers.items():
        registry.register(name, server)
    gate = ApprovalGate(
        policy=ApprovalPolicy(rule.model_dump(exclude_none=True) for rule in config.approval.rules),
        approver=approver if approver is not None else StaticApprover("allow"),
    )
    runtime = create_ditto(
        config=config, workspace=workspace, workers=[create_interaction_worker(mcp=registry, approval=gate)]
    )
    return McpSource(runtime=runtime, registry=registry, config=config, policy=gate.policy), runtime, gate


async def _no_op(args: Mapping[str, Any], context: Any) -> Any:
    return {"content": "ok"}


def sample_tools() -> ToolRegistry:
    """Three tools: one permitted, one needing approval whose effect is not granted, one not granted."""
    return ToolRegistry(
        [
            Tool(
                name="read_text",
                description="Read a UTF-8 text file inside the workspace.",
                input_schema={
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
                execute_fn=_no_op,
                effects=["read"],
            ),
            Tool(
                name="write_text",
                description="Write a text file inside the workspace.",
                input_schema={
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path", "text"],
                },
                execute_fn=_no_op,
                effects=["write"],
                requires_approval=True,
            ),
            Tool(
                name="grep",
                description="Search files for a pattern.",
                input_schema={"type": "object", "properties": {"pattern": {"type": "string"}}},
                execute_fn=_no_op,
                effects=["execute"],
            ),
        ]
    )


def sandbox_for(workspace: Path, config: RuntimeConfig | None = None) -> Sandbox:
    """The sandbox the test configuration grants."""
    config = config or runtime_config()
    return Sandbox(config.sandbox.to_permissions_kwargs(), workspace=workspace)


class ScreenApp(App[None]):
    """A bare app that opens one screen, as the application does for a mode."""

    def __init__(self, make_screen: Callable[[], Screen[Any]]) -> None:
        super().__init__()
        self.make_screen = make_screen

    def on_mount(self) -> None:
        self.push_screen(self.make_screen())


# Textual's own output: SGR styling, cursor moves and synchronized-update brackets. Anything else that
# starts with ESC, and every C1 control, could only have come from the text on screen.
_OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;:]*[mHJKl]|\x1b\[\?[0-9;]*[hl]")


def terminal_output(app: App[Any]) -> str:
    """The exact characters a terminal driver would be sent to draw the current screen in full.

    Textual's headless driver discards output, so this renders the screen's compositor update the way
    ``App._display`` does for a real driver.
    """
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        legacy_windows=False,
        safe_box=False,
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert isinstance(update, CompositorUpdate)
    return update.render_segments(console)


def foreign_sequences(output: str) -> list[str]:
    """Escape sequences and C1 controls in ``output`` that Textual does not write itself."""
    rest = _OWN_SEQUENCES.sub("", output)
    return [char for char in rest if char == "\x1b" or char == "\x07" or 0x80 <= ord(char) <= 0x9F]


def screen_text(app: App[Any]) -> str:
    """The current screen as plain text, one line per row."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        force_terminal=True,
        color_system="truecolor",
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)
