"""Revised S-03, the approval side: a tool that declares no effects is unrestricted as far as anyone can
tell, so with no rule that decides, the policy asks; a tool that declares an effect the seed does not know
is refused at registration (V-11).

The registry side is in ``test_tools.py`` (registrable, listed, run by the grants); this is the policy's
default (``ApprovalPolicy.for_tool``): no rule decides, so the call asks, and a denying approver denies it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ExternalResult
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import Tool, create_interaction_worker
from ditto_tui.runtime import WorkerContext, create_ditto
from ditto_tui.supervise import ApprovalGate, ApprovalPolicy, StaticApprover


async def _lookup(args: Mapping[str, Any], context: WorkerContext) -> Any:
    return {"status": "success", "content": "found"}


async def _call_denying(tmp_path: Path, effects: Sequence[str] | None) -> ExternalResult:
    """One call with no rule that decides and an approver that denies whatever it is asked."""
    tool = Tool(name="lookup", input_schema={"type": "object"}, effects=effects, execute_fn=_lookup)
    gate = ApprovalGate(policy=ApprovalPolicy(), approver=StaticApprover("deny"))
    worker = create_interaction_worker(tools=[tool], approval=gate)
    async with create_ditto(sandbox={"tools": ["lookup"]}, workspace=tmp_path, workers=[worker]) as runtime:
        call = {"id": "c-1", "name": "lookup", "arguments": {}}
        result: ExternalResult = await runtime.invoke("INTERACTION.ACT.TOOL", {"call": call})
        return result


def _asked(result: ExternalResult) -> bool:
    return result.status == "failed" and result.error is not None and result.error.code == "APPROVAL_DENIED"


async def test_s03_with_no_rule_that_decides_a_tool_without_declared_effects_asks(tmp_path: Path) -> None:
    assert _asked(await _call_denying(tmp_path, None))


def test_s03_a_tool_with_an_unknown_effect_never_reaches_the_policy() -> None:
    """V-11: an unknown descriptor is refused at registration; the policy still reads one as unrestricted
    (a recorded run may name it)."""
    tool = Tool(name="lookup", input_schema={"type": "object"}, effects=["exfiltrate"], execute_fn=_lookup)
    with pytest.raises(ValidationError, match="unknown effect 'exfiltrate'"):
        create_interaction_worker(tools=[tool])
    assert ApprovalPolicy().for_tool("lookup", False, ["exfiltrate"]).decision == "ask"
