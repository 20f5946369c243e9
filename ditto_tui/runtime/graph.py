"""Plans: a graph of nodes wired by dependencies, and a loop that runs a graph until done."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ditto_tui.errors import GraphBuildError

Bind = Callable[[Any, Mapping[str, Any]], Any]
"""``bind(input, deps_outputs)`` returns a node's input."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One node of a graph: its id, node type, the ids it depends on and how its input is bound."""

    id: str
    type: str
    deps: tuple[str, ...]
    bind: Bind


def _pass_input(input: Any, _deps: Mapping[str, Any]) -> Any:
    return input


def _positional_arity(function: Callable[..., Any]) -> int | None:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for kind in kinds if kind in positional)


def _two_argument_bind(bind: Callable[..., Any]) -> Bind:
    if _positional_arity(bind) == 1:
        return lambda input, _deps: bind(input)
    return bind


class Graph:
    """A named plan built with :meth:`node`; nodes may only depend on nodes added before them."""

    __slots__ = ("_dependents", "_nodes", "name")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise GraphBuildError("a graph needs a nonempty name")
        self.name = name
        self._nodes: dict[str, GraphNode] = {}
        self._dependents: dict[str, list[str]] = {}

    def node(
        self,
        node_id: str,
        node_type: str,
        deps: Sequence[str] = (),
        bind: Callable[..., Any] | None = None,
    ) -> Graph:
        """Add a node; a duplicate id, an unknown dependency or a bad argument raises here."""
        if not isinstance(node_id, str) or not node_id:
            raise GraphBuildError(f"graph {self.name!r}: a node id must be a nonempty string")
        if node_id in self._nodes:
            raise GraphBuildError(f"graph {self.name!r}: duplicate node id {node_id!r}")
        if not isinstance(node_type, str) or not node_type:
            raise GraphBuildError(f"graph {self.name!r}: node {node_id!r} needs a node type")
        if isinstance(deps, str):
            raise GraphBuildError(f"graph {self.name!r}: deps of {node_id!r} must be a list of node ids")
        dep_ids = tuple(deps)
        for dep in dep_ids:
            if dep not in self._nodes:
                raise GraphBuildError(
                    f"graph {self.name!r}: node {node_id!r} depends on unknown node {dep!r}"
                )
        if len(set(dep_ids)) != len(dep_ids):
            raise GraphBuildError(f"graph {self.name!r}: node {node_id!r} lists a dependency twice")
        if bind is not None and not callable(bind):
            raise GraphBuildError(f"graph {self.name!r}: bind of {node_id!r} is not callable")
        self._nodes[node_id] = GraphNode(
            node_id, node_type, dep_ids, _pass_input if bind is None else _two_argument_bind(bind)
        )
        self._dependents[node_id] = []
        for dep in dep_ids:
            self._dependents[dep].append(node_id)
        return self

    @property
    def nodes(self) -> Mapping[str, GraphNode]:
        """The nodes in the order they were added (a topological order)."""
        return self._nodes

    def dependents(self, node_id: str) -> Sequence[str]:
        """The ids of the nodes that list ``node_id`` as a dependency."""
        return self._dependents[node_id]

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, nodes={list(self._nodes)!r})"


def graph(name: str) -> Graph:
    """Start a graph named ``name``; chain :meth:`Graph.node` calls to add nodes."""
    return Graph(name)


@dataclass(frozen=True, slots=True)
class LoopDefinition:
    """A loop plan: run ``graph`` on ``bind(state)`` and fold outputs with ``update`` until ``done``."""

    graph: Graph
    max_iterations: int
    bind: Callable[[Any], Any]
    update: Callable[[Any, Mapping[str, Any]], Any]
    done: Callable[[Any], bool]

    @property
    def name(self) -> str:
        """Its graph's name, which its runs record (as a graph's runs record the graph's)."""
        return self.graph.name


def _identity(state: Any) -> Any:
    return state


def loop(
    *,
    graph: Graph,
    max_iterations: int,
    update: Callable[..., Any],
    done: Callable[[Any], bool],
    bind: Callable[[Any], Any] | None = None,
) -> LoopDefinition:
    """Define a loop; an ``update`` taking one argument receives only the state."""
    if not isinstance(graph, Graph):
        raise GraphBuildError("loop(graph=...) needs a graph built with graph(name)")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1:
        raise GraphBuildError("loop max_iterations must be a positive integer")
    for label, function in (("update", update), ("done", done), ("bind", bind)):
        if function is not None and not callable(function):
            raise GraphBuildError(f"loop {label} must be callable")
    two_argument_update: Callable[[Any, Mapping[str, Any]], Any]
    if _positional_arity(update) == 1:
        two_argument_update = lambda state, _outputs: update(state)  # noqa: E731
    else:
        two_argument_update = update
    return LoopDefinition(graph, max_iterations, bind or _identity, two_argument_update, done)
