"""``ditto.yaml``: the runtime configuration, ``${VAR}`` substitution, and one error naming the key path."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import types
import typing
import unicodedata
import urllib.parse
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

import pydantic
import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake

from ditto_tui.errors import ConfigError
from ditto_tui.home import workspace_state_dir
from ditto_tui.loopback import is_loopback
from ditto_tui.sandbox.permissions import Effect
from ditto_tui.sanitize import MIN_SECRET_SUBSTRING_LENGTH, escape_controls

__all__ = [
    "AnyVariable",
    "ApprovalConfig",
    "ApprovalRule",
    "ArgMatch",
    "RuleSource",
    "CommandsConfig",
    "InferConfig",
    "InteractionConfig",
    "McpConfig",
    "McpServerConfig",
    "RuntimeConfig",
    "SandboxConfig",
    "WebSearchConfig",
    "load_approval_rules",
    "load_mcp_servers",
    "load_runtime_config_file",
    "parse_config_text",
    "parse_runtime_config",
    "read_config_text",
    "template_names",
    "is_variable_name",
]

MAX_CONFIG_NODES = 100_000
"""The most values a configuration may hold (guards against YAML alias bombs)."""

MIN_REDACTED_LENGTH = MIN_SECRET_SUBSTRING_LENGTH
"""A value substituted from ``${VAR}`` is redacted as a substring of logs and errors from this length on.

Shorter values (a port, a flag) would hit ordinary words; they are still never shown on screen, because
the screen shows the ``${VAR}`` template instead of the value (:meth:`RuntimeConfig.shown`). A configured
secret (an API key, a header value) of any length is redacted, but one this short only where a whole
string equals it (:class:`ditto_tui.sanitize.SecretRedactor`).
"""

WORKSPACE_VARIABLE = "workspaceFolder"
"""``${workspaceFolder}``: the workspace's real path, as in Cursor and VS Code (not a secret)."""

STATE_VARIABLE = "workspaceStateFolder"
"""``${workspaceStateFolder}``: the workspace's folder in ditto-tui's state directory, outside the
workspace (where its journals and logs go; :func:`ditto_tui.home.workspace_state_dir`). The built-in
config keeps the demo server's notes there, so opening a folder writes nothing into it."""


def _scalar_text(value: object) -> object:
    """YAML writes ``PORT: 8080`` or ``DEBUG: true``; environment and header values are text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _not_bool(value: object) -> object:
    """Pydantic reads ``true`` as 1; a count or a duration written as a boolean is a mistake."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


def _server_name(name: str) -> str:
    if ":" in name:
        raise ValueError("must not contain ':' (MCP sources are SERVER:TOOL)")
    hidden = sorted({char for char in name if _unseen(char)})
    if hidden:
        chars = ", ".join(escape_controls(char) for char in hidden)
        raise ValueError(
            f"'{escape_controls(name)}' holds control or invisible characters ({chars}); "
            "an MCP server name must be visible text"
        )
    return name


def _unseen(char: str) -> bool:
    """A control, format (bidi, zero-width), surrogate, private-use or unassigned character, or a line or
    paragraph separator: nothing a person can read in a name."""
    category = unicodedata.category(char)
    return category.startswith("C") or category in ("Zl", "Zp")


def _mcp_glob(pattern: str) -> str:
    if ":" not in pattern:
        raise ValueError("must be a SERVER:TOOL glob, e.g. 'files:*'")
    return pattern


def _http_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return url


NonEmpty = Annotated[str, pydantic.StringConstraints(min_length=1)]
Count = Annotated[int, BeforeValidator(_not_bool)]
Seconds = Annotated[float, BeforeValidator(_not_bool), Field(gt=0, allow_inf_nan=False)]
EnvText = Annotated[str, BeforeValidator(_scalar_text)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]


class ConfigModel(BaseModel):
    """Base of every configuration section: frozen, unknown keys refused, camelCase or snake_case keys.

    A section left empty in YAML (``sandbox:`` with nothing under it) takes its defaults.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _empty_means_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            defaulted = _defaulted_keys(cls)
            return {key: value for key, value in data.items() if value is not None or key not in defaulted}
        return data


@functools.cache
def _defaulted_keys(model: type[BaseModel]) -> frozenset[str]:
    """Keys (name and alias) of the fields whose default is not ``None``."""
    keys: set[str] = set()
    for name, field in model.model_fields.items():
        if field.default_factory is not None or (not field.is_required() and field.default is not None):
            keys.update({name, field.alias or name})
    return frozenset(keys)


class SandboxConfig(ConfigModel):
    """What the sandbox grants; nothing unless listed."""

    tools: tuple[str, ...] = Field(default=(), description="Tool names that may be called.")
    mcp: tuple[str, ...] = Field(default=(), description="MCP server names that may be used.")
    read: bool = Field(default=False, description="Whether workspace files may be read.")
    write: bool = Field(default=False, description="Whether workspace files may be written.")
    execute: bool = Field(default=False, description="Whether commands may be run.")
    network: tuple[str, ...] = Field(default=(), description="Exact origins that may be reached.")

    def to_permissions_kwargs(self) -> dict[str, Any]:
        """Plain keyword arguments for ``SandboxPermissions``."""
        return {
            "tools": list(self.tools),
            "mcp": list(self.mcp),
            "read": self.read,
            "write": self.write,
            "execute": self.execute,
            "network": list(self.network),
        }


class CommandsConfig(ConfigModel):
    """Limits of the read-only command tools (seed: 1000 entries / 64 KiB / 8 KiB, hard caps enforced)."""

    max_entries: Count = Field(default=1000, ge=1, le=10_000, description="Lines or entries returned.")
    max_output_bytes: Count = Field(default=65_536, ge=1, le=1_048_576, description="Bytes of stdout kept.")
    max_error_bytes: Count = Field(default=8192, ge=1, le=65_536, description="Bytes of stderr kept.")

    def as_kwargs(self) -> dict[str, int]:
        """Keyword arguments for ``create_read_only_command_tools``."""
        return {
            "max_entries": self.max_entries,
            "max_output_bytes": self.max_output_bytes,
            "max_error_bytes": self.max_error_bytes,
        }


class WebSearchConfig(ConfigModel):
    """Settings of the Brave web-search provider; the key comes from the environment."""

    timeout_ms: Count = Field(default=30_000, ge=1, le=2_147_483_647, description="Deadline of one search.")
    max_response_bytes: Count = Field(
        default=1_048_576, ge=1, le=16_777_216, description="Largest body read."
    )
    base_url: HttpUrl = Field(default="https://api.search.brave.com", description="The API's base URL.")
    api_key: str | None = Field(default=None, repr=False, description="The subscription token, e.g. ${KEY}.")

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``create_brave_web_search_provider``."""
        return {
            "api_key": self.api_key,
            "timeout_ms": self.timeout_ms,
            "max_response_bytes": self.max_response_bytes,
            "base_url": self.base_url,
        }


