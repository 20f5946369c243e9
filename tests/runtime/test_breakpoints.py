"""Breakpoints through the real runtime: continue, edit, skip, abort, loops, siblings, step mode, journal."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest

from ditto_tui.config import load_runtime_config_file
from ditto_tui.errors import GraphExecutionError, RunAbortedError, ValidationError
from ditto_tui.headless import run_headless
from ditto_tui.infer import InferMessage
from ditto_tui.infer.worker import SampleOutput
from ditto_tui.program import load_program
from ditto_tui.runtime import (
    BreakpointDecision,
    BreakpointRequest,
    BreakpointResolved,
    Breakpoints,
    ExecutionEvent,
    Graph,
    NodeStarted,
    WorkerContext,
    create_ditto,
    define_worker,
    graph,
    loop,
    parse_json_edit,
)
from ditto_tui.session import open_runtime
from ditto_tui.supervise import ApprovalDecision, ApprovalRequest, Inbox, QueueApprover
from ditto_tui.supervise.journal import find_journal, read_journal

ROOT = Path(__file__).resolve().parents[2]
Answer = Callable[[BreakpointRequest], BreakpointDecision]

CONTINUE = BreakpointDecision(action="continue")

CONFIG = """\
sandbox:
  tools: [read_text, write_text]
  read: true
  write: true
"""


class Person:
    """A breakpoint approver that answers each request with ``answer`` and keeps what it was asked."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[BreakpointRequest] = []

    async def decide(self, request: BreakpointRequest) -> BreakpointDecision:
        self.asked.append(request)
        return self.answer(request)


def recording(calls: list[tuple[str, Any]]) -> Any:
    """A worker whose T.STEP node records its input and returns it, and T.ADD adds one."""

    async def step(input: Any, context: WorkerContext) -> Any:
        calls.append((context.node_id or "", input))
        return input

    async def add(input: Any, context: WorkerContext) -> Any:
        calls.append((context.node_id or "", input))
        return {"n": input["n"] + 1}

    return define_worker(type="T", nodes={"T.STEP": step, "T.ADD": add})


def chain() -> Any:
    """first -> second -> third, each passing on what it got."""
    return (
        graph("chain")
        .node("first", "T.ADD", [], lambda input, _d: input)
        .node("second", "T.ADD", ["first"], lambda _i, deps: deps["first"])
        .node("third", "T.STEP", ["second"], lambda _i, deps: deps["second"])
    )


async def run_chain(answer: Answer, breakpoints: list[str]) -> tuple[Any, list[Any], Person, list[Any]]:
    calls: list[tuple[str, Any]] = []
    person = Person(answer)
    events: list[ExecutionEvent] = []
    async with create_ditto(workers=[recording(calls)], approver=person) as runtime:
        runtime.subscribe(events.append)
        outputs = await runtime.run(chain(), {"n": 0}, breakpoints=breakpoints)
    return outputs, calls, person, events


async def test_continue_runs_the_node_on_its_input() -> None:
    outputs, calls, person, events = await run_chain(
        lambda _r: BreakpointDecision(action="continue"), ["second"]
    )
    assert outputs["third"] == {"n": 2}
    assert [request.node_id for request in person.asked] == ["second"]
    assert person.asked[0].input == {"n": 1} and person.asked[0].node_type == "T.ADD"
    kinds = [event.kind for event in events if event.kind.startswith(("breakpoint", "node_started"))]
    assert kinds.index("breakpoint_resolved") < kinds.index(
        "node_started", kinds.index("breakpoint_requested")
    )


async def test_edit_replaces_the_input() -> None:
    outputs, calls, _person, _events = await run_chain(
        lambda _r: BreakpointDecision(action="edit", input={"n": 10}), ["second"]
    )
    assert ("second", {"n": 10}) in calls
    assert outputs["third"] == {"n": 11}


