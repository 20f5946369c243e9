"""Graph files: a Python module under ``graphs/`` that declares its plan, initial input and tools."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import ValidationError
from ditto_tui.infer import ModelProvider
from ditto_tui.interaction import OutputSink, RegisteredTool
from ditto_tui.runtime import Graph, LoopDefinition, WorkerDefinition


@dataclass(frozen=True, kw_only=True)
class Program:
    """A runnable graph file: its plan (graph or loop), initial input, and the tools and sink it brings.

    ``provider`` is the model an agent loop uses unless ``ditto.yaml`` ``infer:`` names one; ``workers``
    are extra workers the plan needs beside INTERACTION, INFER and CONTEXT.
    """

    name: str
    description: str
    plan: Graph | LoopDefinition
    initial: Any = None
    tools: Sequence[RegisteredTool] = field(default_factory=tuple)
    output: OutputSink | None = None
    provider: ModelProvider | None = None
    workers: Sequence[WorkerDefinition] = field(default_factory=tuple)


ProgramFactory = Callable[[RuntimeConfig, Path], Program]


def load_program(path: str | os.PathLike[str], config: RuntimeConfig, workspace: Path) -> Program:
    """Import the graph file at ``path`` and call its ``program(config, workspace)``.

    A graph file is trusted code of the project, like a Makefile: loading it runs it.
    """
    file = Path(path)
    if not file.is_file() or file.suffix != ".py":
        raise ValidationError(f"graph file {str(path)!r} is not a .py file")
    name = f"ditto_graph_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValidationError(f"graph file {file.name!r} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    factory = getattr(module, "program", None)
    if not callable(factory):
        raise ValidationError(f"graph file {file.name!r} defines no program(config, workspace) function")
    program = factory(config, workspace)
    if not isinstance(program, Program):
        raise ValidationError(f"program() of {file.name!r} must return a Program")
    return program