class InteractionConfig(ConfigModel):
    """Behaviour settings of the INTERACTION worker's helpers."""

    commands: CommandsConfig = Field(default_factory=CommandsConfig, description="Read-only command limits.")
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig, description="Web search settings.")


McpServerType = Literal["stdio", "http", "streamable-http", "sse"]
McpLogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The MCP logging levels (RFC 5424 severities), least severe first."""
_OwnLogLevel = Annotated[McpLogLevel, "ditto-tui's MCP logging levels"]
""":data:`McpLogLevel` kept apart from equal ``Literal`` types of other packages: typing caches
``Literal[...] | None`` by equality, which ignores the order, so the MCP SDK's alphabetical list of the
same levels, imported first, would otherwise be the one an error names."""


class McpAuthConfig(ConfigModel):
    """OAuth 2.1 sign-in for an HTTP server (a 401 with a challenge starts it even without this block).

    ``clientId`` (and ``clientSecret``, best as ``${VAR}``) name a client registered with the
    authorization server beforehand; without them ditto-tui registers itself (or uses
    ``clientMetadataUrl`` as its client ID where the server supports client ID metadata documents).
    ``scopes`` are asked for besides those the server's challenge or metadata name.
    """

    type: Literal["oauth"] = Field(default="oauth", description="The only kind: oauth.")
    client_id: NonEmpty | None = Field(default=None, description="A pre-registered client ID.")
    client_secret: EnvText | None = Field(default=None, repr=False, description="Its secret (use ${VAR}).")
    scopes: tuple[NonEmpty, ...] = Field(default=(), description="Scopes to ask for.")
    client_metadata_url: HttpUrl | None = Field(
        default=None, description="An https URL of ditto-tui's client ID metadata document."
    )

    @model_validator(mode="after")
    def _secret_needs_id(self) -> Self:
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("clientSecret needs clientId")
        url = self.client_metadata_url
        parts = urllib.parse.urlsplit(url or "")
        if url is not None and (parts.scheme != "https" or parts.path in ("", "/")):
            raise ValueError("clientMetadataUrl must be an https URL with a path")
        return self


class McpServerConfig(ConfigModel):
    """One MCP server: stdio (``command``) or HTTP (``url``), exactly one.

    The keys are those of a Claude Desktop or Cursor ``mcpServers`` entry, so a pasted block parses
    unchanged. Of the client-specific extras only ``timeout`` (seconds) is accepted; ``alwaysAllow`` and
    ``autoApprove`` are refused on purpose, because approval belongs to ``approval.rules``, where it is
    visible and ordered. ``logLevel`` asks the server for log messages of that level and above.
    """

    type: McpServerType | None = Field(default=None, description="stdio, http, streamable-http or sse.")
    command: NonEmpty | None = Field(default=None, description="The program of a stdio server.")
    args: tuple[str, ...] = Field(default=(), description="Its arguments.")
    env: dict[str, EnvText] = Field(default_factory=dict, repr=False, description="Extra environment.")
    cwd: str | None = Field(default=None, description="Its working directory.")
    url: HttpUrl | None = Field(default=None, description="The endpoint of an HTTP server.")
    headers: dict[str, EnvText] = Field(default_factory=dict, repr=False, description="HTTP headers to send.")
    disabled: bool = Field(default=False, description="Keep the entry but do not start it.")
    timeout: Seconds | None = Field(default=None, description="Per-call timeout in seconds for this server.")
    log_level: _OwnLogLevel | None = Field(
        default=None, description="Ask the server for log messages of this level and above once connected."
    )
    auth: McpAuthConfig | None = Field(default=None, description="OAuth sign-in (HTTP servers).")

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of command (stdio) or url (HTTP)")
        if self.command is not None:
            self._check_stdio()
        else:
            self._check_http()
        return self

    def _check_stdio(self) -> None:
        if self.type not in (None, "stdio"):
            raise ValueError(f"type {self.type!r} needs url, not command")
        if self.headers:
            raise ValueError("headers apply only to HTTP servers (url)")
        if self.auth is not None:
            raise ValueError("auth applies only to HTTP servers (url)")

    def _check_http(self) -> None:
        if self.type == "stdio":
            raise ValueError("type 'stdio' needs command, not url")
        if self.args or self.env or self.cwd is not None:
            raise ValueError("args, env and cwd apply only to stdio servers (command)")

    _templates: dict[str, str] = PrivateAttr(default_factory=dict)

    def shown(self, value: str) -> str:
        """How one of this entry's strings is shown: as written, ``${VAR}`` and all, when it holds one."""
        return self._templates.get(value, value)

    def to_params(self) -> dict[str, Any]:
        """The ``mcpServers``-shaped entry ``open_mcp_servers`` takes; ``type`` only when it was written."""
        params: dict[str, Any] = {} if self.type is None else {"type": self.type}
        if self.command is not None:
            params.update(command=self.command, args=list(self.args), env=dict(self.env), cwd=self.cwd)
        else:
            params.update(url=self.url, headers=dict(self.headers))
        return params


ServerName = Annotated[str, pydantic.StringConstraints(min_length=1), AfterValidator(_server_name)]


class GatewayOAuthConfig(ConfigModel):
    """OAuth for ``mcp serve --http``, in place of the printed bearer token: the gateway is a resource
    server of ``issuer`` (named in its protected resource metadata, so a client signs in there) and
    checks each new access token at the authorization server's RFC 7662 ``introspectionEndpoint``: it
    must be active, issued for the gateway's URL (its ``aud``), by ``issuer``, with every one of
    ``scopes``. ``clientId`` and ``clientSecret`` (best as ``${VAR}``) are the gateway's own credentials
    for the introspection endpoint, when it asks for them. Both addresses are https, or loopback http.
    """

    issuer: HttpUrl = Field(description="The authorization server that issues the tokens.")
    introspection_endpoint: HttpUrl = Field(description="Its token introspection endpoint (RFC 7662).")
    scopes: tuple[NonEmpty, ...] = Field(default=(), description="Scopes every token must carry.")
    client_id: NonEmpty | None = Field(default=None, description="The gateway's client ID there.")
    client_secret: EnvText | None = Field(default=None, repr=False, description="Its secret (use ${VAR}).")

    @model_validator(mode="after")
    def _secure(self) -> Self:
        for name, url in (("issuer", self.issuer), ("introspectionEndpoint", self.introspection_endpoint)):
            parts = urllib.parse.urlsplit(url)
            if parts.scheme != "https" and not is_loopback(parts.hostname):
                raise ValueError(f"{name} must be https (or http on loopback): tokens cross it")
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("clientSecret needs clientId")
        return self