def test_a_bad_edit_is_refused_before_it_is_accepted() -> None:
    with pytest.raises(ValidationError, match="JSON"):
        BreakpointDecision(action="edit", input={"n": {1, 2}})
    with pytest.raises(ValidationError, match="JSON"):
        BreakpointDecision(action="edit", input={"n": float("nan")})
    with pytest.raises(ValidationError, match=r"not valid JSON: .*line 1, column"):
        parse_json_edit('{"n": ')
    with pytest.raises(ValidationError, match="only an edit"):
        BreakpointDecision(action="continue", input={"n": 1})
    with pytest.raises(ValidationError, match="must be continue, edit, skip or abort"):
        BreakpointDecision(action="pause")  # type: ignore[arg-type]
    assert parse_json_edit('{"n": 3}') == {"n": 3}


async def test_skip_gives_the_output_without_running_the_handler() -> None:
    outputs, calls, _person, _events = await run_chain(
        lambda _r: BreakpointDecision(action="skip", output={"n": 41}), ["second"]
    )
    assert [node for node, _ in calls] == ["first", "third"]
    assert outputs["second"] == {"n": 41} and outputs["third"] == {"n": 41}


async def test_abort_ends_the_run_and_nothing_after_it_runs() -> None:
    with pytest.raises(RunAbortedError, match="before node 'second'") as raised:
        await run_chain(lambda _r: BreakpointDecision(action="abort", reason="looks wrong"), ["second"])
    assert raised.value.node_id == "second"


async def test_abort_reports_the_run_and_the_nodes_it_stopped() -> None:
    calls: list[tuple[str, Any]] = []
    events: list[ExecutionEvent] = []
    person = Person(lambda _r: BreakpointDecision(action="abort"))
    async with create_ditto(workers=[recording(calls)], approver=person) as runtime:
        runtime.subscribe(events.append)
        with pytest.raises(RunAbortedError):
            await runtime.run(chain(), {"n": 0}, breakpoints=["second"])
    assert [node for node, _ in calls] == ["first"]
    finished = events[-1]
    assert finished.kind == "run_finished" and dict(finished)["failed_node"] == "second"
    skipped = [dict(event)["node_id"] for event in events if event.kind == "node_skipped"]
    assert skipped == ["third"]


async def test_an_approver_that_fails_aborts_the_run() -> None:
    def broken(_request: BreakpointRequest) -> BreakpointDecision:
        raise RuntimeError("screen gone")

    with pytest.raises(RunAbortedError, match="approver failed"):
        await run_chain(broken, ["first"])


async def test_a_sibling_branch_runs_while_one_node_waits() -> None:
    calls: list[tuple[str, Any]] = []
    sibling_done = asyncio.Event()

    class Waiting:
        async def decide(self, request: BreakpointRequest) -> BreakpointDecision:
            await asyncio.wait_for(sibling_done.wait(), timeout=5)
            return BreakpointDecision(action="continue")

    plan = (
        graph("branches")
        .node("paused", "T.STEP", [], lambda input, _d: input)
        .node("free", "T.STEP", [], lambda input, _d: input)
        .node("after", "T.STEP", ["free"], lambda input, _d: input)
    )

    def seen(event: ExecutionEvent) -> None:
        if event.kind == "node_finished" and dict(event)["node_id"] == "after":
            sibling_done.set()

    async with create_ditto(workers=[recording(calls)], approver=Waiting()) as runtime:
        runtime.subscribe(seen)
        await runtime.run(plan, {"x": 1}, breakpoints=["paused"])
    assert [node for node, _ in calls] == ["free", "after", "paused"]


