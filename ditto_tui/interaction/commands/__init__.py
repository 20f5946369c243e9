"""The seed's 14 read-only command tools: structured arguments, fixed command shapes, bounded output.

Effects: each tool declares ``["execute"]``, which describes it (they spawn processes) and gates nothing.
The sandbox refuses at the point of access: each execution calls ``check_execute`` before it looks at a
path or spawns, so with ``execute`` off all 14 tools (``pwd`` included) are refused after their arguments
are checked and before anything on disk is touched. ``read`` does not gate them: the sandbox's ``read``
permission covers its own file reads, not programs run under ``execute``; the seed's own setup grants
exactly ``{"tools": [...], "execute": True}``.
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
