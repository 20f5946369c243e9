"""``ditto-tui init [DIR]``: a commented ``ditto.yaml`` for a folder of one's own, and the folder trusted.

The file starts from the built-in defaults (``ditto_tui/agent/ditto.yaml``: the file tools and the
read-only command tools, the bundled demo MCP server, the scripted model, writes asked for), with a head
saying what to change for a real model and one's own MCP servers. An existing ``ditto.yaml`` is never
overwritten. Trust is given to the file it wrote and nothing else: graph code already in the folder (a
clone's ``graphs/*.py``) is named in the printout and stays unused until ``ditto-tui trust DIR``.
"""

from __future__ import annotations

import argparse
import os
import shlex
from importlib import resources
from pathlib import Path

from ditto_tui.errors import ValidationError
from ditto_tui.trust import covered_files, listed, real_path, trust
from ditto_tui.workspace import CONFIG_NAME

__all__ = ["add_command", "init_command", "project_config_text", "write_project_config"]

HEAD = """\
# ditto.yaml for this folder, written by `ditto-tui init`; the folder is trusted, so this file is used.
# `ditto-tui` here runs the packaged agent graph on this folder; every write asks you first.
#
# Your own model (OpenAI-compatible: vLLM, llama.cpp, Ollama, OpenRouter, ...): replace `infer:` below by
#   infer:
#     provider: openai
#     baseUrl: http://127.0.0.1:11434/v1
#     model: qwen2.5-coder
#     apiKey: ${OPENAI_API_KEY}
# and add the model's origin to sandbox.network. Your own MCP servers go under mcp.servers (the
# mcpServers block of Claude Desktop or Cursor, pasted; or `ditto-tui mcp import FILE`), each named in
# sandbox.mcp. Runs as OpenTelemetry traces (Phoenix, Langfuse, Jaeger):
#   otel: {endpoint: http://127.0.0.1:4318}
# `ditto-tui untrust` stops using this file.
#
"""


def project_config_text() -> str:
    """The text ``init`` writes: the head above, then the built-in defaults with their comments."""
    defaults = resources.files("ditto_tui.agent").joinpath("ditto.yaml").read_text(encoding="utf-8")
    body = "".join(line for line in defaults.splitlines(keepends=True)[3:])  # past their own head
    return HEAD + body


def write_project_config(directory: str | os.PathLike[str]) -> Path:
    """Write ``DIR/ditto.yaml`` (never over an existing one, never through a link) and trust DIR with that
    file alone (its other files, graph code included, stay as trusted as they were)."""
    folder = Path(real_path(directory))
    if not folder.is_dir():
        raise ValidationError(f"{os.fspath(directory)!r} is not a directory")
    target = folder / CONFIG_NAME
    if os.path.lexists(target):
        raise ValidationError(f"{str(target)!r} exists already: edit it, or remove it and run init again")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(project_config_text())
    trust(folder, only=(CONFIG_NAME,))
    return target


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``init [DIR]``."""
    init = commands.add_parser(
        "init",
        help="write a commented ditto.yaml for a folder and trust it",
        description="Write DIR/ditto.yaml (default: .) from the built-in defaults, with notes on using your "
        "own model and MCP servers, and trust DIR so it is used. An existing ditto.yaml is left alone.",
    )
    init.add_argument("dir", nargs="?", default=".", help="the folder (default: .)")


def init_command(args: argparse.Namespace) -> list[str]:
    """Run ``init``; the lines to print (naming the graph code in the folder that it did not trust)."""
    target = write_project_config(args.dir)
    folder = target.parent
    code = [name for name in covered_files(folder) if name != CONFIG_NAME]
    lines = [f"Wrote {target} and trusted {folder}" + (" for that file only." if code else ".")]
    if code:
        quoted = shlex.quote(str(folder))
        lines += [
            f"Not trusted, so not run: the graph code already in {folder}: {listed(code)}. Read it, then "
            f"`ditto-tui trust {quoted}` to use it (`ditto-tui trust --show {quoted}` shows it).",
        ]
    lines += [
        f"Run `ditto-tui` in {folder} (or with --workspace) to start the agent on it;"
        " edit ditto.yaml for your own model and MCP servers.",
    ]
    return lines
