"""The command line: ``ditto-tui [run GRAPH | mcp] [--headless] [--approve allow|deny] [--config FILE]``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ditto_tui import runs_cli
from ditto_tui.config import RuntimeConfig, load_runtime_config_file
from ditto_tui.errors import DittoError
from ditto_tui.headless import run_headless
from ditto_tui.program import Program, load_program
from ditto_tui.supervise import JournalRead

DEFAULT_GRAPH = "graphs/react_agent.py"
DESCRIPTION = """\
Supervised agent runs: run a graph, watch every node and tool call, and approve or deny each action
that needs approval before it executes. With no command, runs the default graph of graphs/ against the
current directory. Runs are offline unless a graph or ditto.yaml says otherwise.

The app opens on the Run screen: the graph, a live timeline and the detail of what you select. A call
that needs approval opens the approval view: a approves once, s approves the tool for the session,
d denies with a reason, e edits the arguments, c cancels the call. F2/F3/F4 switch between the Run,
MCP and Tools screens, F1 shows every key, ctrl+p opens the command palette, q quits.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ditto-tui", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run a graph file", description="Run a graph file (graphs/*.py).")
    run.add_argument("graph", help="the graph file, e.g. graphs/read_and_deliver.py")
    mcp = commands.add_parser(
        "mcp",
        help="browse the MCP servers of ditto.yaml",
        description="Open the MCP browser alone: servers, their tools, and a form to invoke them.",
    )
    mcp.add_argument("--config", default=None, help="the config file (default: ./ditto.yaml if present)")
    mcp.add_argument("--workspace", default=".", help="the workspace directory (default: .)")
    runs_cli.add_commands(commands)
    for command in (parser, run):
        command.add_argument(
            "--config", default=None, help="the config file (default: ./ditto.yaml if present)"
        )
        command.add_argument("--workspace", default=".", help="the workspace directory (default: .)")
        command.add_argument(
            "--headless",
            action="store_true",
            help="no UI: print one JSON event per line; approvals follow --approve",
        )
        command.add_argument(
            "--approve",
            choices=("deny", "allow"),
            default="deny",
            help="how calls that ask for approval are answered in headless runs (default: deny)",
        )
        command.add_argument(
            "--no-journal",
            action="store_true",
            help="do not journal the run under .ditto/runs/ (see `ditto-tui runs`)",
        )
    return parser


def _config(path: str | None, workspace: Path) -> RuntimeConfig:
    """``--config``, else ``./ditto.yaml`` of the directory ditto-tui was started in.

    A ``ditto.yaml`` inside another ``--workspace`` is never trusted implicitly: it could widen the
    permissions of whoever points ditto-tui at that directory. It is ignored and the user is told.
    """
    if path is not None:
        return load_runtime_config_file(path, os.environ)
    local = Path.cwd() / "ditto.yaml"
    foreign = workspace / "ditto.yaml"
    if foreign.is_file() and foreign.resolve() != local.resolve():
        print(
            f"ditto-tui: ignoring {foreign.name} of the workspace; pass --config to use it", file=sys.stderr
        )
    if local.is_file():
        return load_runtime_config_file(local, os.environ)
    return RuntimeConfig()


def _open_app(config: RuntimeConfig, workspace: Path, program: Program | None, journal: bool = True) -> int:
    """Run the Textual app until the user quits (imported here: headless runs never load Textual)."""
    from ditto_tui.tui import DittoApp, RunSpec

    app = DittoApp(RunSpec(config=config, workspace=workspace, program=program, journal=journal))
    app.run()
    return app.return_code or 0


def _open_replay(journal: JournalRead) -> int:
    """Reopen a recorded run in the Replay screen until the user quits."""
    from ditto_tui.tui.replay import ReplayApp

    app = ReplayApp(journal)
    app.run()
    return app.return_code or 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run; returns the process exit code."""
    args = _parser().parse_args(argv)
    if args.command in runs_cli.COMMANDS:
        try:
            return runs_cli.run_command(args, _config, _open_replay)
        except DittoError as exc:
            print(f"ditto-tui: {exc.title.lower()}: {exc.message}", file=sys.stderr)
            return 2
    workspace = Path(args.workspace).resolve()
    graph_file = Path(args.graph) if args.command == "run" else workspace / DEFAULT_GRAPH
    try:
        config = _config(args.config, workspace)
        if args.command == "mcp":
            return _open_app(config, workspace, None)
        program = load_program(graph_file, config, workspace)
    except DittoError as exc:
        print(f"ditto-tui: {exc.title.lower()}: {exc.message}", file=sys.stderr)
        return 2
    journal = not args.no_journal
    if not args.headless:
        return _open_app(config, workspace, program, journal)
    return asyncio.run(run_headless(program, config, workspace, approve=args.approve, journal=journal))


if __name__ == "__main__":
    sys.exit(main())
