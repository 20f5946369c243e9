"""Permissions, origin canonicalisation (ADVERSARIAL S-03, S-04) and the Sandbox checks at each access."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ditto_tui.errors import PermissionDeniedError, ValidationError
from ditto_tui.sandbox import EFFECTS, Sandbox, SandboxPermissions, canonical_origin

BRAVE = "https://api.search.brave.com"


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://API.Example.COM.", "https://api.example.com"),
        ("HTTPS://example.com", "https://example.com"),
        ("https://example.com:443", "https://example.com"),
        ("http://example.com:80/x", "http://example.com"),
        ("http://example.com:443", "http://example.com:443"),
        ("https://example.com:8443/p?q=1#f", "https://example.com:8443"),
        ("https://example.com:0443", "https://example.com"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        ("https://[0:0::1]", "https://[::1]"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("https://example.com/\u00e9", "https://example.com"),
    ],
)
def test_canonical_origin(url: str, origin: str) -> None:
    assert canonical_origin(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com",
        "file:///etc/passwd",
        "https://user:pw@example.com",
        "https://user@example.com",
        "https://b\u00fccher.example",
        "https://",
        "https:///path",
        "example.com",
        "//example.com",
        "https://example.com:0",
        "https://example.com:65536",
        "https://example.com:abc",
        "https://example.com:+80",
        "https://example.com..",
        "https://a..b",
        "https://-a.example",
        "https://exa mple.com",
        " https://example.com",
        "https://example.com\n",
        "https://[::1",
        "https://[zz]",
        "https://example.com\\@evil.example",
        42,
    ],
)
def test_canonical_origin_refuses(url: object) -> None:
    with pytest.raises(ValidationError) as caught:
        canonical_origin(url)  # type: ignore[arg-type]
    assert "pw" not in caught.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://api.search.brave.com.evil.example",
        "https://evil.example/api.search.brave.com",
        "http://api.search.brave.com",
        "https://api.search.brave.com:8443",
        "https://api.search.brave.com..",
        "https://user@api.search.brave.com",
        "https://search.brave.com",
        "https://xapi.search.brave.com",
    ],
)
def test_s04_lookalike_origins_denied(url: str) -> None:
    sandbox = Sandbox(SandboxPermissions(network=[BRAVE]))
    assert not sandbox.allows_network(url)
    with pytest.raises(PermissionDeniedError) as caught:
        sandbox.check_network(url)
    assert caught.value.code == "network_not_allowed"


@pytest.mark.parametrize(
    "url", [BRAVE, "https://API.SEARCH.BRAVE.COM.", "https://api.search.brave.com:443/res/v1/web/search?q=x"]
)
def test_s04_exact_match_after_canonicalisation_allowed(url: str) -> None:
    sandbox = Sandbox(SandboxPermissions(network=[BRAVE]))
    assert sandbox.allows_network(url)
    sandbox.check_network(url)


def test_network_denial_never_echoes_credentials() -> None:
    sandbox = Sandbox(SandboxPermissions(network=[BRAVE]))
    with pytest.raises(PermissionDeniedError) as caught:
        sandbox.check_network("https://user:hunter2@evil.example")
    assert "hunter2" not in str(caught.value)


def test_permissions_default_to_nothing() -> None:
    permissions = SandboxPermissions()
    assert (permissions.tools, permissions.mcp, permissions.network) == ((), (), ())
    assert not (permissions.read or permissions.write or permissions.execute)


def test_permissions_normalise_lists() -> None:
    permissions = SandboxPermissions(
        tools=["a", "b", "a"],
        mcp=["files"],
        network=["HTTPS://Example.com:443/x"],
    )
    assert permissions.tools == ("a", "b")
    assert permissions.mcp == ("files",)
    assert permissions.network == ("https://example.com",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        permissions.read = True  # type: ignore[misc]


def test_coerce_accepts_a_mapping() -> None:
    permissions = SandboxPermissions.coerce({"tools": ["read_text"], "read": True, "network": [BRAVE]})
    assert permissions == SandboxPermissions(tools=("read_text",), read=True, network=(BRAVE,))
    assert SandboxPermissions.coerce(None) == SandboxPermissions()
    assert SandboxPermissions.coerce(permissions) is permissions


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"tools": ["x"], "exec": True}, "'exec'"),
        ({"tools": "read_text"}, "'tools'"),
        ({"mcp": [1]}, "'mcp'"),
        ({"tools": [""]}, "'tools'"),
        ({"read": "yes"}, "'read'"),
        ({"write": 1}, "'write'"),
        ({"execute": None}, "'execute'"),
        ({"network": ["ftp://example.com"]}, "'network'"),
        ({"network": "https://example.com"}, "'network'"),
    ],
)
def test_coerce_names_the_bad_key(value: dict[str, object], key: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SandboxPermissions.coerce(value)
    assert key in caught.value.message


def test_coerce_refuses_non_mappings() -> None:
    with pytest.raises(ValidationError):
        SandboxPermissions.coerce(["read"])  # type: ignore[arg-type]


def test_tool_and_mcp_checks() -> None:
    sandbox = Sandbox({"tools": ["read_text"], "mcp": ["files"]})
    assert sandbox.allows_tool("read_text") and not sandbox.allows_tool("write_text")
    assert sandbox.allows_mcp("files") and not sandbox.allows_mcp("other")
    sandbox.check_tool("read_text")
    sandbox.check_mcp("files")
    with pytest.raises(PermissionDeniedError) as tool:
        sandbox.check_tool("write\x1b[2J")
    assert (tool.value.code, tool.value.message) == (
        "tool_not_allowed",
        "tool 'write\\x1b[2J' is not allowed by the sandbox"
        " (to allow it, add it to sandbox.tools in ditto.yaml)",
    )
    with pytest.raises(PermissionDeniedError) as mcp:
        sandbox.check_mcp("x" * 1000)
    assert mcp.value.code == "mcp_not_allowed" and len(mcp.value.message) < 200


@pytest.mark.parametrize(
    ("check", "code"),
    [
        ("check_read", "read_not_allowed"),
        ("check_write", "write_not_allowed"),
        ("check_execute", "execute_not_allowed"),
    ],
)
def test_flag_checks(check: str, code: str) -> None:
    with pytest.raises(PermissionDeniedError) as caught:
        getattr(Sandbox(None), check)()
    assert caught.value.code == code
    getattr(Sandbox({"read": True, "write": True, "execute": True}), check)()


def test_check_effects_describes_declared_effects_beside_the_grants() -> None:
    """A description for screens (revised S-02): it answers, it gates no access."""
    everything = Sandbox({"read": True, "write": True, "execute": True, "network": [BRAVE]})
    assert EFFECTS == {"read", "write", "execute", "network"}
    assert everything.allows_effects(EFFECTS)
    assert everything.allows_effects([])
    reader = Sandbox({"read": True})
    assert reader.allows_effects(["read"])
    assert not reader.allows_effects(["read", "network"])
    with pytest.raises(PermissionDeniedError) as caught:
        reader.check_effects(["read", "network"])
    assert caught.value.code == "network_not_allowed"


@pytest.mark.parametrize("effects", [["exfiltrate"], ["read", "READ"], [None], "exfiltrate"])
def test_s03_an_unknown_effect_is_described_as_ungranted_and_gates_no_access(
    tmp_path: Path, effects: list[object]
) -> None:
    granted = Sandbox({"read": True, "write": True, "network": [BRAVE]}, workspace=tmp_path)
    with pytest.raises(PermissionDeniedError) as caught:
        granted.check_effects(effects)  # type: ignore[arg-type]
    assert caught.value.code == "unknown_effect"
    assert not granted.allows_effects(effects)  # type: ignore[arg-type]
    granted.write_text("a.txt", "x")
    assert granted.read_text("a.txt") == "x"
    granted.check_network(BRAVE)
    with pytest.raises(PermissionDeniedError) as spawn:
        granted.check_execute()
    assert spawn.value.code == "execute_not_allowed"


def test_workspace_must_be_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for workspace in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(ValidationError) as caught:
            Sandbox(None, workspace=workspace)
        assert caught.value.code == "invalid_workspace" and str(tmp_path) not in caught.value.message
