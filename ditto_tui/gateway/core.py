"""The gateway's core: each client connection is a run of the ``mcp-gateway`` graph, its calls gated.

A connection's run has one node, ``session`` (``GATEWAY.SESSION``), that lasts as long as the connection.
Every ``tools/call`` of the client is a node nested in it (``session/call-N``), an ``INTERACTION.ACT.MCP``
invocation: the same gate as a graph's MCP call decides it (the sandbox's ``mcp`` grants, the rules,
grants and modes, the inbox), the journal records it, the timeline and the transcript show it, and the
run host lists what waits. A ``tools/list`` is a discovery in the run, so the drift check runs on it.

Nothing here imports the MCP SDK: :mod:`ditto_tui.gateway.server` turns the protocol into these calls.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ditto_tui.contracts import ExternalResult, McpCapability
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import McpRegistry
from ditto_tui.interaction.mcp.blocks import CallTap
from ditto_tui.program import Program
from ditto_tui.runs import RunHost
from ditto_tui.runtime import Graph, define_worker, graph
from ditto_tui.runtime.worker import WorkerContext
from ditto_tui.supervise import Inbox
from ditto_tui.supervise.clients import GATEWAY_GRAPH
from ditto_tui.supervise.mcp_requests import (
    ElicitAction,
    ElicitationAnswer,
    ElicitationRequest,
    SamplingAnswer,
    SamplingRequest,
)
from ditto_tui.supervise.requests import ApprovalDecision, ApprovalRequest

logger = logging.getLogger(__name__)

SESSION_NODE = "GATEWAY.SESSION"
ACT_MCP = "INTERACTION.ACT.MCP"
SEPARATOR = "__"
"""Between a server's name and its tool's (or prompt's) name when the gateway fronts several servers."""


class ClientChannel(Protocol):
    """What the gateway may ask of one client (on a call's own request stream, or the connection's)."""

    async def elicit_form(
        self, message: str, schema: Mapping[str, Any]
    ) -> tuple[str, Mapping[str, Any] | None]:
        """``elicitation/create`` in form mode: (accept, decline or cancel; the content accepted)."""
        ...

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> str:
        """``elicitation/create`` in url mode: accept, decline or cancel."""
        ...

    async def sample(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """``sampling/createMessage`` with a server's request: the client's result, in wire form."""
        ...

    async def log(self, level: str, logger: str | None, data: Any) -> None:
        """``notifications/message`` to the client."""
        ...


@dataclass(frozen=True)
class ClientInfo:
    """Who connected: the client's name and version, and what it lets the gateway ask of it."""

    name: str = "unknown client"
    version: str = ""
    elicitation: bool = False
    sampling: bool = False
    roots: bool = False

    def label(self) -> str:
        return f"{self.name} {self.version}".strip()


@dataclass
class Connection:
    """One client connection: its run on the host, the session node's context once it runs, its calls."""

    connection_id: str
    client: ClientInfo
    channel: ClientChannel | None = None
    """The connection's own channel to the client (for requests outside any call)."""
    run_id: str | None = None
    context: WorkerContext | None = None
    bound: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    calls: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    called: int = 0
    asking: dict[str, tuple[str, ClientChannel]] = field(default_factory=dict)
    """Per running call: its server, and the channel to the client on the call's own request stream."""

    async def invoke(self, input: Mapping[str, Any], node_id: str) -> Any:
        """An ACT.MCP request as a node of this connection's run."""
        await self.bound.wait()
        if self.context is None:
            raise ValidationError("the gateway session's run has ended")
        return await self.context.invoke(ACT_MCP, dict(input), node_id=node_id)


@dataclass(frozen=True)
class CallOutcome:
    """A call's end: the run's result, and the upstream's own result when the call ran (passed on as it
    is)."""

    result: ExternalResult
    raw: Any = None


class Gateway:
    """The fronted servers behind one name space, and the runs of the client connections.

    ``servers`` limits the fronted servers (default: every connected one). Tool and prompt names are
    ``SERVER__NAME`` when several servers are fronted, and unchanged for one.
    """

    def __init__(self, servers: Sequence[str] | None = None) -> None:
        self.only = tuple(servers) if servers else None
        self.connections: dict[str, Connection] = {}
        self.mcp: McpRegistry | None = None
        self.host: RunHost | None = None
        self._ids = itertools.count(1)
        self._starting = asyncio.Lock()
        self._listing: dict[str, asyncio.Future[Any]] = {}
        """A server's discovery under way, shared by the calls and listings that wait for it."""
        self.record_input: Callable[[Any], None] | None = None
        """Puts the next run's input on its record (the journal's ``next_input``)."""
        self.program = Program(
            name=GATEWAY_GRAPH,
            description="An MCP client's connection through ditto-tui mcp serve: every tool call gated.",
            plan=self.plan(),
            workers=(define_worker(type="GATEWAY", nodes={SESSION_NODE: self._session}),),
        )

    @staticmethod
    def plan() -> Graph:
        return graph(GATEWAY_GRAPH).node("session", SESSION_NODE, [], lambda given, _deps: given)

    def attach(self, mcp: McpRegistry, host: RunHost) -> None:
        """Front ``mcp``'s servers; start each connection's run on ``host``."""
        self.mcp, self.host = mcp, host
        if self.only is not None:
            unknown = sorted(set(self.only) - set(mcp.servers()))
            if unknown:
                raise ValidationError(f"--servers names no configured MCP server: {', '.join(unknown)}")

    def servers(self) -> list[str]:
        """The fronted servers, in configuration order."""
        names = self.mcp.servers() if self.mcp is not None else []
        return [name for name in names if self.only is None or name in self.only]

    # -- connections --------------------------------------------------------------------------------------

    async def connect(self, client: ClientInfo, channel: ClientChannel | None = None) -> Connection:
        """Start the connection's run (``mcp-gateway``, with the client's name and version as its input)."""
        if self.host is None:
            raise ValidationError("the gateway is not attached to its servers yet")
        connection = Connection(f"gw-{next(self._ids)}", client, channel)
        self.connections[connection.connection_id] = connection
        given = {
            "connection": connection.connection_id,
            "client": {"name": client.name, "version": client.version},
        }
        async with self._starting:  # the recorded input is the next run's: one start at a time
            if self.record_input is not None:
                self.record_input(given)
            connection.run_id = await self.host.start(self.program.plan, given)
        return connection

    def disconnect(self, connection: Connection) -> None:
        """The client went away: its run's session node ends, and with it the run."""
        connection.closed.set()
        self.connections.pop(connection.connection_id, None)

    def by_run(self, run_id: str | None) -> Connection | None:
        return next((c for c in self.connections.values() if c.run_id == run_id), None)

    def channel_for(self, server: str, capability: str) -> tuple[Connection, ClientChannel] | None:
        """Whom to ask for what ``server`` asks (``sampling`` or ``elicitation``): the client whose call on
        it runs now (on that call's stream), else the latest connected client that declares it."""
        connections = [c for c in reversed(self.connections.values()) if getattr(c.client, capability)]
        for connection in connections:
            for called, channel in reversed(connection.asking.values()):
                if called == server:
                    return connection, channel
        for connection in connections:
            if connection.channel is not None:
                return connection, connection.channel
        return None

    def calling(self, server: str) -> list[ClientChannel]:
        """The channels of the calls running on ``server`` now (its log lines go to their clients)."""
        return [
            channel
            for connection in self.connections.values()
            for called, channel in connection.asking.values()
            if called == server
        ]

    async def _session(self, given: Any, context: WorkerContext) -> dict[str, Any]:
        """The ``GATEWAY.SESSION`` node: bound to its connection until the client leaves."""
        connection_id = given.get("connection") if isinstance(given, Mapping) else None
        connection = self.connections.get(connection_id) if isinstance(connection_id, str) else None
        if connection is None:  # a run started elsewhere (or again, after its process ended): nothing to do
            raise ValidationError("this gateway session's client is not connected to this process")
        connection.context = context
        connection.bound.set()
        try:
            await connection.closed.wait()
        finally:
            connection.context = None
        return {"client": given.get("client"), "calls": connection.called}

    # -- tools --------------------------------------------------------------------------------------------

    def exposed(self, server: str, name: str) -> str:
        """The name the client sees for ``server``'s tool or prompt ``name``."""
        return name if len(self.servers()) == 1 else f"{server}{SEPARATOR}{name}"

    def route(self, exposed: str) -> tuple[str, str] | None:
        """The (server, name) behind an exposed name (None: no fronted server offers it)."""
        servers = self.servers()
        if len(servers) == 1:
            return servers[0], exposed
        server, separator, name = exposed.partition(SEPARATOR)
        if not separator or server not in servers or not name:
            return None
        return server, name

    async def tools(self, connection: Connection) -> list[tuple[str, McpCapability]]:
        """Every fronted server's tools, with their exposed names: as each server last listed them while
        that listing holds, else a discovery in the connection's run (all servers at once, each checked
        for drift); a server whose listing fails is left out (its status says why)."""

        async def listed(server: str) -> list[McpCapability]:
            try:
                known = await self._known(connection, server)
            except Exception as exc:  # one server down does not hide the others
                logger.warning("listing %s through the gateway failed: %s", server, exc)
                return []
            return [capability for capability in known if capability.unsupported is None]

        servers = self.servers()
        listings = await asyncio.gather(*(listed(server) for server in servers))
        return [
            (self.exposed(server, capability.name), capability)
            for server, capabilities in zip(servers, listings, strict=True)
            for capability in capabilities
        ]

    async def _known(self, connection: Connection, server: str) -> list[McpCapability]:
        """``server``'s tools as it last listed them while that listing holds (kept fresh by its
        list_changed), else a discovery in the connection's run, checked for drift; calls and listings
        that need one while it is under way wait for that same one."""
        known = self.mcp.listed(server) if self.mcp is not None else None
        if known is not None:
            return known
        listing = self._listing.get(server)
        if listing is None:
            listing = asyncio.ensure_future(
                connection.invoke(
                    {"operation": "discover", "server": server}, f"list-{next(connection.calls)}"
                )
            )
            self._listing[server] = listing
            listing.add_done_callback(lambda _done: self._listing.pop(server, None))
        found = await asyncio.shield(listing)
        return list(found.capabilities)

    async def call(
        self,
        connection: Connection,
        exposed: str,
        arguments: Mapping[str, Any],
        progress: Callable[[float, float | None, str | None], object] | None = None,
        channel: ClientChannel | None = None,
    ) -> CallOutcome:
        """Call a tool through the gate, as a node of the connection's run (``progress`` hears the
        server's progress; ``channel`` reaches the client on this call's own stream)."""
        routed = self.route(exposed)
        if routed is None or self.mcp is None:
            raise ValidationError(f"no fronted server offers a tool named {exposed!r}")
        server, name = routed
        # the gate reads the tool's definition (its annotations, the hints rules match) from the server's
        # listing: a client that calls before it lists gets the same decision as one that listed first
        # (without a listing, the rules that need hints cannot match, and it asks)
        try:
            await self._known(connection, server)
        except Exception as exc:
            logger.warning("listing %s before a call failed: %s", server, exc)
        call_id = f"call-{next(connection.calls)}"
        connection.called += 1
        tap = CallTap(progress)
        untap = self.mcp.tap(server, call_id, tap)
        if channel is not None:
            connection.asking[call_id] = (server, channel)
        try:
            invocation = await connection.invoke(
                {
                    "operation": "invoke",
                    "server": server,
                    "call": {"id": call_id, "name": name, "arguments": dict(arguments)},
                },
                call_id,
            )
        finally:
            untap()
            connection.asking.pop(call_id, None)
        return CallOutcome(invocation.result, tap.raw)


# -- asking the client's person --------------------------------------------------------------------------

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "deny"],
            "description": "approve: the call runs once; deny: it does not run",
        },
        "reason": {"type": "string", "title": "Reason (optional)"},
    },
    "required": ["decision"],
}


