"""Graph files: a Python module under ``graphs/`` that declares its plan, initial input and tools."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import DittoError, ValidationError
from ditto_tui.errors import GraphLoadError as GraphLoadError
from ditto_tui.infer import ModelProvider
from ditto_tui.interaction import OutputSink, RegisteredTool
from ditto_tui.runtime import Graph, LoopDefinition, WorkerDefinition


@dataclass(frozen=True, kw_only=True)
class Program:
    """A runnable graph file: its plan (graph or loop), initial input, and the tools and sink it brings.

    ``provider`` is the model an agent loop uses unless ``ditto.yaml`` ``infer:`` names one; ``workers``
    are extra workers the plan needs beside INTERACTION, INFER and CONTEXT. ``reviews`` names tools
    (``name`` or ``SERVER:TOOL``) whose results a person reviews in the program's session, beside the
    rules that say ``review: results``: a graph can only ask for more review, never for less.
    """

    name: str
    description: str
    plan: Graph | LoopDefinition
    initial: Any = None
    tools: Sequence[RegisteredTool] = field(default_factory=tuple)
    output: OutputSink | None = None
    provider: ModelProvider | None = None
    workers: Sequence[WorkerDefinition] = field(default_factory=tuple)
    reviews: Sequence[str] = field(default_factory=tuple)


ProgramFactory = Callable[[RuntimeConfig, Path], Program]


def agent_task(program: Program) -> str | None:
    """The task of an agent graph (its input is a mapping with a ``prompt``); ``None`` for another graph."""
    initial = program.initial
    if isinstance(initial, Mapping) and isinstance(initial.get("prompt"), str):
        return str(initial["prompt"])
    return None


def with_task(program: Program, task: str) -> Program:
    """``program`` with ``task`` as its input: the ``prompt`` of an agent graph's, else the input itself."""
    if not task.strip():
        raise ValidationError("the task is empty")
    initial = program.initial
    if isinstance(initial, Mapping) and "prompt" in initial:
        return dataclasses.replace(program, initial={**initial, "prompt": task})
    return dataclasses.replace(program, initial=task)


def load_program(path: str | os.PathLike[str], config: RuntimeConfig, workspace: Path) -> Program:
    """Import the graph file at ``path`` and call its ``program(config, workspace)``.

    Loading a graph file runs it, so only a file the user named or a trusted workspace's own is loaded
    (``ditto_tui.workspace``). Raises ``ValidationError`` for a missing or non-Python file, and
    :class:`GraphLoadError` (with the traceback) when importing it or building its program raises.
    """
    file = Path(path)
    if not file.exists():
        raise ValidationError(f"graph file {str(path)!r}: no such file")
    if not file.is_file() or file.suffix != ".py":
        raise ValidationError(f"graph file {str(path)!r} is not a .py file")
    name = f"ditto_graph_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValidationError(f"graph file {file.name!r} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with _reported(file, "failed to import"):
        spec.loader.exec_module(module)
    factory = getattr(module, "program", None)
    if not callable(factory):
        raise ValidationError(f"graph file {file.name!r} defines no program(config, workspace) function")
    with _reported(file, "failed to build its program"):
        program = factory(config, workspace)
    if not isinstance(program, Program):
        raise ValidationError(f"program() of {file.name!r} must return a Program")
    return program


@contextlib.contextmanager
def _reported(file: Path, failed: str) -> Iterator[None]:
    """Turn an unexpected exception of a graph's own code into a one-line :class:`GraphLoadError`."""
    try:
        yield
    except DittoError:
        raise
    except Exception as exc:
        summary = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        raise GraphLoadError(
            f"graph file {file.name!r} {failed}: {summary}", details=traceback.format_exc()
        ) from exc
