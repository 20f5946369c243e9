"""ADVERSARIAL S-10: the 14 command tools really are read-only — no write anywhere, no network socket.

Every command runs under ``strace``, which records each file-changing system call and each socket the
program (and any child of it) makes; the workspace tree (names, hashes, modification times) is compared
before and after. The calls come from Hypothesis: every tool with any allowed combination of its fields.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import DittoError
from ditto_tui.interaction import create_interaction_worker, create_read_only_command_tools
from ditto_tui.runtime import create_ditto
from ditto_tui.sandbox import CommandResult, create_local_sandbox_executor
from ditto_tui.sandbox.executor import SEARCH_PATH
from ditto_tui.signal import CancelSignal
from tests.interaction.commands.command_harness import ALL_TOOLS, FILE_PROGRAM
from tests.properties import examples

STRACE = next(
    (path for path in (os.path.join(d, "strace") for d in SEARCH_PATH) if os.access(path, os.X_OK)), None
)
_CHANGING = (
    "creat mkdir mkdirat rename renameat renameat2 unlink unlinkat rmdir link linkat symlink symlinkat "
    "truncate ftruncate chmod fchmod fchmodat chown fchown fchownat lchown utime utimes utimensat "
    "futimesat setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr mknod mknodat"
).split()
# "?" lets strace skip a call this architecture does not have (aarch64 has no plain open or rename).
_TRACE = "trace=%network,?open,openat,?openat2," + ",".join(f"?{name}" for name in _CHANGING)
_WRITE_OPEN = re.compile(r"\bopen(?:at2?)?\(.*\b(?:O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)\b")
_CHANGE = re.compile(r"^\d+\s+(?:<\.\.\.\s+)?(" + "|".join(_CHANGING) + r")\(")
_SOCKET = re.compile(r"\bsocket\((AF_\w+)")
_REMOTE = re.compile(r"sa_family=AF_(?!UNIX\b|LOCAL\b)")
TOOLS = tuple(tool for tool in ALL_TOOLS if tool != "file" or FILE_PROGRAM)

pytestmark = pytest.mark.skipif(STRACE is None, reason="strace is not installed in /usr/bin or /bin")


def _strace_works() -> bool:
    """Whether ptrace is allowed here (some containers forbid it)."""
    assert STRACE is not None
    probe = subprocess.run([STRACE, "-qq", "-o", os.devnull, "/bin/true"], capture_output=True, check=False)
    return probe.returncode == 0


def violations(log: str) -> list[str]:
    """The lines of an strace log that change a file or open a socket other than a local one."""
    found = []
    for line in log.splitlines():
        family = _SOCKET.search(line)
        if (
            _WRITE_OPEN.search(line)
            or _CHANGE.match(line)
            or (family is not None and family.group(1) not in {"AF_UNIX", "AF_LOCAL"})
            or _REMOTE.search(line)
        ):
            found.append(line)
    return found


class TracingExecutor:
    """The local executor, with every program started under ``strace`` writing to a fresh log file."""

    def __init__(self, root: Path, logs: Path) -> None:
        self.inner = create_local_sandbox_executor(root)
        self.logs = logs
        self.runs: list[tuple[list[str], Path]] = []

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
        assert STRACE is not None
        program = shutil.which(command, path=os.pathsep.join(SEARCH_PATH)) or command
        log = self.logs / f"{len(self.runs)}.log"
        self.runs.append(([command, *args], log))
        return await self.inner.run(
            STRACE,
            ["-f", "-qq", "-o", str(log), "-e", _TRACE, program, *args],
            max_stdout_bytes=max_stdout_bytes,
            max_stderr_bytes=max_stderr_bytes,
            signal=signal,
            timeout=timeout,
        )


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``root``: its kind, modification time and content hash (or link target)."""
    entries: dict[str, tuple[str, int, str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            kind, digest = "link", os.readlink(path)
        elif path.is_dir():
            kind, digest = "dir", ""
        else:
            kind, digest = "file", hashlib.sha256(path.read_bytes()).hexdigest()
        entries[str(path.relative_to(root))] = (kind, info.st_mtime_ns, digest)
    return entries


def _fill(root: Path) -> None:
    files = {
        "notes.txt": "beta\nalpha\nalpha\nGamma 3\n10\n9\n",
        "table.csv": "name,count\nb,2\na,1\na,1\n",
        ".hidden": "dot file\n",
        "src/main.py": "print('hello')\n",
        "src/deep/leaf.md": "# Leaf\n\nword word\n",
        "-n": "a file named like an option\n",
        "data.bin": "\x00\x01binary\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "empty").mkdir()
    os.symlink("notes.txt", root / "link_inside")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh workspace of ordinary files, directories and one inside link."""
    if not _strace_works():
        pytest.skip("strace cannot trace here (ptrace is not permitted)")
    root = Path(os.path.realpath(tmp_path_factory.mktemp("readonly"))) / "ws"
    root.mkdir()
    _fill(root)
    return root


_FILES = ["notes.txt", "table.csv", ".hidden", "src/main.py", "src/deep/leaf.md", "-n", "data.bin"]
_ANY_PATHS = [*_FILES, ".", "src", "src/deep", "empty", "link_inside", "missing.txt", "src/"]
_TEXT = st.one_of(st.sampled_from(["alpha", "a.*", "[", "-v", "--help", "*.py", "é", "word"]), st.text())


def _field(tool: str, name: str, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values of one field of ``tool``'s input schema."""
    if name == "path":
        return st.sampled_from(
            _FILES if tool in {"cat", "head", "tail", "wc", "sort", "uniq", "cut"} else _ANY_PATHS
        )
    if name == "paths":
        return st.lists(st.sampled_from(_ANY_PATHS), min_size=1, max_size=4)
    if name == "fields":
        return st.sampled_from(["1", "2", "1,2", "1-", "2-3"])
    if name == "delimiter":
        return st.sampled_from([",", " ", ":", "\t"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if schema["type"] == "boolean":
        return st.booleans()
    if schema["type"] == "integer":
        return st.integers(schema["minimum"], schema["maximum"])
    return _TEXT.filter(bool).map(lambda text: text[:64])


@st.composite
def allowed_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """One tool, its required fields and any subset of its optional ones, each with an allowed value."""
    tool = draw(st.sampled_from(TOOLS))
    schema = next(t for t in create_read_only_command_tools() if t.name == tool).input_schema
    required = set(schema["required"])
    names = [name for name in schema["properties"] if name in required or draw(st.booleans())]
    return tool, {name: draw(_field(tool, name, schema["properties"][name])) for name in names}


async def _run(root: Path, logs: Path, tool: str, arguments: dict[str, Any]) -> tuple[Any, TracingExecutor]:
    executor = TracingExecutor(root, logs)
    async with create_ditto(
        sandbox={"tools": list(ALL_TOOLS), "execute": True},
        sandbox_executor=executor,
        workers=[create_interaction_worker(tools=create_read_only_command_tools())],
        workspace=root,
    ) as runtime:
        call = {"id": f"{tool}-1", "name": tool, "arguments": arguments}
        try:
            result = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        except DittoError as error:  # a refusal (a directory for cat, say) spawns nothing: still read-only
            result = error
    return result, executor


def _check_read_only(root: Path, tool: str, arguments: dict[str, Any], logs: Path) -> ExternalResult | None:
    before = snapshot(root)
    result, executor = asyncio.run(_run(root, logs, tool, arguments))
    assert snapshot(root) == before, (tool, arguments)
    for argv, log in executor.runs:
        assert violations(log.read_text(encoding="utf-8", errors="replace")) == [], argv
        log.unlink()
    return result if isinstance(result, ExternalResult) else None


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(call=allowed_calls())
def test_s10_every_allowed_call_changes_nothing_and_opens_no_socket(
    call: tuple[str, dict[str, Any]], tree: Path, tmp_path: Path
) -> None:
    tool, arguments = call
    _check_read_only(tree, tool, arguments, tmp_path)


def test_s10_each_tool_with_all_its_fields_set(tree: Path, tmp_path: Path) -> None:
    every_field: dict[str, dict[str, Any]] = {
        "grep": {"pattern": "a", "paths": ["."], "recursive": True, "ignoreCase": True, "fixedStrings": True},
        "ls": {"path": "src", "all": True},
        "cat": {"path": "notes.txt"},
        "find": {"path": ".", "name": "*.md", "type": "file", "maxDepth": 32},
        "head": {"path": "notes.txt", "lines": 1000},
        "tail": {"path": "notes.txt", "lines": 1000},
        "wc": {"path": "table.csv", "metric": "bytes"},
        "sort": {"path": "notes.txt", "reverse": True, "numeric": True, "unique": True},
        "uniq": {"path": "notes.txt", "count": True, "ignoreCase": True},
        "cut": {"path": "table.csv", "fields": "1-", "delimiter": ","},
        "stat": {"path": "src/deep"},
        "file": {"path": "data.bin"},
        "du": {"path": ".", "maxDepth": 32},
        "pwd": {},
    }
    for tool in TOOLS:
        result = _check_read_only(tree, tool, every_field[tool], tmp_path)
        assert result is not None and result.status == "success", (tool, result)


def test_the_oracle_sees_writes_and_sockets(tree: Path, tmp_path: Path) -> None:
    """A program that writes a file, and one that opens an internet socket, are both caught."""

    async def traced(program: str, args: list[str]) -> str:
        executor = TracingExecutor(tree, tmp_path)
        await executor.run(program, args, max_stdout_bytes=1024, max_stderr_bytes=1024, timeout=10)
        return executor.runs[-1][1].read_text()

    outside = tmp_path / "touched"
    written = asyncio.run(traced("touch", [str(outside)]))
    assert outside.exists() and violations(written)
    python = shutil.which("python3", path=os.pathsep.join(SEARCH_PATH))
    if python is not None:
        opened = asyncio.run(traced(python, ["-c", "import socket; socket.socket().close()"]))
        assert any("AF_INET" in line for line in violations(opened))
