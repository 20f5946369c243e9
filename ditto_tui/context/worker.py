"""A small CONTEXT worker: ``CONTEXT.UPDATE`` puts selected items into a scoped working set."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Annotated, Any

import pydantic
from pydantic import Field, StringConstraints

from ditto_tui.contracts import (
    ContentField,
    ContractModel,
    JsonField,
    JsonObjectField,
    JsonValue,  # noqa: F401  (pydantic resolves the JSON field types by this name)
)
from ditto_tui.digest import canonical_json
from ditto_tui.errors import ValidationError
from ditto_tui.interaction.results import validation_summary
from ditto_tui.runtime.worker import WorkerContext, WorkerDefinition, define_worker

WORKER_TYPE = "CONTEXT"
UPDATE = "CONTEXT.UPDATE"

_NonEmpty = Annotated[str, StringConstraints(strict=True, min_length=1)]


class ContextItem(ContractModel):
    """One item entering a working set: its id, the node it came from, its content and metadata."""

    id: _NonEmpty = Field(description="Identifies the item in its scope; a later item with it replaces it.")
    source_node: _NonEmpty = Field(description="The node type the content came from.")
    content: ContentField = Field(description="Text, message parts or JSON.")
    metadata: JsonObjectField | None = Field(default=None, description="Provenance, e.g. callId and status.")


class ContextUpdateInput(ContractModel):
    """The input of ``CONTEXT.UPDATE``: a scope and the items entering it (its ingress)."""

    scope: JsonField = Field(description="Which working set: a nonempty string or a JSON object.")
    ingress: tuple[ContextItem, ...] = Field(description="Items to add or replace, in order.")


class ContextUpdate(ContractModel):
    """What ``CONTEXT.UPDATE`` did: the ids it accepted and how many items the scope now holds."""

    scope: JsonField = Field(description="The scope updated.")
    accepted: tuple[str, ...] = Field(description="Ids of the items written, in order.")
    size: int = Field(description="Items in the scope after the update.")


class ContextStore:
    """Working sets by scope, in memory; each keeps at most ``max_items``, dropping the oldest first."""

    def __init__(self, max_items: int = 1000) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
            raise ValidationError("max_items must be a positive integer")
        self.max_items = max_items
        self._scopes: dict[str, OrderedDict[str, ContextItem]] = {}

    def update(self, scope: Any, items: tuple[ContextItem, ...]) -> ContextUpdate:
        """Add or replace ``items`` in ``scope``."""
        working = self._scopes.setdefault(_scope_key(scope), OrderedDict())
        for item in items:
            working.pop(item.id, None)
            working[item.id] = item
            while len(working) > self.max_items:
                working.popitem(last=False)
        return ContextUpdate(scope=scope, accepted=tuple(item.id for item in items), size=len(working))

    def items(self, scope: Any) -> list[ContextItem]:
        """The items of ``scope``, oldest first."""
        return list(self._scopes.get(_scope_key(scope), {}).values())


def _scope_key(scope: Any) -> str:
    if isinstance(scope, str) and scope:
        return canonical_json(scope)
    if isinstance(scope, Mapping) and scope:
        return canonical_json(dict(scope))
    raise ValidationError("a context scope must be a nonempty string or JSON object")


def parse_update(input: Any) -> ContextUpdateInput:
    """Validate a ``CONTEXT.UPDATE`` input (either spelling)."""
    if isinstance(input, ContextUpdateInput):
        return input
    try:
        return ContextUpdateInput.model_validate(input)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid context update: {validation_summary(exc)}") from None


def create_context_worker(*, store: ContextStore | None = None, max_items: int = 1000) -> WorkerDefinition:
    """The CONTEXT worker over ``store`` (a new one holding ``max_items`` per scope when omitted).

    Nothing enters a working set unless a graph or flow sends it through ``CONTEXT.UPDATE``.
    """
    working = store if store is not None else ContextStore(max_items)

    async def handle_update(input: Any, context: WorkerContext) -> ContextUpdate:
        request = parse_update(input)
        return working.update(request.scope, request.ingress)

    return define_worker(type=WORKER_TYPE, nodes={UPDATE: handle_update}, resources={"store": working})
