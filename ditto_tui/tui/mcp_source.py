"""What the MCP browser reads and calls: configured servers and their state, tools, changes, the runtime."""

from __future__ import annotations

import dataclasses
import itertools
import os
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ditto_tui.config import McpServerConfig, RuntimeConfig
from ditto_tui.contracts import McpCapability, Observation
from ditto_tui.interaction import (
    ACT_MCP,
    McpDiscovery,
    McpInvocation,
    McpRegistry,
    observe_external_result,
)
from ditto_tui.interaction.mcp import McpServerInfo
from ditto_tui.interaction.mcp.drift import McpToolChange, McpToolsChanged
from ditto_tui.interaction.mcp.status import McpServerStatus
from ditto_tui.program import Program
from ditto_tui.runtime import GraphExecutionError, Runtime, graph
from ditto_tui.session import open_runtime
from ditto_tui.supervise import ApprovalPolicy, Approver, Verdict

BROWSE_ONLY = Program(
    name="browse",
    description="No graph: the session only serves the MCP and Tools screens.",
    plan=graph("browse"),
)
"""The program of a session that runs no graph (``ditto-tui mcp``): it only serves the browsers."""

BROWSER_RUN = "mcp-browser"
"""The name of the one-node run each call from the MCP browser is (``ditto-tui runs`` lists them)."""

__all__ = ["LOG_TAIL_BYTES", "McpSource", "ServerState", "ServerView", "open_mcp_source", "read_log_tail"]

ServerState = Literal[
    "connecting", "connected", "failed", "disconnected", "denied", "closed", "disabled", "not started"
]
"""A server's state as the browser shows it: the connection's own, or what the configuration says."""

LOG_TAIL_BYTES = 4096
"""How much of the end of a server's log the browser reads to show why it failed."""

_CALL_PREFIX = "mcp-browser"


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerView:
    """One configured or connected server: how it is reached, its state, why it failed, its figures."""

    name: str
    state: ServerState
    transport: str
    permitted: bool
    error: str | None = None
    log_path: str | None = None
    pages: int | None = None
    tools: int | None = None
    server_info: str | None = None
    protocol_version: str | None = None

    @property
    def callable(self) -> bool:
        """Whether discovery and invocation can reach the server: connected and granted by the sandbox."""
        return self.permitted and self.state == "connected"

    @property
    def reconnectable(self) -> bool:
        """Whether the server can be started again from here: granted, and started once (if it failed too)."""
        return self.permitted and self.state in ("connecting", "connected", "failed", "disconnected")


def _transport(
    config: McpServerConfig | None, status: McpServerStatus | None, shown: Callable[[str], str]
) -> str:
    """How the server is reached; never its environment, headers or URL query (they may hold secrets).

    ``shown`` turns a configured value back into its ``${VAR}`` template: a value from the environment
    is shown as the variable's name, never as itself (a token in an argument or a URL path).
    """
    if config is None:
        return status.transport if status is not None and status.transport else "registered in code"
    if config.command is not None:
        return " ".join(["stdio:", shown(config.command), *map(shown, config.args)])
    url = config.url or ""
    if shown(url) != url:
        return f"http: {shown(url).split('?', 1)[0].split('#', 1)[0]}"
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"http: {parts.scheme}://{host}{port}{parts.path}"


def read_log_tail(path: str | None, limit: int = LOG_TAIL_BYTES) -> str | None:
    """The last ``limit`` bytes of a server's log as text (whole lines), or ``None`` when unreadable."""
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - limit))
            data = file.read(limit)
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if size > limit and "\n" in text:
        text = text.split("\n", 1)[1]
    return text.rstrip("\n")


