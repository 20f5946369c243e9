"""The seed's 14 read-only command tools: structured arguments, fixed command shapes, bounded output.

Effects: each tool declares ``["execute"]`` and nothing else. The tools spawn processes, and the seed's own
setup grants exactly ``{"tools": [...], "execute": True}``; the tool registry refuses a tool whose declared
effects exceed the grant, so declaring ``read`` as well would make that setup fail. Turning ``execute`` off
therefore refuses all 14 tools (``pwd`` included) before any argument is read or any process is spawned,
while ``read`` does not gate them: the sandbox's ``read`` permission covers its own file reads, not
programs run under ``execute``.
"""

from ditto_tui.interaction.commands._output import EXIT_CODE_ERROR
from ditto_tui.interaction.commands._tool import (
    COMMAND_TIMEOUT_SECONDS,
    COMMAND_TOOL_NAMES,
    CommandTool,
    build_argv,
    create_read_only_command_tools,
)

__all__ = [
    "COMMAND_TIMEOUT_SECONDS",
    "COMMAND_TOOL_NAMES",
    "EXIT_CODE_ERROR",
    "CommandTool",
    "build_argv",
    "create_read_only_command_tools",
]