class GatewayConfig(ConfigModel):
    """``ditto-tui mcp serve``: how HTTP clients prove who they are (the printed token, or OAuth)."""

    oauth: GatewayOAuthConfig | None = Field(
        default=None, description="OAuth through an authorization server instead of the printed token."
    )


class McpConfig(ConfigModel):
    """MCP servers to connect, and the discovery budget of the registry."""

    servers: dict[ServerName, McpServerConfig] = Field(
        default_factory=dict, description="Server name to server, as in an mcpServers block."
    )
    max_discovery_pages: Count = Field(default=100, ge=1, description="Pages one discovery may read.")
    max_capabilities: Count = Field(default=1000, ge=1, description="Capabilities one discovery may return.")
    timeout_seconds: Seconds = Field(default=60.0, description="Default per-call timeout in seconds.")
    sampling: Literal["deny", "approve"] = Field(
        default="deny",
        description="A server's sampling request when no person answers (headless, automatic approver).",
    )
    elicitation: Literal["decline", "cancel"] = Field(
        default="decline",
        description="A server's elicitation request when no person answers (headless, automatic approver).",
    )
    gateway: GatewayConfig = Field(
        default_factory=GatewayConfig, description="The gateway (mcp serve) and the clients it lets in."
    )

    def enabled_servers(self) -> dict[str, dict[str, Any]]:
        """The servers not ``disabled``, as the mapping ``open_mcp_servers`` takes."""
        return {name: server.to_params() for name, server in self.servers.items() if not server.disabled}

    def registry_kwargs(self) -> dict[str, int]:
        """Keyword arguments for ``McpRegistry`` and ``open_mcp_servers``."""
        return {"max_discovery_pages": self.max_discovery_pages, "max_capabilities": self.max_capabilities}


Decision = Literal["allow", "ask", "deny"]


class RuleHints(ConfigModel):
    """What an MCP server's tool annotations must say for a rule to match (absent hints take the MCP
    defaults: not read-only, destructive, not idempotent, open-world)."""

    read_only: bool | None = Field(default=None, description="readOnlyHint must be this.")
    destructive: bool | None = Field(default=None, description="destructiveHint must be this.")
    idempotent: bool | None = Field(default=None, description="idempotentHint must be this.")
    open_world: bool | None = Field(default=None, description="openWorldHint must be this.")


OnTimeout = Literal["deny", "allow", "wait"]
"""What an unanswered request does when its time is up: fail the call (the default) or let it run."""

Review = Literal["results"]
"""What a rule holds for a person to review: ``results`` (a call's result, before any node sees it)."""


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None
    return pattern


def _field_path(path: str) -> str:
    if not all(path.split(".")):
        raise ValueError("a field path is names joined by dots, e.g. options.recursive")
    return path


Number = Annotated[float, BeforeValidator(_not_bool), Field(allow_inf_nan=False)]
FieldPath = Annotated[str, AfterValidator(_field_path)]


