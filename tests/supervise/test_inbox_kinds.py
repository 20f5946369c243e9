"""The inbox holds every kind of request in one table: a new kind is a local dataclass, and each reader
takes its own view (``pending_of``); the shared rules (queue order, timeouts, withdrawal, a refusal that
arrives with an approval wins) hold for every kind."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

from ditto_tui.contracts import ToolCall
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest, Inbox
from ditto_tui.supervise.inbox import Refusal


@dataclass(frozen=True)
class PauseRequest:
    """A kind this module makes up, as a breakpoint request will be: an id and a kind, nothing more."""

    request_id: str
    node_id: str
    kind: ClassVar[str] = "breakpoint"


@dataclass(frozen=True)
class PauseAnswer:
    action: str

    @property
    def approves(self) -> bool:
        return self.action != "abort"


def _tool_request(request_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        call=ToolCall(id="c", name="write", arguments={}),
        tool="write",
        server=None,
        description=None,
        effects=(),
        input_schema=None,
        tool_digest="t",
        arguments_digest="a",
        rule=None,
        run_id=None,
        node_id=None,
        requested_at=0.0,
    )


async def test_two_kinds_share_one_table_and_its_rules() -> None:
    inbox = Inbox()
    seen: list[str] = []
    ended: list[str] = []
    inbox.on_request(lambda request: seen.append(request.kind))
    inbox.on_end(lambda request: ended.append(request.request_id))
    pause = asyncio.ensure_future(inbox.ask(PauseRequest("p1", "plan")))
    tool = asyncio.ensure_future(inbox.ask(_tool_request("t1")))
    late = asyncio.ensure_future(inbox.ask(PauseRequest("p2", "act"), timeout=0.01))
    await asyncio.sleep(0)
    assert seen == ["breakpoint", "tool_call", "breakpoint"]
    assert [request.request_id for request in inbox.all_pending()] == ["p1", "t1", "p2"]
    assert [request.request_id for request in inbox.pending()] == ["t1"]
    assert [request.node_id for request in inbox.pending_of(PauseRequest)] == ["plan", "act"]
    assert inbox.resolve("p1", PauseAnswer("continue")) and inbox.resolve("p1", PauseAnswer("abort"))
    assert inbox.resolve("t1", ApprovalDecision(kind="approve"))
    assert await pause == PauseAnswer("abort")  # the refusal that came with the approval wins
    assert await tool == ApprovalDecision(kind="approve")
    assert await late == "timeout"
    assert inbox.all_pending() == [] and not inbox.resolve("p2", PauseAnswer("continue"))
    assert sorted(ended) == ["p1", "p2", "t1"]  # every request says when it leaves, however it ended


async def test_withdrawing_a_request_of_any_kind_ends_it_unanswered() -> None:
    inbox = Inbox()
    waiting = asyncio.ensure_future(inbox.ask(PauseRequest("p1", "plan")))
    await asyncio.sleep(0)
    assert inbox.withdraw("p1")
    assert await waiting == "withdrawn" and inbox.all_pending() == []


async def test_v08_an_answerer_is_given_every_kind_and_its_answer_resolves_it() -> None:
    given: list[str] = []

    class Answering:
        async def decide(self, request: Any) -> Any:
            given.append(request.request_id)
            if isinstance(request, ApprovalRequest):
                return ApprovalDecision(kind="approve")
            return PauseAnswer("continue")

    inbox = Inbox(Answering())
    assert (await inbox.ask(_tool_request("t1"))).kind == "approve"
    assert (await inbox.ask(PauseRequest("p1", "plan"))).action == "continue"
    assert given == ["t1", "p1"]


async def test_v08_an_answerer_that_names_its_kinds_leaves_the_others_to_a_person() -> None:
    given: list[str] = []

    class Approving:
        request_kinds = frozenset({"tool_call"})

        async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
            given.append(request.request_id)
            return ApprovalDecision(kind="approve")

    inbox = Inbox(Approving())
    assert (await inbox.ask(_tool_request("t1"))).kind == "approve"
    pause = asyncio.ensure_future(inbox.ask(PauseRequest("p1", "plan")))
    await asyncio.sleep(0.01)
    assert given == ["t1"]  # the pause waits for its own answer
    assert inbox.resolve("p1", PauseAnswer("continue"))
    assert (await pause).action == "continue"


async def test_v08_an_answerer_that_fails_or_answers_nonsense_refuses() -> None:
    class Broken:
        async def decide(self, request: Any) -> Any:
            if request.request_id == "p1":
                raise RuntimeError("boom")
            return "yes"

    inbox = Inbox(Broken())
    assert (await inbox.ask(_tool_request("t1"))).kind == "deny"
    failed = await inbox.ask(PauseRequest("p1", "plan"))
    assert isinstance(failed, Refusal) and not failed.approves
    nonsense = await inbox.ask(PauseRequest("p2", "plan"))
    assert isinstance(nonsense, Refusal) and "invalid" in nonsense.reason
