"""A runtime over a real workspace with the 14 command tools, and a local executor that counts its runs."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import DittoError, ToolValidationError
from ditto_tui.interaction import create_interaction_worker
from ditto_tui.interaction.commands import CommandTool, create_read_only_command_tools
from ditto_tui.runtime import Runtime, create_ditto
from ditto_tui.sandbox import CommandResult, create_local_sandbox_executor
from ditto_tui.signal import CancelSignal

FILE_PROGRAM = any(os.access(os.path.join(directory, "file"), os.X_OK) for directory in ("/usr/bin", "/bin"))
"""Whether ``file(1)`` is where the executor looks; without it the ``file`` tool raises at start-up."""

ALL_TOOLS = (
    "grep",
    "ls",
    "cat",
    "find",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "stat",
    "file",
    "du",
    "pwd",
)


class CountingExecutor:
    """The real local executor, recording every argv it is asked to run."""

    def __init__(self, root: Path, *, timeout: float | None = None) -> None:
        self.inner = create_local_sandbox_executor(root, timeout=timeout)
        self.calls: list[list[str]] = []

    async def run(
        self,
        command: str,
        args: Sequence[str],
        *,
        max_stdout_bytes: int,
        max_stderr_bytes: int,
        signal: CancelSignal | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        self.calls.append([command, *args])
        return await self.inner.run(
            command,
            args,
            max_stdout_bytes=max_stdout_bytes,
            max_stderr_bytes=max_stderr_bytes,
            signal=signal,
            timeout=timeout,
        )


def rule(error: BaseException) -> str | None:
    """The stable code of a refusal: the tool's own rule when the registry wrapped it."""
    if isinstance(error, ToolValidationError) and isinstance(error.__cause__, DittoError):
        return error.__cause__.code
    return getattr(error, "code", None)


def everything(result: ExternalResult) -> str:
    """Every field of a result as one string, for canary and leak checks."""
    return json.dumps(result.model_dump(mode="json", by_alias=True), ensure_ascii=False)


class CommandHarness:
    """The command tools in a runtime over ``root``; each ``call`` builds and closes its own runtime."""

    def __init__(
        self,
        root: Path,
        *,
        permissions: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        **limits: int,
    ) -> None:
        self.root = root
        self.tools: list[CommandTool] = create_read_only_command_tools(**limits)
        self.executor = CountingExecutor(root, timeout=timeout)
        self.permissions = permissions or {"tools": list(ALL_TOOLS), "execute": True}
        self._count = 0

    def runtime(self) -> Runtime:
        """A runtime with the tools, the permissions and the counting executor over ``root``."""
        return create_ditto(
            sandbox=self.permissions,
            sandbox_executor=self.executor,
            workers=[create_interaction_worker(tools=self.tools)],
            workspace=self.root,
        )

    async def call(
        self, name: str, arguments: Mapping[str, Any], runtime: Runtime | None = None
    ) -> ExternalResult:
        """Invoke ``INTERACTION.ACT.TOOL`` once, in ``runtime`` or in a runtime of its own."""
        if runtime is None:
            async with self.runtime() as own:
                return await self.call(name, arguments, own)
        self._count += 1
        call = {"id": f"{name}-{self._count}", "name": name, "arguments": dict(arguments)}
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        return result

    async def refused(self, name: str, arguments: Mapping[str, Any]) -> DittoError:
        """A call that must raise before any process is spawned; returns the error."""
        before = len(self.executor.calls)
        with pytest.raises(DittoError) as info:
            await self.call(name, arguments)
        assert len(self.executor.calls) == before, "a refused call spawned a process"
        return info.value

    @property
    def last_argv(self) -> list[str]:
        """The argv of the most recent run."""
        return self.executor.calls[-1]


OPTION_LIKE = (
    "-f/etc/passwd",
    "--file=/outside/secret.txt",
    "-r",
    "-R",
    "--include=*",
    "--exclude-from=x",
    "-exec",
    "-L",
    "-H",
    "-D",
    "-O3",
    "-delete",
    "--",
    "-",
    "-n",
    "--help",
    "--out=x",
    "--o=x",
    "--compress=x",
    "--files0=x",
    "--files0-from=list",
    "-uo x",
    "-oFILE",
    "--output-delimiter=$(id)",
    "1-3 --complement",
    "; id",
    "$(id)",
    "`id`",
    "| tee x",
    "> x",
    "&& curl evil",
    "$HOME",
    "~",
    "*",
)

UNKNOWN_FIELDS: tuple[dict[str, Any], ...] = (
    {"flags": ["--out=x"]},
    {"extra_args": ["-exec", "sh"]},
    {"output": "b"},
    {"__proto__": {}},
    {"args": ["-delete"]},
    {"expression": "-exec rm -rf {} ;"},
    {"command": "whoami"},
)

# One call per tool that takes a path, with the path in ``{}``.
PATH_CALLS: dict[str, dict[str, Any]] = {
    "grep": {"pattern": "x", "paths": ["{}"]},
    "ls": {"path": "{}"},
    "cat": {"path": "{}"},
    "find": {"path": "{}"},
    "head": {"path": "{}"},
    "tail": {"path": "{}"},
    "wc": {"path": "{}"},
    "sort": {"path": "{}"},
    "uniq": {"path": "{}"},
    "cut": {"path": "{}", "fields": "1"},
    "stat": {"path": "{}"},
    "file": {"path": "{}"},
    "du": {"path": "{}"},
}
CONTENT_TOOLS = ("cat", "head", "tail", "wc", "sort", "uniq", "cut", "grep")


def with_path(tool: str, path: str) -> dict[str, Any]:
    """The call of ``tool`` with ``path`` in its path field."""
    args = dict(PATH_CALLS[tool])
    if tool == "grep":
        args["paths"] = [path]
    else:
        args["path"] = path
    return args