class ArgMatch(ConfigModel):
    """What one argument must be for a rule to match: exactly one of a glob, ``equals``, ``in``,
    ``regex``, or a range (``min`` and/or ``max``). A plain string is a glob.

    A glob or a regex matches only text (each item of a list, see ``ditto_tui.supervise.matching``);
    ``min``/``max`` only numbers, both ends included; ``equals`` and ``in`` compare JSON values.
    """

    glob: NonEmpty | None = Field(
        default=None, description="A glob over text: '*' and '?' stop at '/', '**' crosses it."
    )
    equals: Any = Field(default=None, description="The argument equals this JSON value (null included).")
    in_: tuple[Any, ...] | None = Field(default=None, alias="in", description="The argument is one of these.")
    regex: Annotated[str, AfterValidator(_regex)] | None = Field(
        default=None, description="A regular expression the whole text must match."
    )
    min: Number | None = Field(default=None, description="The number is at least this.")
    max: Number | None = Field(default=None, description="The number is at most this.")

    _compiled: re.Pattern[str] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _glob_text(cls, data: Any) -> Any:
        return {"glob": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        kinds = [name for name in ("glob", "in_", "regex") if getattr(self, name) is not None]
        kinds += ["equals"] if "equals" in self.model_fields_set else []
        kinds += ["range"] if self.min is not None or self.max is not None else []
        if len(kinds) != 1:
            raise ValueError("needs exactly one of a glob (a string), equals, in, regex, or min/max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is greater than max")
        if self.regex is not None:
            self._compiled = re.compile(self.regex)
        return self

    @property
    def compiled(self) -> re.Pattern[str] | None:
        """The regular expression, compiled once when the rule was loaded."""
        return self._compiled

    @model_serializer(mode="wrap")
    def _as_written(self, handler: pydantic.SerializerFunctionWrapHandler) -> Any:
        if self.glob is not None:
            return self.glob
        dumped = handler(self)
        given = "equals" in self.model_fields_set
        return {
            key: value for key, value in dumped.items() if value is not None or (key == "equals" and given)
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleSource:
    """Where a rule was written: its file and line, and its layer (``built-in``, ``user``, ``workspace``,
    ``config`` for ``--config FILE``, ``policy`` for ``--policy FILE``, or a caller's label)."""

    file: str | None = None
    line: int | None = None
    layer: str = "built-in"

    def __str__(self) -> str:
        if self.file is None:
            return self.layer
        return f"{self.file}:{self.line}" if self.line is not None else self.file


BUILT_IN = RuleSource()
"""The source of a rule built in code without a label of its own."""


class ApprovalRule(ConfigModel):
    """One approval rule: a ``tool`` glob or an ``mcp`` ``SERVER:TOOL`` glob, what else the call must be
    (``args``, ``effects``, ``hints``), and a decision. Every rule that matches a call counts and the
    strictest decision wins (deny > ask > allow); the order of the rules does not matter."""

    tool: NonEmpty | None = Field(default=None, description="A glob over tool names, e.g. 'write_*'.")
    mcp: Annotated[NonEmpty, AfterValidator(_mcp_glob)] | None = Field(
        default=None, description="A glob over SERVER:TOOL, e.g. 'files:*'."
    )
    args: dict[FieldPath, ArgMatch] | None = Field(
        default=None,
        description="Argument (dotted path, e.g. options.recursive) → what it must be; every one must hold. "
        "An argument the call does not have matches nothing.",
    )
    effects: tuple[Effect, ...] | None = Field(
        default=None,
        min_length=1,
        description="Tool rules only. An allow rule matches a tool whose declared effects are all listed; "
        "an ask or deny rule one that declares any listed effect, or declares none (nobody can tell).",
    )
    decision: Decision = Field(description="allow, ask or deny.")
    hints: RuleHints | None = Field(
        default=None, description="MCP rules only: the tool annotations the rule needs, e.g. readOnly: true."
    )
    timeout_seconds: Seconds | None = Field(
        default=None,
        description="How long a request under this rule may wait (overrides approval.timeoutSeconds).",
    )
    on_timeout: OnTimeout = Field(
        default="deny",
        description="Ask rules: what happens when nobody decides in time — deny (the default), allow, or "
        "wait: the request never expires and stays open until someone answers it (timeoutSeconds, this "
        "rule's or approval.timeoutSeconds, does not apply).",
    )
    review: Review | None = Field(
        default=None,
        description="results: a matching call's result waits for a person's review (pass, redact or fail) "
        "before any node or model sees it; timeoutSeconds and onTimeout apply to the review too.",
    )

    _source: RuleSource = PrivateAttr(default=BUILT_IN)

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if (self.tool is None) == (self.mcp is None):
            raise ValueError("needs exactly one of tool or mcp")
        if self.hints is not None and self.mcp is None:
            raise ValueError("hints apply only to mcp rules (they are what an MCP server says of its tools)")
        if self.effects is not None and self.mcp is not None:
            raise ValueError("effects apply only to tool rules (for MCP tools, match their hints)")
        if self.on_timeout != "deny" and self.decision != "ask" and self.review is None:
            raise ValueError(
                f"onTimeout: {self.on_timeout} applies only to ask rules and rules with review: results "
                "(nothing else waits for a decision)"
            )
        if self.review is not None and self.decision == "deny":
            raise ValueError("review: results needs a rule that lets the call run (allow or ask), not deny")
        return self

    def __eq__(self, other: object) -> bool:
        """Two rules are equal when they say the same, wherever they were written."""
        if not isinstance(other, ApprovalRule):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = ConfigModel.__hash__

    @property
    def source(self) -> RuleSource:
        """Where the rule was written (:data:`BUILT_IN` for a rule built in code)."""
        return self._source

    def with_source(self, source: RuleSource) -> ApprovalRule:
        """This rule, known as written at ``source``."""
        copy = self.model_copy()
        copy._source = source
        return copy

    def body(self) -> dict[str, Any]:
        """The rule as it would be written (camelCase keys, only what was given): what a journal records."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class ApprovalConfig(ConfigModel):
    """The approval policy: rules (every match counts, the strictest wins) and how long a decision may
    take."""

    rules: tuple[ApprovalRule, ...] = Field(default=(), description="Rules; the strictest match wins.")
    timeout_seconds: Seconds | None = Field(default=None, description="Deny after this many seconds.")


class InferConfig(ConfigModel):
    """The model provider for agent loops: scripted (offline) or an OpenAI-compatible endpoint."""

    provider: Literal["scripted", "openai"] = Field(default="scripted", description="scripted or openai.")
    script: str | None = Field(default=None, description="The scripted provider's YAML file.")
    base_url: HttpUrl | None = Field(default=None, description="The OpenAI-compatible base URL.")
    model: str | None = Field(default=None, description="The model name sent to the endpoint.")
    api_key: str | None = Field(default=None, repr=False, description="The endpoint's key, e.g. ${KEY}.")
    timeout_seconds: Seconds = Field(default=60.0, description="Deadline of one model call in seconds.")
    stream: bool = Field(default=True, description="Ask an openai endpoint to stream its answers.")


class RunsTlsConfig(ConfigModel):
    """TLS to a remote Temporal server: a client certificate and key, and the server's CA (paths)."""

    cert: str | None = Field(default=None, description="The client certificate (PEM file).")
    key: str | None = Field(default=None, description="The client certificate's key (PEM file).")
    ca: str | None = Field(default=None, description="The CA that signed the server's certificate.")


class RunsConfig(ConfigModel):
    """Where runs live: ``embedded`` (this process, the default), ``local`` (a Temporal dev server
    ditto-tui starts on 127.0.0.1 for the user) or ``remote`` (a Temporal cluster at ``address``)."""

    host: Literal["embedded", "local", "remote"] = Field(default="embedded", description="The run host.")
    address: str | None = Field(default=None, description="remote: the server's HOST:PORT.")
    namespace: str = Field(default="default", description="The Temporal namespace.")
    task_queue: str = Field(default="ditto-tui", description="The task queue of this workspace's workers.")
    tls: RunsTlsConfig | None = Field(default=None, description="remote: TLS settings.")
    api_key: str | None = Field(default=None, description="remote: an API key (write it as ${VAR}).")

    @model_validator(mode="after")
    def _remote_needs_address(self) -> Self:
        if self.host == "remote" and not self.address:
            raise ValueError("runs.host remote needs runs.address (HOST:PORT)")
        if self.host != "remote" and (self.address or self.tls or self.api_key):
            raise ValueError("runs.address, tls and apiKey apply only to runs.host remote")
        return self


NotifyEvent = Literal["pending", "timed_out", "run_finished"]


class NotifyConfig(ConfigModel):
    """Webhook notifications: a request waiting, one that timed out, a run that finished, POSTed to
    ``webhook`` (write a URL that carries a secret as ``${VAR}``) as ``json``, ``ntfy`` or ``slack``."""

    webhook: str | None = Field(default=None, description="The URL each notification is POSTed to.")
    format: Literal["json", "ntfy", "slack"] = Field(default="json", description="The message's shape.")
    on: tuple[NotifyEvent, ...] = Field(
        default=("pending", "timed_out", "run_finished"), description="The events that are sent."
    )
    include_arguments: bool = Field(
        default=False, description="Send a request's arguments too (left out by default)."
    )
    timeout_seconds: float = Field(default=5.0, gt=0, le=60, description="Seconds one POST may take.")
    retries: int = Field(default=3, ge=0, le=10, description="Attempts after a failed POST.")

    @field_validator("webhook")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urllib.parse.urlsplit(value)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("notify.webhook must be an http:// or https:// URL")
        return value


class OtelConfig(ConfigModel):
    """Runs exported as OpenTelemetry traces over OTLP (``otel:``). Nothing is exported unless an endpoint
    is set here or in ``OTEL_EXPORTER_OTLP_ENDPOINT``; a value set here wins over the environment's."""

    endpoint: HttpUrl | None = Field(
        default=None,
        description="The collector, e.g. http://127.0.0.1:4318 (http/protobuf: /v1/traces is added to it).",
    )
    protocol: Literal["http/protobuf", "grpc"] | None = Field(
        default=None, description="http/protobuf (the default) or grpc."
    )
    headers: dict[str, EnvText] = Field(
        default_factory=dict, repr=False, description="Headers sent with each export (secrets as ${VAR})."
    )
    capture_content: bool = Field(
        default=False,
        description="Put arguments, results, prompts and model text in the spans (redacted and bounded).",
    )
    sampling: float = Field(default=1.0, ge=0, le=1, description="The share of runs traced, 0 to 1.")
    service_name: NonEmpty | None = Field(default=None, description="service.name (default: ditto-tui).")
    timeout_seconds: float = Field(default=5.0, gt=0, le=60, description="Seconds one export may take.")


_SECRET_NAME = re.compile(r"(?i)key|token|secret|passw|credential|auth|cookie|(?:^|_)pat(?:_|$)")


class RuntimeConfig(ConfigModel):
    """The whole ``ditto.yaml``; every section has defaults, so an empty file is valid."""

    workspace: str | None = Field(default=None, description="The workspace root; the CLI's default if unset.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Sandbox permissions.")
    interaction: InteractionConfig = Field(default_factory=InteractionConfig, description="Worker settings.")
    mcp: McpConfig = Field(default_factory=McpConfig, description="MCP servers and discovery limits.")
    approval: ApprovalConfig = Field(default_factory=ApprovalConfig, description="The approval policy.")
    infer: InferConfig = Field(default_factory=InferConfig, description="The model provider.")
    runs: RunsConfig = Field(default_factory=RunsConfig, description="Where runs live (durable runs).")
    notify: NotifyConfig = Field(default_factory=NotifyConfig, description="Webhook notifications.")
    otel: OtelConfig = Field(default_factory=OtelConfig, description="Traces exported over OTLP.")

    _substituted: frozenset[str] = PrivateAttr(default=frozenset())
    _templates: dict[str, str] = PrivateAttr(default_factory=dict)
    _unset: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    def unset_variables(self, server: str) -> tuple[str, ...]:
        """The environment variables that ``server``'s entry reads and that are not set (it is not in
        ``sandbox.mcp``, so they need not be yet: it cannot start until they are)."""
        return self._unset.get(server, ())

    def secret_values(self) -> tuple[str, ...]:
        """Configured values to redact from public errors: API keys, MCP header values, MCP environment
        values whose name looks secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, …), and every
        value that came from ``${VAR}`` (from :data:`MIN_REDACTED_LENGTH` characters on)."""
        values = [
            self.interaction.web_search.api_key,
            self.infer.api_key,
            self.runs.api_key,
            self.notify.webhook,
        ]
        values.extend(value for value in self._substituted if len(value) >= MIN_REDACTED_LENGTH)
        values.extend(self.otel.headers.values())
        for server in self.mcp.servers.values():
            values.extend(server.headers.values())
            if server.auth is not None and server.auth.client_secret:
                values.append(server.auth.client_secret)
            values.extend(value for name, value in server.env.items() if _SECRET_NAME.search(name))
        return tuple(sorted({value for value in values if value}))

    def shown(self, value: str) -> str:
        """How a configured string is shown: as written in the file when it holds a ``${VAR}``.

        A value that came from the environment may be a secret of any length (a token in a URL path or an
        argument), so screens show the template (``--token ${API_TOKEN}``), never the value.
        """
        return self._templates.get(value, value)

    def _remember(self, substitution: _Substitution) -> RuntimeConfig:
        self._substituted = frozenset(substitution.values)
        self._templates = dict(substitution.templates)
        self._unset = {server: tuple(sorted(names)) for server, names in substitution.unset.items()}
        for server in self.mcp.servers.values():
            server._templates = self._templates
        return self


# --- loading -------------------------------------------------------------------------------------------


def load_runtime_config_file(
    path: str | os.PathLike[str],
    env: Mapping[str, str],
    *,
    workspace: str | os.PathLike[str] | None = None,
    layer: str = "config",
) -> RuntimeConfig:
    """Read ``ditto.yaml`` at ``path``, substitute ``${VAR}`` from ``env``, and validate it.

    ``${workspaceFolder}`` is the real path of ``workspace`` (default: the current directory). A top-level
    ``mcpServers`` block (a Claude Desktop or Cursor file, JSON being YAML) counts as ``mcp.servers``, and
    every server ``sandbox.mcp`` grants must be defined in the file.

    Raises ``ConfigError`` for an unreadable file, invalid YAML, a missing variable, an unknown key or a
    wrong type; its message has one line per problem: ``FILE:LINE: key.path: what is wrong``, with the
    closest known key for an unknown one. Each approval rule knows its file, line and ``layer``
    (:attr:`ApprovalRule.source`).
    """
    name = os.fspath(path)
    return parse_config_text(read_config_text(path), env, name=name, workspace=workspace, layer=layer)


def read_config_text(path: str | os.PathLike[str]) -> str:
    """The text of a configuration file, or ``ConfigError`` naming the file."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {os.fspath(path)!r}: {exc}") from exc


def parse_config_text(
    text: str,
    env: Mapping[str, str],
    *,
    name: str,
    workspace: str | os.PathLike[str] | None = None,
    layer: str = "config",
) -> RuntimeConfig:
    """Validate the text of a configuration file called ``name``, as :func:`load_runtime_config_file` does."""
    source = _Source(name, text, layer)
    config = _validate(_parse_yaml(text, name), env, workspace, source)
    problems = _undefined_grants(config)
    if problems:
        raise ConfigError(_report(problems, _parse_yaml(text, name), source))
    return config


def load_approval_rules(
    path: str | os.PathLike[str],
    env: Mapping[str, str],
    *,
    layer: str,
    workspace: str | os.PathLike[str] | None = None,
    policy_file: bool = False,
) -> tuple[ApprovalRule, ...]:
    """The ``approval.rules`` of the file at ``path``, each knowing its file, line and ``layer``.

    Only the ``approval`` section is read and validated (``${VAR}`` in it substituted from ``env``), so a
    layer's other sections neither count nor fail here. A ``policy_file`` (``--policy FILE``) holds
    ``approval.rules`` and nothing else: any other key is an error, never silently passed over.
    """
    name = os.fspath(path)
    text = read_config_text(path)
    data = _parse_yaml(text, name)
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{name}: the top level must be a mapping of sections, not {_kind(data)}")
    source = _Source(name, text, layer)
    if policy_file:
        _only_rules(data, source)
    section = data.get("approval")
    return _validate({"approval": section}, env, workspace, source).approval.rules


def _only_rules(data: Mapping[Any, Any], source: _Source) -> None:
    approval = data.get("approval")
    problems = [
        _Problem((_step(key),), "a policy file holds only approval.rules")
        for key in data
        if key != "approval"
    ]
    if isinstance(approval, Mapping):
        problems += [
            _Problem(("approval", _step(key)), "a policy file holds only approval.rules")
            for key in approval
            if key != "rules"
        ]
    if problems:
        raise ConfigError(_report(problems, data, source))


def load_mcp_servers(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The MCP servers a file defines, as written (``${VAR}`` kept): its ``mcpServers`` (Claude Desktop,
    Cursor), else its ``mcp.servers`` (a ``ditto.yaml``). Each is validated as a server of a ditto.yaml
    (errors name the file and line); an empty ``alwaysAllow``/``autoApprove`` is left out."""
    name = os.fspath(path)
    text = read_config_text(path)
    data = _parse_yaml(text, name)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{name}: the top level must be a mapping, not {_kind(data)}")
    if MCP_SERVERS_KEY in data:
        shape: dict[str, Any] = {MCP_SERVERS_KEY: data[MCP_SERVERS_KEY]}
    else:
        mcp = data.get("mcp")
        servers = mcp.get("servers") if isinstance(mcp, Mapping) else None
        if not isinstance(servers, Mapping):
            raise ConfigError(f"{name}: defines no MCP servers (no mcpServers, no mcp.servers)")
        shape = {"mcp": {"servers": servers}}
    config = _validate(shape, AnyVariable(), None, _Source(name, text))
    written = shape.get(MCP_SERVERS_KEY) or shape["mcp"]["servers"]
    return {
        str(server): {key: value for key, value in written[server].items() if key not in _EMPTY_MEANS_NOTHING}
        for server in config.mcp.servers
    }


class AnyVariable(Mapping[str, str]):
    """An environment in which every variable is set, to check a file whose ``${VAR}`` are kept as written."""

    def __getitem__(self, name: str) -> str:
        return "http://variable.invalid"

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self) -> typing.Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def parse_runtime_config(
    data: object, env: Mapping[str, str], *, workspace: str | os.PathLike[str] | None = None
) -> RuntimeConfig:
    """Validate already-parsed configuration data (``None`` gives the defaults).

    Unlike a file, data built in code may grant (``sandbox.mcp``) a server it registers itself.
    """
    if isinstance(data, RuntimeConfig):
        return data
    return _validate(data, env, workspace, None)


def _validate(
    data: object, env: Mapping[str, str], workspace: str | os.PathLike[str] | None, source: _Source | None
) -> RuntimeConfig:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            _where(source, None) + f"the top level must be a mapping of sections, not {_kind(data)}"
        )
    root = os.path.realpath(workspace if workspace is not None else ".")
    substitution = _Substitution(env, root, _idle_servers(data))
    try:
        substituted = substitution.run(data)
    except ConfigError as exc:  # too many values: no key to name
        raise ConfigError(_where(source, None) + exc.message) from None
    if substitution.problems:
        raise ConfigError(_report(substitution.problems, substituted, source))
    normal, problems = _normalise(substituted)
    try:
        config = RuntimeConfig.model_validate(normal)._remember(substitution)
    except pydantic.ValidationError as exc:
        problems += _validation_problems(exc, substituted)
    if problems:
        raise ConfigError(_report(problems, substituted, source))
    if source is not None:
        _locate_rules(config.approval.rules, source)
    return config