class McpSource:
    """The MCP browser's view of a runtime: servers from ``ditto.yaml`` merged with the registry's state.

    Discovery and invocation go through ``runtime.invoke("INTERACTION.ACT.MCP", ...)``, so they pass the
    same sandbox checks and approval gate as a graph's calls; the registry is read for state, figures,
    tool lists and definition changes.
    """

    def __init__(
        self,
        *,
        runtime: Runtime,
        registry: McpRegistry,
        config: RuntimeConfig,
        policy: ApprovalPolicy,
    ) -> None:
        self.runtime = runtime
        self.registry = registry
        self.config = config
        self.policy = policy
        self._ids = itertools.count(1)

    # -- state ----------------------------------------------------------------------------------------

    def servers(self) -> list[ServerView]:
        """Every configured server (disabled and denied ones too), then servers registered in code."""
        configured = self.config.mcp.servers
        names = list(configured)
        names += [status.server for status in self.registry.statuses() if status.server not in configured]
        names += [name for name in self.registry.servers() if name not in names]
        return [self._view(name, configured.get(name)) for name in names]

    def server(self, name: str) -> ServerView:
        """One server's view."""
        return self._view(name, self.config.mcp.servers.get(name))

    def _view(self, name: str, config: McpServerConfig | None) -> ServerView:
        status = self.registry.status(name)
        permitted = self.runtime.services.sandbox.allows_mcp(name)
        state: ServerState
        if status is not None:
            state = status.state
        elif config is not None and config.disabled:
            state = "disabled"
        elif self.registry.get(name) is not None:
            state = "connected"
        elif not permitted:
            state = "denied"
        else:
            state = "not started"
        return ServerView(
            name=name,
            state=state,
            transport=_transport(config, status, self.config.shown),
            permitted=permitted,
            error=status.error if status is not None else None,
            log_path=status.log_path if status is not None else None,
            pages=status.pages if status is not None else None,
            tools=status.tools if status is not None else None,
            server_info=status.server_info if status is not None else None,
            protocol_version=status.protocol_version if status is not None else None,
        )

    @property
    def limits(self) -> tuple[int, int]:
        """The discovery budget of one discover call: pages, capabilities."""
        return self.registry.max_discovery_pages, self.registry.max_capabilities

    def tools(self, server: str) -> list[McpCapability]:
        """What ``server`` listed at its last discovery."""
        return self.registry.capabilities(server)

    def tool(self, server: str, name: str) -> McpCapability | None:
        """One tool as last listed."""
        return self.registry.known_capability(server, name)

    def verdict(self, server: str, tool: str) -> Verdict:
        """Which approval rule applies to ``server:tool`` (the MCP default when none matches); no call is
        known here, so its ``rule`` also says which rules on arguments could change the verdict."""
        capability = self.registry.known_capability(server, tool)
        verdict = self.policy.for_mcp(server, tool, capability.annotations if capability else None)
        return dataclasses.replace(verdict, rule=verdict.shown_rule)

    def change(self, server: str, tool: str) -> McpToolChange | None:
        """The open definition change of a tool, if it moved from the definition first seen."""
        for _server, change in self.registry.pending_changes(server):
            if change.name == tool:
                return change
        return None

    def accept(self, server: str, tool: str) -> bool:
        """Accept a changed tool's current definition so that it can be called again."""
        return bool(self.registry.accept_changes(server, [tool]))

    @property
    def workspace(self) -> Path:
        """The workspace the session works on (where the browser saves what a person asks it to)."""
        return self.runtime.services.sandbox.workspace

    def server_info(self, server: str) -> McpServerInfo:
        """What a connected server said about itself; raises when it cannot tell (not connected, say)."""
        return self.registry.server_info(server)

    def log_tail(self, server: str) -> str | None:
        """The end of ``server``'s log, when its connection wrote one."""
        return read_log_tail(self.server(server).log_path)

    def watch(
        self,
        on_change: Callable[[McpToolsChanged], object],
        on_status: Callable[[McpServerStatus], object],
    ) -> Callable[[], None]:
        """Listen for tool-list changes and connection states; returns a function that stops listening."""
        stop_change = self.registry.on_change(on_change)
        stop_status = self.registry.on_status(on_status)

        def stop() -> None:
            stop_change()
            stop_status()

        return stop

    # -- calls ----------------------------------------------------------------------------------------

    async def discover(self, server: str) -> list[McpCapability]:
        """Discover ``server``'s tools through the runtime; permission and discovery errors raise."""
        output = await self.runtime.invoke(ACT_MCP, {"operation": "discover", "server": server})
        assert isinstance(output, McpDiscovery)
        return list(output.capabilities)

    def next_call_id(self) -> str:
        """A fresh call id for an invocation from the browser."""
        return f"{_CALL_PREFIX}-{next(self._ids)}"

    async def invoke(
        self, server: str, tool: str, arguments: Mapping[str, Any], call_id: str | None = None
    ) -> Observation:
        """Invoke one tool through the runtime (sandbox and approval gate) and observe its result.

        The call is a run of its own (a one-node graph, ``mcp-browser``), so its decision and result are
        journaled like any run's and ``ditto-tui runs`` and ``audit`` show it. A node error is raised as
        the error itself (a permission refused, say), as a direct invocation would.
        """
        call = {"id": call_id or self.next_call_id(), "name": tool, "arguments": dict(arguments)}
        request = {"operation": "invoke", "server": server, "call": call}
        plan = graph(BROWSER_RUN).node("invoke", ACT_MCP, [], lambda _input, _deps: request)
        try:
            outputs = await self.runtime.run(plan)
        except GraphExecutionError as exc:
            if isinstance(exc.__cause__, Exception):
                raise exc.__cause__ from None
            raise
        output = outputs["invoke"]
        assert isinstance(output, McpInvocation)
        return observe_external_result(output.result)


@asynccontextmanager
async def open_mcp_source(
    config: RuntimeConfig,
    workspace: Path,
    approver: Approver | None,
    *,
    log_dir: Path | None = None,
) -> AsyncIterator[McpSource]:
    """Start the configured MCP servers and a runtime over them; yield the browser's source; close all.

    The MCP browser over a session of its own, built by the composition root (``ditto_tui.session``)
    like every other: the sandbox, approval policy and journal come from ``config`` as for a run, so a
    tool invoked from the browser is checked, approved and journaled the same way.
    Servers the sandbox does not grant are not started and show as denied. Logs go to ``log_dir``
    (the workspace's state directory by default, never the workspace).
    """
    async with open_runtime(
        BROWSE_ONLY, config, workspace, approver, wait_for_servers=True, log_dir=log_dir
    ) as session:
        yield McpSource(
            runtime=session.runtime, registry=session.mcp, config=config, policy=session.gate.policy
        )
