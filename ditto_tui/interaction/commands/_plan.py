"""A command plan: the fixed program and options of one call, and the workspace paths it names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def operand(path: str) -> str:
    """A normalised workspace path as a command operand: ``.`` or ``./path``, never starting with ``-``."""
    return path if path == "." else f"./{path}"


@dataclass(frozen=True, kw_only=True)
class CommandPlan:
    """``program options... operands... expression...``; only ``operands`` come from user paths.

    ``reads_content`` says whether the program opens its operands: then only regular files are passed on
    (and directories when ``walks_directories``), so FIFOs and devices can never block it.
    ``max_input_bytes`` bounds regular-file operands of programs that hold a whole line or file in memory.
    """

    program: str
    options: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    expression: tuple[str, ...] = ()
    reads_content: bool = False
    walks_directories: bool = False
    max_input_bytes: int | None = None

    def argv(self, paths: Sequence[str] | None = None) -> list[str]:
        """The exact argv, with ``paths`` (resolved workspace paths) in place of the planned ones."""
        chosen = self.paths if paths is None else tuple(paths)
        if len(chosen) != len(self.paths):
            raise ValueError("a plan's paths can be replaced, not added or removed")
        return [self.program, *self.options, *(operand(path) for path in chosen), *self.expression]