def _locate_rules(rules: tuple[ApprovalRule, ...], source: _Source) -> None:
    """Tell each rule, just validated from ``source``, its file and line (the rule's first key)."""
    for index, rule in enumerate(rules):
        line = _line_of(("approval", "rules", index), source.root)
        rule._source = RuleSource(file=source.name, line=line, layer=source.layer)


SafeYamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (about 15 times faster), else the Python one:
plain data only, either way."""


class _StrictLoader(SafeYamlLoader):  # type: ignore[misc, valid-type]
    """A safe YAML loader that refuses a key written twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            if isinstance(key, Hashable):
                seen.add(key)
        mapping: dict[Hashable, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _parse_yaml(text: str, name: str | None = None) -> object:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a safe loader: plain data only
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_problem(exc, name)) from None


def _yaml_problem(exc: yaml.YAMLError, name: str | None) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return f"{name}: invalid YAML: {problem}" if name else f"invalid YAML: {problem}"
    if name:
        return f"{name}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}"
    return f"invalid YAML: line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _kind(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


# --- ${VAR} substitution -------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\$\{|\$\{([^}]*)(\}?)")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Loc = tuple[int | str, ...]


@dataclass(frozen=True)
class _Problem:
    """One thing wrong with a configuration: where, as a path of keys as written, and what."""

    loc: Loc
    text: str


