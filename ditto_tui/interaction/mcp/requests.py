"""Server-to-client requests: the SDK session callbacks over the application's ``McpClientRequests``.

Each callback hands the request's params (MCP wire form) and the server's name to the application, and
checks what comes back against the SDK's result model before it goes to the server. Whatever goes wrong
reaches the server as an error with a sanitised message: a refusal (``McpError``) keeps its message, any
other failure says only that the client could not answer. The server never sees a traceback or a secret.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pydantic
from mcp import types
from mcp.client.session import ClientRequestContext

from ditto_tui.errors import McpError, ValidationError
from ditto_tui.interaction.mcp.port import McpClientRequests
from ditto_tui.interaction.results import validation_summary
from ditto_tui.sanitize import sanitize_public_message

USER_REJECTED = -1
"""The error code the MCP specification's examples use for a request the person rejected."""

INTERNAL_ERROR = -32603

Note = Callable[[str], None]


def _wire(params: pydantic.BaseModel) -> dict[str, Any]:
    return params.model_dump(by_alias=True, mode="json", exclude_none=True)


def _refused(what: str, exc: Exception, note: Note) -> types.ErrorData:
    if isinstance(exc, McpError):
        message = sanitize_public_message(exc.message) or f"the {what} request was refused"
        note(f"{what} request refused: {message}")
        return types.ErrorData(code=USER_REJECTED, message=message)
    reason = sanitize_public_message(exc) or type(exc).__name__
    note(f"{what} request failed: {reason}")
    return types.ErrorData(code=INTERNAL_ERROR, message=f"the client could not answer the {what} request")


def _invalid(what: str, exc: pydantic.ValidationError, note: Note) -> types.ErrorData:
    note(f"{what} answer is not valid: {exc.error_count()} error(s)")
    return types.ErrorData(code=INTERNAL_ERROR, message=f"the client's {what} answer was not valid")


MessageResult = types.CreateMessageResult | types.CreateMessageResultWithTools


def _message_result(result: Mapping[str, Any]) -> MessageResult:
    content = result.get("content")
    if isinstance(content, list) or (isinstance(content, Mapping) and content.get("type") == "tool_use"):
        return types.CreateMessageResultWithTools.model_validate(result)
    return types.CreateMessageResult.model_validate(result)


def check_sampling_params(params: Mapping[str, Any]) -> None:
    """Raise :class:`ValidationError` unless ``params`` are a ``sampling/createMessage`` request's."""
    try:
        types.CreateMessageRequestParams.model_validate(params)
    except pydantic.ValidationError as exc:
        raise ValidationError(validation_summary(exc)) from None


class SessionCallbacks:
    """The ``sampling_callback``, ``elicitation_callback`` and ``list_roots_callback`` of one server."""

    def __init__(self, server: str, handler: McpClientRequests, note: Note) -> None:
        self.server = server
        self.handler = handler
        self.note = note

    def keywords(self) -> dict[str, Any]:
        """``mcp.ClientSession`` keyword arguments: the three callbacks, so it declares the capabilities."""
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> MessageResult | types.ErrorData:
        self.note("sampling/createMessage request")
        try:
            result = await self.handler.create_message(self.server, _wire(params))
        except Exception as exc:
            return _refused("sampling", exc, self.note)
        try:
            return _message_result(result)
        except pydantic.ValidationError as exc:
            return _invalid("sampling", exc, self.note)

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.note("elicitation/create request")
        try:
            result = await self.handler.elicit(self.server, _wire(params))
        except Exception as exc:
            return _refused("elicitation", exc, self.note)
        try:
            return types.ElicitResult.model_validate(result)
        except pydantic.ValidationError as exc:
            return _invalid("elicitation", exc, self.note)

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        try:
            roots = await self.handler.list_roots(self.server)
        except Exception as exc:
            return _refused("roots", exc, self.note)
        try:
            return types.ListRootsResult(roots=[types.Root.model_validate(root) for root in roots])
        except pydantic.ValidationError as exc:
            return _invalid("roots", exc, self.note)
