"""The command line: ``ditto-tui [COMMAND] [OPTIONS]`` — the app, headless runs, recorded runs, trust."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from ditto_tui import durable_cli, grants_cli, project, runs_cli, serve, trust_cli
from ditto_tui.errors import DittoError, GraphLoadError, ValidationError
from ditto_tui.gateway import cli as gateway_cli
from ditto_tui.sanitize import escape_controls
from ditto_tui.supervise.modes import MODES, Mode

if TYPE_CHECKING:
    from ditto_tui.config import RuntimeConfig
    from ditto_tui.program import Program
    from ditto_tui.supervise import JournalRead

# Each command imports what it uses when it runs (the graph, the runtime, the app, the journal's readers):
# `inbox`, `decide` and `runs` on a durable host load the config and the run host's client, not the rest.

GRAPH_ERRORS_LOG = "graph-errors.log"

DESCRIPTION = """\
Supervised agent runs: run a graph, watch every node and tool call, and approve or deny each action
that needs approval before it executes. With no command, runs the agent graph that ships with ditto-tui
against the current directory (or --workspace). Runs are offline unless the config says otherwise.

The workspace is untrusted until you trust it (`ditto-tui trust DIR`): before that, its ditto.yaml and
graphs/ are never used, and ditto-tui keeps its journals and logs in your state directory, not in it.
Trust is pinned to the files as they were trusted: one edited, added or removed since is not used until
you trust the folder again (`ditto-tui trust --show DIR` shows what changed). `ditto-tui init` writes a
commented ditto.yaml for a folder of your own and trusts that file (not graph code already there).
Config: --config FILE, else a trusted workspace's ditto.yaml, else your own (in the config directory),
else the built-in defaults. Approval rules add up in layers (the built-in defaults or your own, the
workspace's or --config, then --policy FILE): every rule that matches counts, and the strictest
decision wins. Global options may stand before or after the command.

The app opens on the Run screen: the graph, a live timeline and the detail of what you select. A call
that needs approval opens the approval view: a approves once, s approves always (you choose which calls,
this one, a rule or the tool, and for how long, the run, the session, minutes, uses or the project), d
denies with a reason, e edits the arguments, c cancels the call. An MCP server that asks you to sign in
opens the sign-in view: o opens its address in your browser, c cancels (`ditto-tui mcp login SERVER`
does the same from the command line). F2/F3/F4 switch between the Run, MCP and Tools screens, F1 shows
every key, ctrl+p opens the command palette, q quits.
"""


@dataclass(frozen=True)
class _Option:
    flags: tuple[str, ...]
    dest: str
    default: Any
    kwargs: dict[str, Any]


_OPTIONS = (
    _Option(("--config",), "config", None, {"metavar": "FILE", "help": "the config file (see above)"}),
    _Option(
        ("--policy",),
        "policy",
        None,
        {
            "metavar": "FILE",
            "help": "approval rules (approval.rules only) above every other layer; the strictest match wins",
        },
    ),
    _Option(("--workspace",), "workspace", ".", {"metavar": "DIR", "help": "the workspace (default: .)"}),
    _Option(
        ("--headless",),
        "headless",
        False,
        {"action": "store_true", "help": "no UI: print one JSON event per line; approvals follow --approve"},
    ),
    _Option(
        ("--approve",),
        "approve",
        "deny",
        {
            "choices": ("deny", "allow"),
            "help": "how calls that ask for approval are answered in headless runs (default: deny)",
        },
    ),
    _Option(
        ("--mode",),
        "mode",
        "ask",
        {
            "choices": MODES,
            "help": "the session's mode: ask (the rules decide, the default), read-only (only calls known to "
            "just read run), auto-edit (workspace file writes run without asking), plan (read-only, and the "
            "model is told to propose a plan); in the app a key cycles them",
        },
    ),
    _Option(
        ("--break",),
        "breakpoints",
        (),
        {
            "action": "append",
            "metavar": "NODE_GLOB",
            "help": "in the app, pause before each node whose id or type matches, from the first run on "
            "(repeatable; * is every node; b on a node does the same)",
        },
    ),
    _Option(
        ("--no-journal",),
        "no_journal",
        False,
        {"action": "store_true", "help": "do not journal the run (see `ditto-tui runs`)"},
    ),
    _Option(
        ("--task",),
        "task",
        None,
        {"metavar": "TEXT", "help": "the task of an agent graph (its prompt); for another graph, its input"},
    ),
    _Option(
        ("--input",),
        "input",
        None,
        {"metavar": "JSON|@FILE", "help": "the run's input as JSON, or read from FILE (@FILE)"},
    ),
)

_RUN_OPTIONS = frozenset(
    {
        "config",
        "policy",
        "workspace",
        "headless",
        "approve",
        "mode",
        "breakpoints",
        "no_journal",
        "task",
        "input",
    }
)
APPLIES: dict[str | None, frozenset[str]] = {
    None: _RUN_OPTIONS,
    "run": _RUN_OPTIONS,
    "mcp": frozenset({"config", "policy", "workspace"}),
    "mcp import": frozenset({"config", "workspace"}),
    "mcp login": frozenset({"config", "workspace"}),
    "mcp logout": frozenset(),
    "mcp serve": frozenset({"config", "policy", "workspace", "mode"}),
    "mcp config": frozenset({"workspace"}),
    "runs": frozenset({"workspace"}),
    "replay": frozenset({"workspace"}),
    "audit": frozenset({"workspace"}),
    "policy": frozenset({"config", "policy", "workspace"}),
    "trust": frozenset(),
    "untrust": frozenset(),
    "init": frozenset(),
    "grants": frozenset({"workspace"}),
    "serve": frozenset({"config", "policy", "workspace"}),
}
"""The global options each command takes (a nested command as ``"mcp import"``); any other one given is an
error, never silently dropped."""


_AFTER = "__after_command"
"""The suffix of a repeatable option's ``dest`` after the command: argparse parses a command's options
into a namespace of its own and copies it over, so ``--break a run G --break b`` would keep only ``b``;
:func:`_parse` joins the two lists instead."""


def _add_options(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    # SUPPRESS: an option not given after the command must not overwrite the same option given before it.
    group = parser.add_argument_group("global options (before or after the command)")
    for option in _OPTIONS:
        repeated = after_command and option.kwargs.get("action") == "append"
        dest = option.dest + _AFTER if repeated else option.dest
        group.add_argument(*option.flags, dest=dest, default=argparse.SUPPRESS, **option.kwargs)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ditto-tui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _add_options(parser)
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run a graph file", description="Run a graph file (graphs/*.py).")
    run.add_argument("graph", help="the graph file, e.g. graphs/read_and_deliver.py")
    run.add_argument(
        "--detach",
        action="store_true",
        help="start the run on the durable run host (runs.host local or remote), print its id and return; "
        "a worker runs it, `ditto-tui inbox` and `decide` answer it from any terminal",
    )
    mcp = commands.add_parser(
        "mcp",
        help="browse the MCP servers of the config (import FILE: add a file's servers; login/logout SERVER)",
        description="Open the MCP browser alone: servers, their tools, and a form to invoke them.",
    )
    mcp_commands = mcp.add_subparsers(dest="mcp_command", metavar="{import,login,logout,serve,config}")
    _add_mcp_import(mcp_commands)
    _add_mcp_sign_in(mcp_commands)
    gateway_cli.add_commands(mcp_commands)
    runs_cli.add_commands(commands)
    durable_cli.add_commands(commands)
    _add_policy_lint(commands)
    trust_cli.add_commands(commands)
    project.add_command(commands)
    grants_cli.add_command(commands)
    serve.add_command(commands)
    for command in _commands_below(parser):
        _add_options(command, after_command=True)
    return parser


def _add_mcp_import(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "import",
        help="add the MCP servers of a Claude Desktop, Cursor or ditto.yaml file to a ditto.yaml",
        description="Show the MCP servers FILE defines (mcpServers, or mcp.servers) and add them to --config "
        "FILE if given, else to the workspace's ditto.yaml if the workspace is trusted, else to your own "
        "ditto.yaml in the user config directory. Comments are kept when the servers block is in block "
        "style. The servers start only once sandbox.mcp lists them.",
    )
    command.add_argument("file", help="e.g. ~/.config/Claude/claude_desktop_config.json or .cursor/mcp.json")
    command.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    command.add_argument("--replace", action="store_true", help="overwrite servers of the same name")


def _add_mcp_sign_in(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    login = commands.add_parser(
        "login",
        help="sign in to an HTTP MCP server that asks for OAuth, keeping its token",
        description="Connect SERVER (an HTTP entry of mcp.servers) and sign in: the authorization address "
        "is printed with its host, the system browser opens on it, and once the browser comes back to "
        "ditto-tui on 127.0.0.1 the token is kept in your config directory (oauth/, mode 0600), never in "
        "the workspace. Runs, headless ones included, then use it and refresh it.",
    )
    login.add_argument("server", help="the server's name under mcp.servers")
    login.add_argument(
        "--no-browser",
        action="store_true",
        help="open no browser: print the address and wait for a browser of this machine to come back from it "
        "(for machines without a browser of their own, or to sign in from another browser; tests use it)",
    )
    logout = commands.add_parser(
        "logout",
        help="forget the tokens kept for an MCP server",
        description="Delete what `ditto-tui mcp login SERVER` (or a sign-in in the app) kept for SERVER.",
    )
    logout.add_argument("server", help="the server's name")


def _add_policy_lint(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``policy lint`` beside ``policy check`` (whose parser ``runs_cli`` builds)."""
    policy = commands.choices["policy"]
    below = next(action for action in policy._actions if isinstance(action, argparse._SubParsersAction))
    below.add_parser(
        "lint",
        help="rules that can never decide, and rules no recorded run matched",
        description="Check the approval rules of every layer (built-in or your own, the workspace's or "
        "--config, --policy): rules a stricter rule always overrides (shadowed), and rules that matched "
        "no call of the workspace's recorded runs (unused). Exits 1 when it finds one.",
    )


def _command_name(args: argparse.Namespace) -> str | None:
    """``run``, ``mcp``, ``mcp import``…: the command as APPLIES names it."""
    if args.command == "mcp" and getattr(args, "mcp_command", None):
        return f"mcp {args.mcp_command}"
    command: str | None = args.command
    return command


def _commands_below(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command and sub-command parser under ``parser`` (``policy`` and ``policy check`` alike)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found += [command, *_commands_below(command)]
    return found


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; a global option the command does not take is an error naming both."""
    parser = _parser()
    args = parser.parse_args(argv)
    for option in _OPTIONS:
        after = vars(args).pop(option.dest + _AFTER, None)
        if after is not None:
            setattr(args, option.dest, [*getattr(args, option.dest, []), *after])
    given = {option.dest for option in _OPTIONS if hasattr(args, option.dest)}
    command = _command_name(args)
    allowed = APPLIES.get(command, _RUN_OPTIONS)
    refused = sorted(given - allowed)
    if refused:
        flag = "--" + refused[0].replace("_", "-")
        parser.error(f"{flag} does not apply to `ditto-tui {command}`")
    if "approve" in given and not getattr(args, "headless", False):
        parser.error("--approve applies to --headless runs (in the app, you answer each request)")
    if "breakpoints" in given and getattr(args, "headless", False):
        parser.error(
            "--break needs a person to answer each pause: run without --headless (the app pauses there)"
        )
    for option in _OPTIONS:
        if not hasattr(args, option.dest):
            setattr(args, option.dest, option.default)
    return args


def say(text: str, file: TextIO | None = None) -> None:
    """Print ``text`` for a person, each line with every character a terminal could act on escaped."""
    lines = str(text).split("\n")
    print("\n".join(escape_controls(line) for line in lines), file=file or sys.stderr)


def _unnoticed_command(args: argparse.Namespace, workspace: Path) -> int | None:
    """``mcp import`` and ``grants``, which say nothing of the workspace's untrusted files; None for
    another command."""
    if _command_name(args) == "mcp import":
        return _mcp_import(args, workspace)
    if _command_name(args) == "mcp config":
        return gateway_cli.config_command(args, workspace, sys.stdout)
    if args.command == "grants":
        return grants_cli.grants_command(args, workspace)
    return None


def _noticed_command(args: argparse.Namespace, workspace: Path) -> int | None:
    """``policy lint``, ``server``, ``inbox``, ``decide``, and ``runs`` on a durable host; None for
    another command."""
    if args.command == "policy" and args.policy_command == "lint":
        return _policy_lint(args, workspace)
    if args.command == "serve":
        # the config is read here: an error in it is said once, not in each tab
        config = None if args.stop else _config(args.config, workspace, args.policy)
        return serve.serve_command(args, workspace, _app_argv(args, workspace), sys.stdout, config)
    if args.command == "server":
        from ditto_tui.config import RuntimeConfig

        return durable_cli.run_command(args, RuntimeConfig())
    if _command_name(args) == "mcp serve":
        return gateway_cli.serve_command(
            args, _config(args.config, workspace, args.policy), workspace, sys.stdout
        )
    if args.command in durable_cli.COMMANDS - {"worker"}:
        return durable_cli.run_command(args, _config(args.config, workspace, args.policy))
    if args.command == "runs":
        config = _config(args.config, workspace, args.policy)
        if config.runs.host != "embedded":
            return asyncio.run(
                durable_cli.said(durable_cli.print_durable_runs(config, args.json, sys.stdout))
            )
    return None


async def _durable_program(
    args: argparse.Namespace, program: Program, config: RuntimeConfig, workspace: Path
) -> int:
    """``worker GRAPH`` and ``run GRAPH --detach``."""
    if args.command == "worker":
        return await durable_cli.run_worker(program, config, workspace)
    return await durable_cli.start_detached(program, config, sys.stdout, workspace)


def _app_argv(args: argparse.Namespace, workspace: Path) -> list[str]:
    """The options that open the app on the same workspace, config and policy (each tab of ``serve``)."""
    argv = ["--workspace", str(workspace)]
    if args.config is not None:
        argv += ["--config", str(Path(args.config).resolve())]
    if args.policy is not None:
        argv += ["--policy", str(Path(args.policy).resolve())]
    return argv


def _config(path: str | None, workspace: Path, policy: str | None = None) -> RuntimeConfig:
    """The run's config as :func:`ditto_tui.workspace.resolve_config` resolves it (``--policy`` on top)."""
    from ditto_tui.workspace import resolve_config

    return resolve_config(path, workspace, policy=policy).config


def _policy_lint(args: argparse.Namespace, workspace: Path) -> int:
    """``policy lint``: print each finding (``FILE:LINE: kind: rule: why``) and a summary."""
    from ditto_tui.supervise import ApprovalPolicy, read_journal
    from ditto_tui.supervise.journal import list_runs
    from ditto_tui.supervise.lint import lint_report

    policy = ApprovalPolicy.from_config(_config(args.config, workspace, args.policy).approval)
    journals = [read_journal(summary.path) for summary in list_runs(workspace)]
    lines, code = lint_report(policy, journals)
    say("\n".join(lines), sys.stdout)
    return code


def _notice(args: argparse.Namespace, workspace: Path) -> tuple[str, ...]:
    """Tell the user, in one line on stderr, which files of the workspace were passed over (untrusted, or
    changed since trusted); the line, for the app to show too (stderr is behind its screen)."""
    from ditto_tui.workspace import untrusted_notice

    uses_graph = args.command in (None, "run")
    notice = untrusted_notice(
        workspace, config_given=args.config is not None, graph_given=not uses_graph or args.command == "run"
    )
    if notice is None:
        return ()
    say(f"ditto-tui: {notice}")
    return (notice,)


def _open_app(
    config: RuntimeConfig,
    workspace: Path,
    program: Program | None,
    journal: bool = True,
    *,
    ask_task: bool = False,
    mode: Mode = "ask",
    breakpoints: Sequence[str] = (),
    notices: Sequence[str] = (),
    attach: str | None = None,
) -> int:
    """Run the Textual app until the user quits (imported here: headless runs never load Textual).

    ``ask_task``: the prompt box asks for the agent's task before the run starts; ``breakpoints``
    (``--break``) pause the runs before the nodes they match; ``notices`` are shown when it opens;
    ``attach``: the durable run shown at the start, instead of a new run."""
    from ditto_tui.tui import DittoApp, RunSpec

    spec = RunSpec(
        config=config,
        workspace=workspace,
        program=program,
        journal=journal,
        ask_task=ask_task,
        mode=mode,
        breakpoints=tuple(breakpoints),
        notices=tuple(notices),
        attach=attach,
    )
    app = DittoApp(spec)
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
    args = _parse(argv)
    try:
        if args.command in ("trust", "untrust"):
            return trust_cli.trust_command(args)
        if args.command == "init":
            for line in project.init_command(args):
                say(line, sys.stdout)
            return 0
        if _command_name(args) == "mcp logout":
            return _mcp_logout(args.server)
        workspace = Path(args.workspace).resolve()
        if not workspace.is_dir():
            raise ValidationError(f"workspace {args.workspace!r} is not a directory")
        if (answered := _unnoticed_command(args, workspace)) is not None:
            return answered
        notices = _notice(args, workspace)
        if (answered := _noticed_command(args, workspace)) is not None:
            return answered
        if args.command in runs_cli.COMMANDS:
            return runs_cli.run_command(
                args, lambda path, root: _config(path, root, args.policy), _open_replay
            )
        config = _config(args.config, workspace, args.policy)
        if _command_name(args) == "mcp login":
            return _mcp_login_command(args.server, config, workspace, browser=not args.no_browser)
        if args.command == "mcp":
            return _open_app(config, workspace, None, notices=notices)
        from ditto_tui.program import load_program
        from ditto_tui.workspace import default_graph

        graph_file = Path(args.graph) if args.command in ("run", "worker") else default_graph(workspace)
        program = with_input(load_program(graph_file, config, workspace), args.task, args.input)
        attach = durable_cli.attached(args, config)
        if durable_cli.detached(args):
            return asyncio.run(durable_cli.said(_durable_program(args, program, config, workspace)))
    except GraphLoadError as exc:
        say(f"ditto-tui: {exc.message} (traceback in {_log_traceback(exc, Path(args.workspace))})")
        return 2
    except DittoError as exc:
        say(f"ditto-tui: {exc.title.lower()}: {exc.message}")
        return 2
    from ditto_tui.headless import run_headless
    from ditto_tui.program import agent_task

    journal = not args.no_journal
    if not args.headless:
        ask = args.task is None and args.input is None and agent_task(program) is not None and not attach
        return _open_app(
            config,
            workspace,
            program,
            journal,
            ask_task=ask,
            mode=args.mode,
            breakpoints=args.breakpoints,
            notices=notices,
            attach=attach,
        )
    headless = run_headless(
        program,
        config,
        workspace,
        approve=args.approve,
        journal=journal,
        breakpoints=args.breakpoints,
        mode=args.mode,
    )
    return asyncio.run(headless)


def with_input(program: Program, task: str | None, given: str | None) -> Program:
    """``program`` with the run's input from ``--input`` (JSON, or ``@FILE`` of JSON) and ``--task``.

    ``--task`` sets the ``prompt`` of an agent graph's input (a mapping that has one); for another graph it
    is the input itself. Both may be given: the task then sets the prompt of the given input.
    """
    from ditto_tui.json_text import json_option
    from ditto_tui.program import with_task

    initial = program.initial
    if given is not None:
        initial = json_option(given, "--input")
    program = dataclasses.replace(program, initial=initial)
    if task is not None:
        if not task.strip():
            raise ValidationError("--task is empty")
        program = with_task(program, task)
    return program


def _log_traceback(error: GraphLoadError, workspace: Path) -> str:
    """Append the traceback of a graph that failed to the workspace's log of graph errors; its path."""
    from ditto_tui.home import StateDirError, append_private, logs_dir

    path = logs_dir(workspace.resolve()) / GRAPH_ERRORS_LOG
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        append_private(path, f"--- {stamp} {error.message}\n{error.details}\n")
    except StateDirError as exc:
        return f"nowhere: {exc.message}"
    return str(path)


def _import_target(args: argparse.Namespace, workspace: Path) -> tuple[Path, str]:
    """Where ``mcp import`` writes, and why there (API.md section 9's order, without the defaults)."""
    from ditto_tui.trust import trust_state
    from ditto_tui.workspace import CONFIG_NAME, user_config_file

    if args.config is not None:
        return Path(args.config), "--config"
    state = trust_state(workspace)
    if state.uses(CONFIG_NAME):
        return workspace / CONFIG_NAME, "the trusted workspace's config"
    if state.trusted and (workspace / CONFIG_NAME).is_file():  # neither file would be the one used
        folder = shlex.quote(str(workspace))
        raise ValidationError(
            f"{workspace / CONFIG_NAME} changed since the folder was trusted, so runs do not use it: "
            f"`ditto-tui trust --show {folder}` shows the change and `ditto-tui trust {folder}` trusts "
            "it as it is; or name the file to add to with --config"
        )
    return user_config_file(), "your own config; the workspace is not trusted"


def _mcp_import(args: argparse.Namespace, workspace: Path) -> int:
    """``mcp import FILE [--yes] [--replace]``: show the servers, ask, merge them into the target."""
    from ditto_tui.mcp_import import describe, plan_import, write_import
    from ditto_tui.trust import rewriting

    target, why = _import_target(args, workspace)
    plan = plan_import(Path(args.file), target, replace=args.replace)
    say(f"MCP servers in {args.file}, to add to {target} ({why}):", sys.stdout)
    say("\n".join(describe(plan)), sys.stdout)
    if plan.rewritten:
        say(f"{target} will be written anew: its comments and layout are not kept.", sys.stdout)
    if not args.yes and not _confirmed(f"Add {len(plan.servers)} server(s) to {target}? [y/N] "):
        say("Nothing written.", sys.stdout)
        return 1
    with rewriting(workspace, target):  # the person's own change: a pinned config stays used
        write_import(plan)
    waiting = [name for name in plan.servers if name not in plan.granted]
    say(f"Added to {target}.", sys.stdout)
    if waiting:
        say(
            f"They start once sandbox.mcp lists them, e.g. `mcp: [{', '.join(waiting)}]` under sandbox.",
            sys.stdout,
        )
    return 0


def _mcp_login_command(server: str, config: RuntimeConfig, workspace: Path, *, browser: bool) -> int:
    """``mcp login SERVER [--no-browser]``; ctrl+c stops the wait in one line."""
    try:
        return asyncio.run(_mcp_login(server, config, workspace, browser=browser))
    except KeyboardInterrupt:
        say("ditto-tui: sign-in stopped")
        return 1


async def _mcp_login(server: str, config: RuntimeConfig, workspace: Path, *, browser: bool) -> int:
    """Connect that one server, signing in in the browser; 0 once connected."""
    import webbrowser

    from ditto_tui.interaction import open_mcp_servers
    from ditto_tui.interaction.mcp.loopback import browser_authorize
    from ditto_tui.interaction.mcp.oauth import default_token_dir

    entry = config.mcp.servers.get(server)
    if entry is None or entry.url is None:
        why = "is not in the config (mcp.servers)" if entry is None else "is not an HTTP server"
        say(f"ditto-tui: MCP server {server!r} {why}; only HTTP servers sign in")
        return 1
    if unset := config.unset_variables(server):
        say(f"ditto-tui: MCP server {server!r} reads {', '.join(unset)}, not set: set it to sign in")
        return 1
    asked: list[str] = []

    async def authorize(authorization_url: str) -> str:
        asked.append(authorization_url)
        say(_sign_in_lines(server, authorization_url, browser=browser), sys.stdout)
        opener = webbrowser.open if browser else _no_browser
        return await browser_authorize(authorization_url, open_browser=opener)

    tokens = default_token_dir()
    async with open_mcp_servers(
        {server: entry}, workspace=workspace, allowed=[server], authorize=authorize, token_store=tokens
    ) as registry:
        status = registry.status(server)
    if status is None or status.state != "connected":
        why = status.error if status is not None and status.error else "the server did not connect"
        say(f"ditto-tui: {why}")
        return 1
    done = "Signed in to" if asked else "Already signed in to"
    say(f"{done} {server}; the token is kept in {tokens}", sys.stdout)
    return 0


def _sign_in_lines(server: str, authorization_url: str, *, browser: bool) -> str:
    """What a person reads before signing in: the server, the host made plain, the address as text."""
    from ditto_tui.supervise.sign_in import plain_host

    host = plain_host(authorization_url)
    then = "Opening your browser" if browser else "Open it in a browser on this machine"
    return (
        f"MCP server {server!r} asks you to sign in at {host or '(no host)'}:\n"
        f"  {escape_controls(authorization_url)}\n"
        f"{then}; waiting for it to come back (ctrl+c stops)."
    )


def _no_browser(url: str) -> None:
    """The browser opener of ``--no-browser``: the address is printed, nothing is opened."""


def _mcp_logout(server: str) -> int:
    """``mcp logout SERVER``: forget its tokens and say whether there were any."""
    from ditto_tui.interaction.mcp.oauth import TokenStore, default_token_dir

    store = TokenStore(default_token_dir())
    if store.forget(server):
        say(f"Signed out of {server}: its tokens are forgotten", sys.stdout)
    else:
        say(f"No tokens were kept for {server}", sys.stdout)
    return 0


def _confirmed(question: str) -> bool:
    """Ask on the terminal; without one, refuse (``--yes`` is how a script says yes)."""
    if not sys.stdin.isatty():
        raise ValidationError("not on a terminal, so nothing was asked and nothing written; pass --yes")
    say(question, sys.stdout)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


_NATIVE_THREADS = "temporalio.bridge.temporal_sdk_bridge"
"""The Temporal client's native module: its runtime keeps threads that can touch the interpreter while it
shuts down, which crashes a short command after its work is done (temporalio/sdk-python#300)."""


def console(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``ditto-tui`` program: :func:`main`, then leave with its code.

    A command that talked to Temporal leaves at once once its output and logs are flushed, without the
    interpreter's shutdown (see ``_NATIVE_THREADS``): everything it wrote is already closed and synced."""
    code = main(argv)
    if "ditto_tui.telemetry.feed" in sys.modules:  # runs were traced: their last records, briefly
        from ditto_tui.telemetry import flush_tracing

        flush_tracing()
    if _NATIVE_THREADS not in sys.modules:
        sys.exit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said on it
            pass
    os._exit(code)


if __name__ == "__main__":
    console()