def approval_message(request: ApprovalRequest) -> str:
    """What the client's form says: the tool, why it asks, and the exact arguments (as JSON text)."""
    arguments = json.dumps(dict(request.call.arguments), indent=2, ensure_ascii=True, sort_keys=True)
    lines = ["ditto-tui asks before this tool call runs.", "", f"Tool: {request.tool}"]
    if request.effects:
        lines.append(f"Effects: {', '.join(request.effects)}")
    hints = sorted(name for name, value in (request.annotations or {}).items() if value is True)
    if hints:
        lines.append(f"The server says (unchecked): {', '.join(hints)}")
    lines += [f"Why it asks: {request.rule or 'the approval policy asks for this tool'}", ""]
    return "\n".join([*lines, "Arguments, exactly as they will run:", arguments])


def refusal_text(request: ApprovalRequest, client: ClientInfo) -> str:
    """Why a call was refused when nobody can be asked, and how to let it run."""
    return (
        f"ditto-tui did not run {request.tool}: the call needs a person's approval and "
        f"{client.label()} cannot ask for it (it does not support elicitation). To approve such "
        "calls, run the gateway on a run host (runs: {host: local} in ditto.yaml) and answer them "
        "with `ditto-tui inbox`, the app or a browser; or allow the tool with a rule or a grant "
        "(`ditto-tui grants`)."
    )