class _Substitution:
    """Replaces ``${VAR}`` (or Cursor's ``${env:VAR}``) in every string value; ``$${`` is a literal ``${``.

    ``${workspaceFolder}`` is the workspace's real path, ``${workspaceStateFolder}`` its folder in the
    state directory (:data:`STATE_VARIABLE`). It remembers every value it took from the
    environment (``values``: secrets wherever they land) and the template of each string it changed
    (``templates``: result → text as written), so that a screen can show the template instead.
    """

    def __init__(self, env: Mapping[str, str], workspace: str, idle: frozenset[str] = frozenset()) -> None:
        self._env = env
        self._workspace = workspace
        self._idle = idle
        self.unset: dict[str, set[str]] = {}
        """The variables not set in the entries of ``idle`` servers (not in ``sandbox.mcp``), by server."""
        self.problems: list[_Problem] = []
        self._nodes = 0
        self.values: set[str] = set()
        self.templates: dict[str, str] = {}
        self._taken = 0

    def run(self, data: Mapping[Any, Any]) -> dict[Any, Any]:
        return self._mapping(data, ())

    def _value(self, value: object, loc: Loc) -> object:
        self._nodes += 1
        if self._nodes > MAX_CONFIG_NODES:
            raise ConfigError(f"the configuration holds more than {MAX_CONFIG_NODES} values")
        if isinstance(value, str):
            return self._string(value, loc) if "${" in value else value
        if isinstance(value, Mapping):
            return self._mapping(value, loc)
        if isinstance(value, list):
            return [self._value(item, (*loc, index)) for index, item in enumerate(value)]
        return value

    def _mapping(self, data: Mapping[Any, Any], loc: Loc) -> dict[Any, Any]:
        return {key: self._value(value, (*loc, _step(key))) for key, value in data.items()}

    def _string(self, value: str, loc: Loc) -> str:
        taken = self._taken
        result = _VARIABLE.sub(lambda match: self._replace(match, loc), value)
        if self._taken != taken:
            self.templates[result] = value
        return result

    def _replace(self, match: re.Match[str], loc: Loc) -> str:
        if match.group() == "$${":
            return "${"
        if match.group(1) == WORKSPACE_VARIABLE and match.group(2):
            return self._workspace
        if match.group(1) == STATE_VARIABLE and match.group(2):
            return os.fspath(workspace_state_dir(self._workspace))
        name = match.group(1).removeprefix("env:")
        if not match.group(2):
            self.problems.append(_Problem(loc, "unterminated '${' (write '$${' for a literal '${')"))
        elif not _VARIABLE_NAME.fullmatch(name):
            self.problems.append(_Problem(loc, f"invalid variable name {match.group(1)!r} in '${{…}}'"))
        elif name not in self._env and (server := self._idle_server(loc)) is not None:
            self.unset.setdefault(server, set()).add(name)  # it cannot start: kept as written
            return match.group()
        elif name not in self._env:
            self.problems.append(_Problem(loc, f"environment variable {name!r} is not set"))
        else:
            self._taken += 1
            self.values.add(self._env[name])
            return self._env[name]
        return ""

    def _idle_server(self, loc: Loc) -> str | None:
        """The idle server whose entry ``loc`` is in, if it is in one."""
        if loc[:2] == ("mcp", "servers") and len(loc) > 2 and loc[2] in self._idle:
            return str(loc[2])
        if loc[:1] == (MCP_SERVERS_KEY,) and len(loc) > 1 and loc[1] in self._idle:
            return str(loc[1])
        return None


