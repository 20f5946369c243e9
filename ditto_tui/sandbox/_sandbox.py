"""The Sandbox: one cooperative guard in front of files, commands, tools, MCP servers and the network."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ditto_tui.errors import PermissionDeniedError, SandboxError, ValidationError
from ditto_tui.sandbox import _files
from ditto_tui.sandbox.executor import CommandResult, SandboxExecutor
from ditto_tui.sandbox.paths import resolve_workspace_path
from ditto_tui.sandbox.permissions import EFFECTS, SandboxPermissions, canonical_origin
from ditto_tui.signal import CancelSignal

DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024
_MAX_NAME_CHARS = 80


def _add_to(key: str, what: str = "it") -> str:
    """How a refusal says which ``ditto.yaml`` key would grant it (a list the name goes in)."""
    return f" (to allow it, add {what} to sandbox.{key} in ditto.yaml)"


def _set(key: str) -> str:
    """How a refusal says which ``ditto.yaml`` switch would grant it."""
    return f" (to allow it, set sandbox.{key}: true in ditto.yaml)"


def _quote(name: object) -> str:
    """``repr`` of an untrusted name, shortened so an error message stays one short line."""
    text = repr(name)
    return text if len(text) <= _MAX_NAME_CHARS else f"{text[:_MAX_NAME_CHARS]}..."


def _denied(message: str, code: str) -> PermissionDeniedError:
    return PermissionDeniedError(message, code=code)


class Sandbox:
    """Grants or refuses every effect of a run; validation is an API boundary, not OS isolation."""

    def __init__(
        self,
        permissions: SandboxPermissions | Mapping[str, object] | None,
        *,
        workspace: str | os.PathLike[str] = ".",
        executor: SandboxExecutor | None = None,
    ) -> None:
        real = Path(os.path.realpath(workspace))
        if not real.is_dir():
            raise ValidationError("workspace is not an existing directory", code="invalid_workspace")
        self.permissions = SandboxPermissions.coerce(permissions)
        self.workspace = real
        self.executor = executor

    def allows_tool(self, name: str) -> bool:
        """Whether the tool ``name`` is granted."""
        return name in self.permissions.tools

    def allows_mcp(self, server: str) -> bool:
        """Whether the MCP server ``server`` is granted."""
        return server in self.permissions.mcp

    def allows_network(self, origin: str) -> bool:
        """Whether ``origin`` (or a URL) matches a granted origin exactly in (scheme, host, port)."""
        try:
            return canonical_origin(origin) in self.permissions.network
        except ValidationError:
            return False

    def check_tool(self, name: str) -> None:
        """Raise ``tool_not_allowed`` unless the tool is granted."""
        if not self.allows_tool(name):
            raise _denied(
                f"tool {_quote(name)} is not allowed by the sandbox{_add_to('tools')}", "tool_not_allowed"
            )

    def check_mcp(self, server: str) -> None:
        """Raise ``mcp_not_allowed`` unless the MCP server is granted."""
        if not self.allows_mcp(server):
            message = f"MCP server {_quote(server)} is not allowed by the sandbox{_add_to('mcp')}"
            raise _denied(message, "mcp_not_allowed")

    def check_network(self, origin_or_url: str) -> None:
        """Raise ``network_not_allowed`` unless the URL's origin is granted; never echoes credentials."""
        try:
            origin = canonical_origin(origin_or_url)
        except ValidationError:
            raise _denied(
                "network access to an invalid origin is not allowed", "network_not_allowed"
            ) from None
        if origin not in self.permissions.network:
            raise _denied(
                f"network origin {_quote(origin)} is not allowed by the sandbox{_add_to('network')}",
                "network_not_allowed",
            )

    def check_read(self) -> None:
        """Raise ``read_not_allowed`` unless reading files is granted."""
        if not self.permissions.read:
            raise _denied(f"reading files is not allowed by the sandbox{_set('read')}", "read_not_allowed")

    def check_write(self) -> None:
        """Raise ``write_not_allowed`` unless writing files is granted."""
        if not self.permissions.write:
            raise _denied(f"writing files is not allowed by the sandbox{_set('write')}", "write_not_allowed")

    def check_execute(self) -> None:
        """Raise ``execute_not_allowed`` unless running commands is granted."""
        if not self.permissions.execute:
            raise _denied(
                f"running commands is not allowed by the sandbox{_set('execute')}", "execute_not_allowed"
            )

    def check_effects(self, effects: Iterable[str]) -> None:
        """Raise unless every effect in ``effects`` is granted; an unknown effect raises too.

        A description for screens that show declared effects beside the grants: no access is refused
        through it. Declared effects are descriptive (the seed); the refusal happens at the point of
        access, in :meth:`read_text`, :meth:`write_text`, :meth:`run` and :meth:`check_network`.
        """
        for effect in (effects,) if isinstance(effects, str) else effects:
            if effect not in EFFECTS:
                raise _denied(f"unknown effect {_quote(effect)}", "unknown_effect")
            if effect == "read":
                self.check_read()
            elif effect == "write":
                self.check_write()
            elif effect == "execute":
                self.check_execute()
            elif not self.permissions.network:
                message = f"network access is not allowed by the sandbox{_add_to('network', 'the origin')}"
                raise _denied(message, "network_not_allowed")

    def allows_effects(self, effects: Iterable[str]) -> bool:
        """Whether :meth:`check_effects` would pass."""
        try:
            self.check_effects(effects)
        except PermissionDeniedError:
            return False
        return True

    def resolve(self, path: str) -> str:
        """The normalised workspace-relative real path of ``path`` (``"."`` for the root)."""
        return resolve_workspace_path(self.workspace, path)

    def read_text(self, path: str, *, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> str:
        """Read a workspace file as strict UTF-8 (needs ``read``); never follows a link out of the root."""
        self.check_read()
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValidationError("max_bytes must be a non-negative integer", code="invalid_limit")
        data = _files.read_bytes(self.workspace, path, max_bytes)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError("file is not valid UTF-8 text", code="not_utf8") from None

    def write_text(self, path: str, text: str) -> None:
        """Atomically create or replace a workspace file with UTF-8 ``text`` (needs ``write``)."""
        self.check_write()
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError("text cannot be encoded as UTF-8", code="not_utf8") from None
        _files.write_bytes(self.workspace, path, data)

    async def run(
        self,
        command: str,
        args: Sequence[str],
        *,
        signal: CancelSignal | None = None,
        max_stdout_bytes: int = 65536,
        max_stderr_bytes: int = 8192,
        timeout: float | None = None,
    ) -> CommandResult:
        """Run a command through the configured executor (needs ``execute``)."""
        self.check_execute()
        if self.executor is None:
            raise SandboxError("no command executor is configured", code="no_executor")
        return await self.executor.run(
            command,
            args,
            max_stdout_bytes=max_stdout_bytes,
            max_stderr_bytes=max_stderr_bytes,
            signal=signal,
            timeout=timeout,
        )
