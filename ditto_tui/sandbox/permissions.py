"""Sandbox permissions: what a run may touch, with network origins compared in canonical form."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Literal, get_args
from urllib.parse import urlsplit

from ditto_tui.errors import ValidationError

Effect = Literal["read", "write", "execute", "network"]
EFFECTS: frozenset[str] = frozenset(get_args(Effect))

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")


def _bad_origin(reason: str) -> ValidationError:
    return ValidationError(f"invalid network origin: {reason}", code="invalid_origin")


def _split_authority(authority: str) -> tuple[str, str]:
    """Split ``host[:port]`` (or ``[v6]:port``) into host and port text."""
    if authority.startswith("["):
        host, bracket, port = authority[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise _bad_origin("malformed IPv6 host")
        return f"[{host}]", port[1:]
    host, _, port = authority.partition(":")
    return host, port


def _canonical_host(host: str) -> str:
    if host.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError as error:
            raise _bad_origin("malformed IPv6 host") from error
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host or len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in host.split(".")):
        raise _bad_origin("malformed host name")
    return host


def _canonical_port(port: str, scheme: str) -> str:
    if not port:
        return ""
    if not _PORT.fullmatch(port) or not 0 < int(port) <= 65535:
        raise _bad_origin("malformed port")
    return "" if int(port) == _DEFAULT_PORTS[scheme] else f":{int(port)}"


def canonical_origin(url: str) -> str:
    """Reduce an http(s) URL or origin to ``scheme://host[:port]``.

    Scheme and host are lowercased, one trailing dot of the host is dropped, the default port is dropped
    and any other port kept; path, query and fragment are ignored. Userinfo, non-ASCII hosts, other
    schemes and malformed input raise :class:`ValidationError`.
    """
    if not isinstance(url, str):
        raise _bad_origin("not a string")
    if any(char.isspace() or not char.isprintable() for char in url):
        raise _bad_origin("contains whitespace or control characters")
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise _bad_origin("not a URL") from error
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise _bad_origin("only http and https are allowed")
    authority = parts.netloc
    if not authority.isascii():
        raise _bad_origin("host must be ASCII")
    if "@" in authority:
        raise _bad_origin("credentials are not allowed")
    host, port = _split_authority(authority)
    return f"{scheme}://{_canonical_host(host)}{_canonical_port(port, scheme)}"


def _names(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValidationError(
            f"sandbox permission {key!r} must be a list of names", code="invalid_permissions"
        )
    names = tuple(value)
    if not all(isinstance(name, str) and name for name in names):
        raise ValidationError(
            f"sandbox permission {key!r} must hold non-empty strings", code="invalid_permissions"
        )
    return tuple(dict.fromkeys(names))


def _origins(value: object) -> tuple[str, ...]:
    origins = _names("network", value)
    try:
        return tuple(dict.fromkeys(canonical_origin(origin) for origin in origins))
    except ValidationError as error:
        raise ValidationError(
            f"sandbox permission 'network' holds an {error.message}", code="invalid_permissions"
        ) from error


def _flag(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"sandbox permission {key!r} must be true or false", code="invalid_permissions")
    return value


@dataclass(frozen=True, kw_only=True, init=False)
class SandboxPermissions:
    """What the sandbox grants; nothing is allowed unless granted here."""

    tools: tuple[str, ...] = ()
    """Names of the tools that may be listed and called."""
    mcp: tuple[str, ...] = ()
    """Names of the MCP servers that may be discovered and invoked."""
    read: bool = False
    """Whether workspace files may be read."""
    write: bool = False
    """Whether workspace files may be written."""
    execute: bool = False
    """Whether processes may be spawned (every command tool needs it)."""
    network: tuple[str, ...] = ()
    """Exact network origins (``https://api.search.brave.com``), stored canonicalised."""

    def __init__(
        self,
        *,
        tools: Iterable[str] = (),
        mcp: Iterable[str] = (),
        read: bool = False,
        write: bool = False,
        execute: bool = False,
        network: Iterable[str] = (),
    ) -> None:
        """Check and normalise every grant: lists become tuples, origins are canonicalised."""
        object.__setattr__(self, "tools", _names("tools", tools))
        object.__setattr__(self, "mcp", _names("mcp", mcp))
        object.__setattr__(self, "read", _flag("read", read))
        object.__setattr__(self, "write", _flag("write", write))
        object.__setattr__(self, "execute", _flag("execute", execute))
        object.__setattr__(self, "network", _origins(network))

    @classmethod
    def coerce(cls, value: SandboxPermissions | Mapping[str, object] | None) -> SandboxPermissions:
        """Accept permissions, a mapping with the same keys, or ``None`` for no permissions at all."""
        if value is None:
            return cls()
        if isinstance(value, SandboxPermissions):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError("sandbox permissions must be a mapping", code="invalid_permissions")
        known = {field.name for field in fields(cls)}
        for key in value:
            if key not in known:
                raise ValidationError(f"unknown sandbox permission {key!r}", code="invalid_permissions")
        return cls(**value)  # type: ignore[arg-type]