def _idle_servers(data: Mapping[Any, Any]) -> frozenset[str]:
    """The servers ``data`` defines that its ``sandbox.mcp`` does not list: they cannot start, so a
    variable their entries read need not be set until they are listed."""
    sandbox = data.get("sandbox")
    listed = sandbox.get("mcp") if isinstance(sandbox, Mapping) else None
    if listed is not None and not (isinstance(listed, list) and all(isinstance(n, str) for n in listed)):
        return frozenset()  # a malformed list: validation says so; every variable counts meanwhile
    mcp = data.get("mcp")
    entries = [mcp.get("servers") if isinstance(mcp, Mapping) else None, data.get(MCP_SERVERS_KEY)]
    names = {
        name for entry in entries if isinstance(entry, Mapping) for name in entry if isinstance(name, str)
    }
    return frozenset(names - set(listed or ()))


def template_names(text: str) -> Iterator[str]:
    """The names ``text``'s ``${…}`` templates read, as loading fills them in: a variable's (``${NAME}`` and
    ``${env:NAME}`` alike), :data:`WORKSPACE_VARIABLE` or :data:`STATE_VARIABLE`; not ``$${``, nor a
    malformed template (loading refuses those)."""
    for match in _VARIABLE.finditer(text):
        inner = match.group(1)
        if inner is None or not match.group(2):
            continue
        name = inner if inner in (WORKSPACE_VARIABLE, STATE_VARIABLE) else inner.removeprefix("env:")
        if _VARIABLE_NAME.fullmatch(name):
            yield name


def is_variable_name(name: str) -> bool:
    """Whether ``name`` can be written as ``${name}``."""
    return _VARIABLE_NAME.fullmatch(name) is not None


def _step(key: object) -> int | str:
    """A mapping key as one step of a key path (a YAML key may be a number)."""
    return key if isinstance(key, str) else str(key)


def _join(path: str, key: object) -> str:
    """``path.key``, with whatever in the key a terminal could act on or hide shown as an escape."""
    step = escape_controls(str(key))
    return f"{path}.{step}" if path else step


# --- Claude Desktop and Cursor files -------------------------------------------------------------------

MCP_SERVERS_KEY = "mcpServers"
"""The top-level key of a Claude Desktop or Cursor file, read as ``mcp.servers``."""

_EMPTY_MEANS_NOTHING = ("alwaysAllow", "autoApprove")
_ELSEWHERE = {
    "envFile": "ditto-tui reads no env files: put the variables under env (a value may be ${VAR}, "
    "taken from ditto-tui's own environment)",
    "serverUrl": "write it as url",
    "transportType": "write it as type (stdio, http, streamable-http or sse)",
}


def _normalise(data: dict[Any, Any]) -> tuple[dict[Any, Any], list[_Problem]]:
    """``data`` with a top-level ``mcpServers`` merged into ``mcp.servers`` and the keys other MCP clients
    use settled: an empty ``alwaysAllow``/``autoApprove`` means nothing and is dropped; the rest are
    problems that say what to write instead."""
    problems: list[_Problem] = []
    servers: dict[Any, tuple[Loc, Any]] = {}
    mcp = data.get("mcp")
    if isinstance(mcp, Mapping) and isinstance(mcp.get("servers"), Mapping):
        servers.update(
            {name: (("mcp", "servers", _step(name)), entry) for name, entry in mcp["servers"].items()}
        )
    pasted = data.get(MCP_SERVERS_KEY)
    if MCP_SERVERS_KEY in data and not isinstance(pasted, Mapping):
        problems.append(_Problem((MCP_SERVERS_KEY,), "must be a mapping of server name to server"))
    for name, entry in pasted.items() if isinstance(pasted, Mapping) else ():
        loc: Loc = (MCP_SERVERS_KEY, _step(name))
        if name in servers:
            problems.append(_Problem(loc, f"server {name!r} is also defined under mcp.servers; keep one"))
        servers.setdefault(name, (loc, entry))
    if not servers:
        return {key: value for key, value in data.items() if key != MCP_SERVERS_KEY}, problems
    settled = {name: _settle_server(loc, entry, problems) for name, (loc, entry) in servers.items()}
    normal = {key: value for key, value in data.items() if key != MCP_SERVERS_KEY}
    normal["mcp"] = {**(mcp if isinstance(mcp, Mapping) else {}), "servers": settled}
    return normal, problems


def _settle_server(loc: Loc, entry: Any, problems: list[_Problem]) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    kept = dict(entry)
    for key in _EMPTY_MEANS_NOTHING:
        if key in kept and kept[key] in (None, []):
            del kept[key]
        elif key in kept:
            problems.append(_Problem((*loc, key), _approval_instead(str(loc[-1]), kept.pop(key))))
    for key, advice in _ELSEWHERE.items():
        if key in kept:
            del kept[key]
            problems.append(_Problem((*loc, key), f"not a ditto-tui key: {advice}"))
    return kept


def _approval_instead(server: str, tools: object) -> str:
    """What to write instead of ``autoApprove: [..]``: the ``approval.rules`` entries, ready to paste."""
    names = tools if isinstance(tools, list) and all(isinstance(tool, str) for tool in tools) else ["*"]
    rules = "".join(
        f"\n      - mcp: {json.dumps(f'{server}:{tool}')}\n        decision: allow" for tool in names
    )
    return (
        "approval is decided by approval.rules, not per server; remove this key and add instead:"
        f"\n  approval:\n    rules:{rules}"
    )


