"""A command tool: strict arguments, checked paths, exactly one ``sandbox.run``, bounded output."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ditto_tui.config import CommandsConfig
from ditto_tui.errors import PathError, ValidationError
from ditto_tui.interaction.commands._output import Limits, command_outcome
from ditto_tui.interaction.commands._plan import CommandPlan
from ditto_tui.interaction.commands._specs import SPECS, CommandSpec
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.sandbox import Sandbox

COMMAND_TIMEOUT_SECONDS = 30.0
"""The deadline of one command; an executor configured with a shorter timeout wins."""

HARD_CAPS = {"max_entries": 10_000, "max_output_bytes": 1024 * 1024, "max_error_bytes": 64 * 1024}
DEFAULT_LIMITS = {"max_entries": 1000, "max_output_bytes": 64 * 1024, "max_error_bytes": 8 * 1024}
# The config's spelling of each option (``interaction.commands`` in ditto.yaml), beside the Python one.
_CAMEL_OPTIONS = {
    "maxEntries": "max_entries",
    "maxOutputBytes": "max_output_bytes",
    "maxErrorBytes": "max_error_bytes",
}
EFFECTS: tuple[str, ...] = ("execute",)
"""What the command tools declare: they spawn processes (descriptive; the spawn checks ``execute``)."""

_SPECS_BY_NAME = {spec.name: spec for spec in SPECS}


def _limit(name: str, value: object) -> int:
    cap = HARD_CAPS[name]
    if type(value) is not int or not 1 <= value <= cap:
        raise ValidationError(f"{name} must be an integer from 1 to {cap}", code="invalid_limit")
    return value


def _check_content(plan: CommandPlan, mode: int) -> None:
    """A program that opens its operand gets a regular file (or a directory it walks), nothing else."""
    if stat.S_ISDIR(mode) and not plan.walks_directories:
        raise PathError("path is a directory", code="is_directory")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise PathError("path is a FIFO, socket or device, which is never opened", code="not_regular_file")


def _check_operand(sandbox: Sandbox, path: str, plan: CommandPlan) -> str:
    """The real workspace path for ``path``; refuses links out of the workspace and files that could block.

    A missing final name is passed on, so the command reports it as it would any other failure.
    """
    real = sandbox.resolve(path)
    try:
        info = os.stat(sandbox.workspace / real, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return real
    except OSError as error:
        raise PathError("path cannot be accessed", code="inaccessible") from error
    mode = info.st_mode
    if plan.reads_content:
        _check_content(plan, mode)
    if plan.max_input_bytes is not None and stat.S_ISREG(mode) and info.st_size > plan.max_input_bytes:
        raise ValidationError(
            f"{plan.program} holds its input in memory: files over {plan.max_input_bytes} bytes are refused",
            code="file_too_large",
        )
    return real


@dataclass(frozen=True, kw_only=True)
class CommandTool:
    """One read-only command as a :class:`~ditto_tui.interaction.RegisteredTool`."""

    spec: CommandSpec
    limits: Limits
    effects: tuple[str, ...] = EFFECTS
    requires_approval: bool = False

    @property
    def name(self) -> str:
        """The tool name, which is also the program it runs."""
        return self.spec.name

    @property
    def description(self) -> str:
        """What the tool does, for callers and models."""
        return self.spec.description

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.spec.input_schema

    def validate(self, args: Mapping[str, Any]) -> None:
        """Refuse unknown fields, wrong types, out-of-range numbers and unsafe paths."""
        self.spec.plan(args)

    async def execute(self, args: Mapping[str, Any], context: WorkerContext) -> dict[str, Any]:
        """Check the arguments and paths again, run the command once and shape its output.

        Refusals, permission, start-up, timeout and executor errors raise and are never retried; a nonzero
        exit is a failed result with ``COMMAND_EXIT_NONZERO``.
        """
        plan = self.spec.plan(args)
        sandbox = context.services.sandbox
        sandbox.check_execute()
        argv = plan.argv([_check_operand(sandbox, path, plan) for path in plan.paths])
        result = await sandbox.run(
            argv[0],
            argv[1:],
            signal=context.signal,
            max_stdout_bytes=self.limits.max_output_bytes,
            max_stderr_bytes=self.limits.max_error_bytes,
            timeout=COMMAND_TIMEOUT_SECONDS,
        )
        return command_outcome(self.name, argv, result, self.limits, workspace=sandbox.workspace)


def _options(options: CommandsConfig | Mapping[str, Any] | None) -> dict[str, object]:
    """The options as Python keywords: the config's group, or its mapping in either spelling."""
    if options is None:
        return {}
    if isinstance(options, CommandsConfig):
        return dict(options.as_kwargs())
    if not isinstance(options, Mapping):
        raise ValidationError(
            "command tool options must be the config's interaction.commands group or a mapping",
            code="invalid_options",
        )
    given: dict[str, object] = {}
    for key, value in options.items():
        name = _CAMEL_OPTIONS.get(key, key)
        if name not in HARD_CAPS:
            raise ValidationError(f"unknown command tool option {str(key)[:40]!r}", code="invalid_options")
        if name in given:
            raise ValidationError(f"command tool option {name!r} is given twice", code="invalid_options")
        if value is not None:  # an empty YAML key takes its default, as in the config
            given[name] = value
    return given


def create_read_only_command_tools(
    options: CommandsConfig | Mapping[str, Any] | None = None,
    /,
    *,
    max_entries: int | None = None,
    max_output_bytes: int | None = None,
    max_error_bytes: int | None = None,
) -> list[CommandTool]:
    """The 14 read-only command tools (grep, ls, cat, find, head, tail, wc, sort, uniq, cut, stat, file,
    du, pwd); nothing is registered or granted.

    ``options`` is the config's ``interaction.commands`` group as is (a ``CommandsConfig``, or its
    mapping with ``maxEntries`` or ``max_entries`` keys); a keyword given here wins over it. Each
    result keeps at most ``max_entries`` lines (default 1000), ``max_output_bytes`` of stdout (64 KiB)
    and ``max_error_bytes`` of stderr (8 KiB); hard caps 10,000 / 1 MiB / 64 KiB, and values outside
    1..cap raise ``invalid_limit``.
    """
    chosen = {**DEFAULT_LIMITS, **_options(options)}
    keywords = {
        "max_entries": max_entries,
        "max_output_bytes": max_output_bytes,
        "max_error_bytes": max_error_bytes,
    }
    chosen.update({name: value for name, value in keywords.items() if value is not None})
    limits = Limits(
        max_entries=_limit("max_entries", chosen["max_entries"]),
        max_output_bytes=_limit("max_output_bytes", chosen["max_output_bytes"]),
        max_error_bytes=_limit("max_error_bytes", chosen["max_error_bytes"]),
    )
    return [CommandTool(spec=spec, limits=limits) for spec in SPECS]


def build_argv(tool: str, args: Mapping[str, Any]) -> list[str]:
    """The exact argv the command tool ``tool`` would run for ``args`` (paths as given, normalised).

    Pure: no file is touched and nothing runs. Raises like the tool's ``validate`` does.
    """
    spec: CommandSpec | None = _SPECS_BY_NAME.get(tool)
    if spec is None:
        raise ValidationError(f"no read-only command tool named {tool!r}", code="unknown_tool")
    return spec.plan(args).argv()


COMMAND_TOOL_NAMES: Sequence[str] = tuple(_SPECS_BY_NAME)