class ClientApprover:
    """Answers what the gateway's runs ask when no person watches this process (the embedded host): a
    tool call through the client's form when it has elicitation (the person there decides:
    ``decided_by: human``, ``via: client``), else a refusal that says how to approve; a server's sampling
    and elicitation go to the client that declares them (the one whose call on that server runs now),
    after the same checks and bounds as any client's, else they are refused."""

    request_kinds = frozenset({"tool_call", "sampling", "elicitation"})
    name = "ditto-tui mcp serve, with nobody to ask"

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def decide(self, request: Any) -> Any:
        if isinstance(request, SamplingRequest):
            return await self._sample(request)
        if isinstance(request, ElicitationRequest):
            return await self._elicit(request)
        return await self._approve(request)

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        connection = self.gateway.by_run(request.run_id)
        if connection is None:
            return ApprovalDecision(kind="deny", reason="no client of the gateway asked for this call")
        asked = connection.asking.get(request.call.id)
        channel = asked[1] if asked is not None else connection.channel
        if channel is None or not connection.client.elicitation:
            return ApprovalDecision(kind="deny", reason=refusal_text(request, connection.client))
        try:
            action, answer = await channel.elicit_form(approval_message(request), APPROVAL_SCHEMA)
        except Exception as exc:
            return ApprovalDecision(
                kind="deny", reason=f"the client's form failed, so the call did not run: {exc}"[:500]
            )
        label = connection.client.label()
        if action != "accept" or answer is None:
            return ApprovalDecision(kind="deny", reason=f"declined in {label}", via="client")
        reason = answer.get("reason")
        reason = reason.strip()[:500] if isinstance(reason, str) and reason.strip() else None
        if answer.get("decision") == "approve":
            return ApprovalDecision(kind="approve", reason=reason, via="client")
        return ApprovalDecision(kind="deny", reason=reason or f"denied in {label}", via="client")

    async def _sample(self, request: SamplingRequest) -> SamplingAnswer:
        found = self.gateway.channel_for(request.server, "sampling")
        if found is None:
            return SamplingAnswer(approves=False, reason="no client of the gateway takes sampling requests")
        connection, channel = found
        try:
            result = await channel.sample(request.params)
        except Exception as exc:
            return SamplingAnswer(
                approves=False, reason=f"{connection.client.label()} did not sample: {exc}"[:500]
            )
        content = result.get("content")
        blocks = content if isinstance(content, list) else [content]
        text = "".join(
            b.get("text", "") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
        )
        return SamplingAnswer(approves=True, text=text, reason=f"answered by {connection.client.label()}")

    async def _elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        found = self.gateway.channel_for(request.server, "elicitation")
        if found is None:
            return ElicitationAnswer(action="decline")
        _connection, channel = found
        try:
            if request.mode == "url" and request.url is not None:
                action = await channel.elicit_url(request.message, request.url, request.elicitation_id or "")
                return ElicitationAnswer(action=_action(action))
            action, content = await channel.elicit_form(request.message, request.requested_schema or {})
        except Exception:
            return ElicitationAnswer(action="cancel")
        return ElicitationAnswer(action=_action(action), content=content if action == "accept" else None)


def _action(action: str) -> ElicitAction:
    return action if action in ("accept", "decline", "cancel") else "cancel"  # type: ignore[return-value]


class GatewayInbox(Inbox):
    """The gateway's inbox, named on the record by who answers it: the person at the MCP client (its
    form), or, on a durable host, a person through the run host's inbox."""

    def __init__(self, answerer: ClientApprover | None) -> None:
        super().__init__(answerer)
        self.name = (
            "a person, through the run host's inbox (ditto-tui mcp serve)"
            if answerer is None
            else "the person at the MCP client, in its own form (ditto-tui mcp serve)"
        )