def _undefined_grants(config: RuntimeConfig) -> list[_Problem]:
    """Every server ``sandbox.mcp`` grants that no ``mcp.servers`` entry defines (a file's typo)."""
    defined = list(config.mcp.servers)
    problems = []
    for index, name in enumerate(config.sandbox.mcp):
        if name not in config.mcp.servers:
            text = f"grants server {name!r}, which no mcp.servers entry defines"
            close = difflib.get_close_matches(name, defined, n=1)
            problems.append(
                _Problem(
                    ("sandbox", "mcp", index), text + (f" (did you mean {close[0]!r}?)" if close else "")
                )
            )
    return problems


# --- error messages ------------------------------------------------------------------------------------

_PROBLEMS = {
    "extra_forbidden": "unknown key",
    "missing": "is required",
    "less_than_equal": "must be ≤ {le}",
    "less_than": "must be < {lt}",
    "greater_than_equal": "must be ≥ {ge}",
    "greater_than": "must be > {gt}",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "literal_error": "must be one of {expected}",
    "invalid_key": "keys must be strings",
    "value_error": "{error}",
}


@dataclass(frozen=True)
class _Source:
    """The file a configuration came from: its name as given, and its text (for line numbers)."""

    name: str
    text: str
    layer: str = "config"

    @functools.cached_property
    def root(self) -> yaml.Node | None:
        try:
            return yaml.compose(self.text, Loader=SafeYamlLoader)
        except yaml.YAMLError:
            return None


def _report(problems: list[_Problem], data: object, source: _Source | None) -> str:
    """One line per problem (in the order of the file's lines when there is a file), duplicates dropped."""
    lines: list[tuple[int, str]] = []
    for problem in problems:
        number = _line_of(problem.loc, source.root) if source is not None else None
        line = _where(source, number) + f"{_written_path(problem.loc, data)}: {problem.text}"
        if all(line != seen for _, seen in lines):
            lines.append((number or 0, line))
    return "\n".join(line for _, line in sorted(lines, key=lambda entry: entry[0]))


def _where(source: _Source | None, line: int | None) -> str:
    """``FILE:LINE: `` (or ``FILE: `` when the line is not known); nothing for data built in code."""
    if source is None:
        return ""
    return f"{source.name}:{line}: " if line is not None else f"{source.name}: "


def _line_of(loc: Loc, node: yaml.Node | None) -> int | None:
    """The line of the deepest key of ``loc`` the YAML file holds (1-based)."""
    line = None
    for step in loc:
        if isinstance(node, yaml.MappingNode):
            found = _entry_node(node, step)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _entry_node(node: yaml.MappingNode, step: int | str) -> tuple[yaml.Node, yaml.Node] | None:
    names = {str(step), to_snake(step)} if isinstance(step, str) else {str(step)}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value in names:
            return key_node, value_node
    return None


def _validation_problems(exc: pydantic.ValidationError, data: dict[Any, Any]) -> list[_Problem]:
    """Pydantic's errors as problems at the keys as written (``mcpServers.x`` stays ``mcpServers.x``)."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(step for step in error["loc"] if step != "[key]")
        problem = _problem(error)
        if "[key]" in error["loc"]:
            problem = f"name {problem}"
        elif error["type"] == "extra_forbidden":
            problem += _suggestion(loc, data)
        problems.append(_Problem(_as_written(loc, data), problem))
    return problems


def _as_written(loc: Loc, data: dict[Any, Any]) -> Loc:
    """``mcp.servers.NAME…`` back to ``mcpServers.NAME…`` when the file wrote that server there."""
    pasted = data.get(MCP_SERVERS_KEY)
    if loc[:2] == ("mcp", "servers") and len(loc) > 2 and isinstance(pasted, Mapping):
        servers = data.get("mcp", {}).get("servers") if isinstance(data.get("mcp"), Mapping) else None
        if loc[2] in pasted and not (isinstance(servers, Mapping) and loc[2] in servers):
            return (MCP_SERVERS_KEY, *loc[2:])
    return loc


def _suggestion(loc: Loc, data: dict[Any, Any]) -> str:
    """`` (did you mean `sandbox.read`?)`` for an unknown key close to a known one, else nothing."""
    model = _model_at(loc[:-1])
    if model is None or not isinstance(loc[-1], str):
        return ""
    known = {
        name for field_name, field in model.model_fields.items() for name in (field_name, field.alias) if name
    }
    if model is RuntimeConfig:
        known.add(MCP_SERVERS_KEY)
    close = difflib.get_close_matches(loc[-1], sorted(known), n=1)
    if not close:
        return ""
    parent = _written_path(_as_written(loc[:-1], data), data) if loc[:-1] else ""
    return f" (did you mean `{_join(parent, close[0])}`?)"


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The configuration model that holds the keys at ``loc`` (``("sandbox",)`` → ``SandboxConfig``)."""
    current: Any = RuntimeConfig
    for step in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = _field(current, step)
            current = None if field is None else _unwrap(field.annotation)
        else:
            current = _element(current)
        if current is None:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _field(model: type[BaseModel], step: int | str) -> pydantic.fields.FieldInfo | None:
    for name, field in model.model_fields.items():
        if step in (name, field.alias):
            return field
    return None


def _unwrap(annotation: Any) -> Any:
    """``X`` of ``X | None`` and ``Annotated[X, …]``."""
    if typing.get_origin(annotation) is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _unwrap(args[0])
    return annotation


def _element(container: Any) -> Any:
    """The value type of ``dict[K, V]`` and the item type of ``tuple[X, ...]`` or ``list[X]``."""
    origin, args = typing.get_origin(container), typing.get_args(container)
    if origin is dict and len(args) == 2:
        return _unwrap(args[1])
    if origin in (tuple, list) and args:
        return _unwrap(args[0])
    return None


def _problem(error: Any) -> str:
    template = _PROBLEMS.get(error["type"])
    if template is None:
        return str(error["msg"])
    return template.format(**{key: str(value) for key, value in error.get("ctx", {}).items()})


def _written_path(loc: Loc, data: object) -> str:
    """The key path as written in the file: camelCase or snake_case, whichever the file used."""
    path, node = "", data
    for step in loc:
        if isinstance(step, int) and isinstance(node, list):
            path += f"[{step}]"
            node = node[step] if 0 <= step < len(node) else None
            continue
        key: object = step
        if isinstance(node, dict) and step not in node and isinstance(step, str) and to_snake(step) in node:
            key = to_snake(step)
        path = _join(path, key)
        node = node.get(key) if isinstance(node, dict) else None
    return path or "(top level)"
