"""A ReAct agent over the workspace: it looks around with read-only commands, searches the demo MCP
server's notes, writes a summary note (which stops for approval), observes the outcome and answers.

Each model turn is one loop iteration: tools → sample → act → observe → output, with every tool call,
MCP discovery and observation shown as a node of its own (``act/<call id>``). The model is scripted
(``react_agent.yaml`` beside this file: no key, no network); set ``infer:`` in ``ditto.yaml`` to run the
same graph on an OpenAI-compatible model (README, "Models"). This is the default graph of ``ditto-tui``
in any folder; ``graphs/react_agent.py`` of a trusted workspace replaces it. Needs the command tools and
``write_text`` in ``sandbox.tools``, ``sandbox.execute``, and the ``demo`` MCP server (``mcp.servers`` and
``sandbox.mcp``).
"""

from __future__ import annotations

from pathlib import Path

from ditto_tui.config import RuntimeConfig
from ditto_tui.demo.servers import DEMO_SERVER
from ditto_tui.demo.tools import write_text_tool
from ditto_tui.infer import load_scripted_provider, react_loop
from ditto_tui.interaction import create_read_only_command_tools
from ditto_tui.program import Program

SCRIPT = Path(__file__).with_suffix(".yaml")
NOTES = ".ditto/notes"
TASK = (
    "Find out what this workspace is about and what the demo notes say about approvals, then write a "
    f"short summary note to {NOTES}/summary.md."
)
SYSTEM = (
    "You are a careful assistant working in a supervised workspace. Use the read-only command tools to "
    "look at files, the mcp__demo__* tools for the notes, and write_text only for the summary note; a "
    "person approves every write. If a tool call fails or is denied, say so plainly in your answer."
)


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """The agent loop, its command, MCP and write tools, and the scripted model."""
    commands = create_read_only_command_tools(**config.interaction.commands.as_kwargs())
    tools = [tool.name for tool in commands] + [write_text_tool.name, f"mcp__{DEMO_SERVER}__*"]
    return Program(
        name="react-agent",
        description=__doc__ or "",
        plan=react_loop(tools=tools, max_steps=8, system=SYSTEM, name="react-agent"),
        initial={"prompt": TASK, "deliveryId": "react-agent:answer"},
        tools=(*commands, write_text_tool),
        provider=load_scripted_provider(SCRIPT),
    )
