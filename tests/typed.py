"""Typed views of loosely typed values, so that assertions can index into JSON without type: ignore."""

from __future__ import annotations

from typing import Any

from ditto_tui.contracts import ExternalResult
from ditto_tui.program import Program
from ditto_tui.runtime import Graph


def json_object(value: object) -> dict[str, Any]:
    """``value`` as a JSON object; an assertion fails if it is anything else."""
    assert isinstance(value, dict), f"expected a JSON object, got {value!r}"
    return value


def structured(result: ExternalResult) -> dict[str, Any]:
    """The structured content of ``result``, which must be a JSON object."""
    return json_object(result.structured_content)


def graph_plan(program: Program) -> Graph:
    """The plan of ``program``, which must be a graph (not a loop)."""
    assert isinstance(program.plan, Graph), f"expected a graph, got {type(program.plan).__name__}"
    return program.plan