async def test_breakpoints_without_an_approver_refuse_to_start() -> None:
    calls: list[tuple[str, Any]] = []
    async with create_ditto(workers=[recording(calls)]) as runtime:
        with pytest.raises(ValidationError, match="breakpoints need someone to ask"):
            await runtime.run(chain(), {"n": 0}, breakpoints=["second"])
        with pytest.raises(ValidationError):
            await runtime.loop(
                loop(
                    graph=chain(), max_iterations=1, bind=lambda s: s, update=lambda s: s, done=lambda s: True
                ),
                {"n": 0},
                breakpoints=Breakpoints(),
            )
        assert await runtime.run(chain(), {"n": 0}, breakpoints=[]) is not None
    assert [node for node, _ in calls] == ["first", "second", "third"]


async def test_a_live_set_turns_step_mode_on_and_off_during_a_run() -> None:
    calls: list[tuple[str, Any]] = []
    live = Breakpoints()
    live.step = True

    def answer(request: BreakpointRequest) -> BreakpointDecision:
        live.step = False  # after the first pause, step mode is switched off
        return BreakpointDecision(action="continue")

    person = Person(answer)
    async with create_ditto(workers=[recording(calls)], approver=person) as runtime:
        await runtime.run(chain(), {"n": 0}, breakpoints=live)
        assert [request.node_id for request in person.asked] == ["first"]
        runtime.breakpoints.toggle("third")  # the session's set, consulted by every run
        await runtime.run(chain(), {"n": 0})
    assert [request.node_id for request in person.asked] == ["first", "third"]
    assert "third" in runtime.breakpoints and not live.step


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    (root / "ditto.yaml").write_text(CONFIG, encoding="utf-8")
    return root


def answering(inbox: Inbox, answer: Callable[[Any], Any]) -> list[Any]:
    """Resolve every inbox request with ``answer(request)`` soon after it arrives."""
    running = asyncio.get_running_loop()
    seen: list[Any] = []

    def arrived(request: Any) -> None:
        seen.append(request)
        running.call_soon(inbox.resolve, request.request_id, answer(request))

    inbox.on_request(arrived)
    return seen


def journal_events(root: Path, run_id: str) -> list[ExecutionEvent]:
    return list(read_journal(find_journal(run_id, root)).events)


async def run_program(
    root: Path, graph_file: str, answer: Callable[[Any], Any], breakpoints: list[str]
) -> tuple[list[Any], list[ExecutionEvent]]:
    config = load_runtime_config_file(root / "ditto.yaml", {})
    program = load_program(ROOT / graph_file, config, root)
    inbox = QueueApprover()
    events: list[ExecutionEvent] = []
    async with open_runtime(program, config, root, inbox) as session:
        seen = answering(session.inbox, answer)
        session.runtime.subscribe(events.append)
        if isinstance(program.plan, Graph):
            await session.runtime.run(program.plan, program.initial, breakpoints=breakpoints)
        else:
            await session.runtime.loop(program.plan, program.initial, breakpoints=breakpoints)
    return seen, journal_events(root, events[0].run_id)


def approve_and(action: Callable[[BreakpointRequest], BreakpointDecision]) -> Callable[[Any], Any]:
    def answer(request: Any) -> Any:
        if isinstance(request, ApprovalRequest):
            return ApprovalDecision(kind="approve")
        return action(request)

    return answer


