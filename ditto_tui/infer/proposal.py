"""Which model message proposed the tool call being made: the text a person sees beside the approval.

The agent loop makes each call the model asked for inside :func:`proposed_by`, with the text of the
assistant message that asked; the approval gate reads :func:`current_proposal` when it builds the
request, so the request carries the model's own words (its reasoning, its plan) to whoever decides.
A context variable crosses the runtime's nested call without every layer in between passing it on;
a call made outside an agent loop has none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

MAX_PROPOSAL_CHARS = 20_000
"""How much of the proposing message a request carries."""

_PROPOSAL: ContextVar[str | None] = ContextVar("ditto_tui_proposal", default=None)


@contextlib.contextmanager
def proposed_by(text: str | None) -> Iterator[None]:
    """Make the calls inside the block as proposed by a model message reading ``text``."""
    token = _PROPOSAL.set(text[:MAX_PROPOSAL_CHARS] if text else None)
    try:
        yield
    finally:
        _PROPOSAL.reset(token)


def current_proposal() -> str | None:
    """The text of the model message that proposed the call being made, if a model did."""
    return _PROPOSAL.get()
