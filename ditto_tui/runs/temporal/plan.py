"""What a durable run is given of its graph, and what ties a request to its call: plain functions, with
no Temporal in them, so listing and deciding need not load the worker's side."""

from __future__ import annotations

import hashlib
import json
from types import CodeType
from typing import Any

from ditto_tui.runtime import Graph
from ditto_tui.supervise.inbox import InboxRequest
from ditto_tui.supervise.requests import ApprovalRequest


def node_queue(task_queue: str, graph: str) -> str:
    """The task queue of ``graph``'s nodes: only a worker that has the graph polls it."""
    return f"{task_queue}/{graph}"


def snapshot(plan: Graph) -> dict[str, Any]:
    """What a run on Temporal is given of its graph: each node's id, type and dependencies, and a digest
    of them and of what each node's binding does (its code, not the file it came from)."""
    nodes = [{"id": n.id, "type": n.type, "deps": list(n.deps)} for n in plan.nodes.values()]
    binds = [_code_digest(getattr(n.bind, "__code__", None)) for n in plan.nodes.values()]
    text = json.dumps({"name": plan.name, "nodes": nodes, "binds": binds}, sort_keys=True)
    return {"name": plan.name, "nodes": nodes, "digest": hashlib.sha256(text.encode()).hexdigest()}


def _code_digest(code: CodeType | None) -> str:
    if code is None:
        return ""
    parts = [code.co_code.hex(), repr(code.co_names)]
    for const in code.co_consts:
        parts.append(_code_digest(const) if isinstance(const, CodeType) else repr(const))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def binding(request: InboxRequest) -> str:
    """What ties a request to the call that asked it, across a worker's restart: node, kind, call id and,
    for a tool call, the tool's and the arguments' digests."""
    node_id = getattr(request, "node_id", None)
    call = getattr(request, "call", None)
    if call is not None:
        asker = str(getattr(call, "id", request.request_id))
    elif request.kind == "breakpoint":  # one pause before the node (in its loop iteration)
        asker = f"before:{getattr(request, 'iteration', None)}"
    else:
        asker = request.request_id
    parts = [str(node_id), request.kind, asker]
    if isinstance(request, ApprovalRequest):
        parts += [request.tool_digest, request.arguments_digest]
    return "|".join(parts)


__all__ = ["binding", "node_queue", "snapshot"]