async def test_step_through_write_note_pauses_before_every_node(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen, journal = await run_program(root, "graphs/write_note.py", approve_and(lambda _r: CONTINUE), ["*"])
    paused = sorted(request.node_id for request in seen if request.kind == "breakpoint")
    assert paused == ["observe", "output", "read", "write"]
    assert (root / ".ditto/notes/hello.md").exists()
    resolved = [event for event in journal if isinstance(event, BreakpointResolved)]
    assert sorted(event.node_id for event in resolved) == paused
    assert {event.action for event in resolved} == {"continue"}


async def test_every_answer_is_on_the_journal_with_its_input_or_output(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    read_call = {"call": {"id": "read-1", "name": "read_text", "arguments": {"path": "README.md"}}}

    def action(request: BreakpointRequest) -> BreakpointDecision:
        if request.node_id == "read":
            return BreakpointDecision(action="edit", input=read_call)
        return BreakpointDecision(action="skip", output={"deliveryId": "x", "status": "accepted"})

    _seen, journal = await run_program(root, "graphs/write_note.py", approve_and(action), ["read", "output"])
    resolved = {event.node_id: event for event in journal if isinstance(event, BreakpointResolved)}
    assert resolved["read"].action == "edit" and resolved["read"].input == read_call
    assert resolved["output"].action == "skip" and resolved["output"].output["status"] == "accepted"
    started = [event.node_id for event in journal if isinstance(event, NodeStarted)]
    assert "output" in started  # shown as having run, with the person's output


async def test_a_loop_breakpoint_pauses_in_each_iteration(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen, journal = await run_program(
        root,
        "graphs/read_and_deliver.py",
        approve_and(lambda _r: CONTINUE),
        ["output"],
    )
    assert [(request.node_id, request.iteration) for request in seen] == [("output", 1), ("output", 2)]
    assert [event.iteration for event in journal if isinstance(event, BreakpointResolved)] == [1, 2]


async def test_not_again_in_this_run_stops_the_loop_pausing(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen, journal = await run_program(
        root,
        "graphs/read_and_deliver.py",
        approve_and(lambda _r: BreakpointDecision(action="continue", again=False)),
        ["read", "output"],
    )
    assert [(request.node_id, request.iteration) for request in seen] == [("read", 1), ("output", 1)]
    assert all(not event.again for event in journal if isinstance(event, BreakpointResolved))


async def test_abort_in_a_loop_stops_the_loop(tmp_path: Path) -> None:
    root = workspace(tmp_path)

    def action(request: BreakpointRequest) -> BreakpointDecision:
        return BreakpointDecision(action="abort" if request.iteration == 2 else "continue")

    with pytest.raises(RunAbortedError):
        await run_program(root, "graphs/read_and_deliver.py", approve_and(action), ["read"])


async def test_headless_break_without_a_person_fails_at_start(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    config = load_runtime_config_file(root / "ditto.yaml", {})
    program = load_program(ROOT / "graphs/write_note.py", config, root)
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(program, config, root, out=out, err=err, breakpoints=["write"])
    assert code == 1
    assert "breakpoints need someone to ask" in err.getvalue()
    assert out.getvalue() == ""  # nothing ran


def test_the_break_option_is_repeatable_and_for_the_app_only(capsys: pytest.CaptureFixture[str]) -> None:
    from ditto_tui.__main__ import _parse

    args = _parse(["--break", "write", "run", "graphs/write_note.py", "--break", "read"])
    assert args.breakpoints == ["write", "read"]
    assert _parse(["run", "graphs/write_note.py"]).breakpoints == ()
    with pytest.raises(SystemExit) as exited:
        _parse(["--headless", "--break", "write", "run", "graphs/write_note.py"])
    assert exited.value.code == 2
    assert "--break needs a person to answer each pause: run without --headless" in capsys.readouterr().err


# -- typed inputs and declared outputs ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Budget:
    """A dataclass inside a node's input, as a graph's own state may put there."""

    turns: int
    note: str = "none"


def typed_worker(seen: list[Any]) -> Any:
    """T.CHAT records the input it gets and answers with a sample output; T.READ reads that output."""

    async def chat(input: Any, _context: WorkerContext) -> Any:
        seen.append(input)
        return {"message": InferMessage(role="assistant", content="hi"), "finishReason": "stop"}

    async def read(input: Any, _context: WorkerContext) -> Any:
        return input["message"].content

    return define_worker(type="T", nodes={"T.CHAT": chat, "T.READ": read}, outputs={"T.CHAT": SampleOutput})


def chat_graph() -> Graph:
    return (
        graph("chat")
        .node("chat", "T.CHAT", [], lambda input, _d: input)
        .node("read", "T.READ", ["chat"], lambda _i, deps: deps["chat"])
    )


CHAT_INPUT = {
    "messages": [InferMessage(role="system", content="be brief"), InferMessage(role="user", content="hi")],
    "budget": Budget(turns=2),
}


async def run_chat(answer: Answer, breakpoints: list[str]) -> tuple[Any, list[Any], Person]:
    seen: list[Any] = []
    person = Person(answer)
    async with create_ditto(workers=[typed_worker(seen)], approver=person) as runtime:
        outputs = await runtime.run(chat_graph(), CHAT_INPUT, breakpoints=breakpoints)
    return outputs, seen, person


def test_the_input_is_shown_as_the_journal_writes_it() -> None:
    request = BreakpointRequest(
        request_id="b-1", node_id="chat", node_type="T.CHAT", input=CHAT_INPUT, run_id="run-1"
    )
    assert request.input_json == {
        "messages": [
            {"role": "system", "content": "be brief", "actionRequests": [], "metadata": {}},
            {"role": "user", "content": "hi", "actionRequests": [], "metadata": {}},
        ],
        "budget": {"turns": 2, "note": "none"},
    }
    assert json.loads(json.dumps(request.input_json)) == request.input_json


async def test_an_edited_input_reaches_the_node_in_the_types_it_had() -> None:
    def edit(request: BreakpointRequest) -> BreakpointDecision:
        edited = request.input_json
        edited["messages"].append({"role": "assistant", "content": "ok", "actionRequests": []})
        edited["budget"]["turns"] = 5
        return BreakpointDecision(action="edit", input=edited)

    outputs, [got], _person = await run_chat(edit, ["chat"])
    assert [type(message) for message in got["messages"]] == [InferMessage] * 3
    assert got["messages"][2] == InferMessage(role="assistant", content="ok")
    assert got["budget"] == Budget(turns=5)
    assert outputs["read"] == "hi"


def test_an_edit_that_does_not_fit_the_input_is_refused_saying_where() -> None:
    request = BreakpointRequest(
        request_id="b-1", node_id="chat", node_type="T.CHAT", input=CHAT_INPUT, run_id="run-1"
    )
    with pytest.raises(
        ValidationError, match=r"the edited input\.messages\[1\] is not a valid InferMessage: role"
    ):
        request.edited_input({"messages": [{"role": "user"}, {"role": "wizard"}], "budget": {"turns": 1}})
    with pytest.raises(ValidationError, match=r"the edited input\.budget: a Budget has no field 'turn'"):
        request.edited_input({"messages": [], "budget": {"turn": 1}})
    with pytest.raises(ValidationError, match=r"the edited input\.budget must be an object \(a Budget\)"):
        request.edited_input({"messages": [], "budget": 3})


async def test_a_bad_edit_from_python_fails_the_node_before_it_runs() -> None:
    bad = BreakpointDecision(action="edit", input={"messages": [{"role": "wizard"}], "budget": {"turns": 1}})
    with pytest.raises(
        GraphExecutionError, match=r"node 'chat' \(T.CHAT\) failed: Invalid input: the edited input"
    ):
        await run_chat(lambda _r: bad, ["chat"])


async def test_a_skip_output_must_be_the_output_its_node_type_declares() -> None:
    request = BreakpointRequest(
        request_id="b-1",
        node_id="chat",
        node_type="T.CHAT",
        input=CHAT_INPUT,
        run_id="run-1",
        output_shape=pydantic.TypeAdapter(SampleOutput),
    )
    with pytest.raises(
        ValidationError, match="not one T.CHAT gives, so the nodes after it could not take it"
    ):
        request.given_output(None)
    given = {"message": {"role": "assistant", "content": "given"}, "finishReason": "stop"}
    assert request.given_output(given)["message"] == InferMessage(role="assistant", content="given")

    outputs, seen, person = await run_chat(
        lambda _r: BreakpointDecision(action="skip", output=given), ["chat"]
    )
    assert seen == [] and outputs["read"] == "given"
    assert person.asked[0].output_shape is not None
    with pytest.raises(
        GraphExecutionError, match=r"node 'chat' \(T.CHAT\) failed: Invalid input: the output is not one"
    ):
        await run_chat(lambda _r: BreakpointDecision(action="skip", output=None), ["chat"])


async def test_a_node_failing_on_a_skipped_nodes_output_says_which() -> None:
    with pytest.raises(GraphExecutionError) as raised:
        await run_chain(lambda _r: BreakpointDecision(action="skip", output=None), ["first"])
    assert str(raised.value).startswith(
        "node 'second' (T.ADD) could not take the output given for skipped node 'first': "
    )
    assert raised.value.node_id == "second"


async def test_a_loop_update_failing_on_a_skipped_output_says_which() -> None:
    calls: list[tuple[str, Any]] = []
    body = graph("count").node("add", "T.ADD", [], lambda state, _d: state)
    counting = loop(
        graph=body,
        max_iterations=3,
        bind=lambda s: s,
        update=lambda _s, out: {"n": out["add"]["n"]},
        done=lambda s: s["n"] >= 2,
    )
    person = Person(lambda _r: BreakpointDecision(action="skip", output=[]))
    async with create_ditto(workers=[recording(calls)], approver=person) as runtime:
        with pytest.raises(
            GraphExecutionError, match="loop 'count' could not take the output given for skipped node 'add'"
        ):
            await runtime.loop(counting, {"n": 0}, breakpoints=["add"])


async def test_skip_with_null_at_the_agent_s_sample_is_refused_and_act_never_runs(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    shutil.copy(ROOT / "ditto_tui/agent/ditto.yaml", root / "ditto.yaml")
    seen: list[BreakpointRequest] = []

    def answer(request: Any) -> Any:
        if isinstance(request, ApprovalRequest):
            return ApprovalDecision(kind="approve")
        seen.append(request)
        return BreakpointDecision(action="skip", output=None)

    with pytest.raises(
        GraphExecutionError, match="node 'sample' .* the output is not one INFER.SAMPLE gives"
    ):
        await run_program(root, "ditto_tui/agent/react_agent.py", answer, ["sample"])
    [request] = seen
    with pytest.raises(ValidationError, match="INFER.SAMPLE"):
        request.given_output(None)
    assert isinstance(request.input_json["messages"][0], dict)
    assert request.edited_input(request.input_json)["messages"] == request.input["messages"]


async def test_v08_a_library_approver_answers_breakpoints_and_is_named_on_the_record() -> None:
    _outputs, _calls, _person, events = await run_chain(lambda _r: CONTINUE, ["second"])
    (resolved,) = [event for event in events if isinstance(event, BreakpointResolved)]
    assert (resolved.decided_by, resolved.approver) == ("approver", "Person")


async def test_v08_a_breakpoint_answered_through_the_inbox_is_a_persons_or_its_answerers() -> None:
    from ditto_tui.supervise.breakpoints import InboxBreakpoints

    class Bot:
        name = "ci-bot"

        async def decide(self, request: Any) -> Any:
            return CONTINUE

    for answerer, expected in ((None, ("human", None)), (Bot(), ("approver", "ci-bot"))):
        inbox = Inbox(answerer)
        calls: list[tuple[str, Any]] = []
        events: list[ExecutionEvent] = []
        async with create_ditto(workers=[recording(calls)], approver=InboxBreakpoints(inbox)) as runtime:
            runtime.subscribe(events.append)
            running = asyncio.ensure_future(runtime.run(chain(), {"n": 0}, breakpoints=["second"]))
            while answerer is None and not inbox.all_pending():
                await asyncio.sleep(0.002)
            if answerer is None:
                (request,) = inbox.all_pending()
                inbox.resolve(request.request_id, CONTINUE)
            await running
        (resolved,) = [event for event in events if isinstance(event, BreakpointResolved)]
        assert (resolved.decided_by, resolved.approver) == expected
