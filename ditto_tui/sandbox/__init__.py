"""Sandbox: permissions, workspace path rules and the local command executor."""

from ditto_tui.sandbox._files import create_new_file, make_directories
from ditto_tui.sandbox._sandbox import Sandbox
from ditto_tui.sandbox.executor import (
    CommandResult,
    LocalSandboxExecutor,
    SandboxExecutor,
    create_local_sandbox_executor,
)
from ditto_tui.sandbox.paths import resolve_workspace_path, validate_workspace_path
from ditto_tui.sandbox.permissions import EFFECTS, Effect, SandboxPermissions, canonical_origin
from ditto_tui.sandbox.truncate import truncate_utf8

__all__ = [
    "EFFECTS",
    "CommandResult",
    "Effect",
    "LocalSandboxExecutor",
    "Sandbox",
    "SandboxExecutor",
    "SandboxPermissions",
    "canonical_origin",
    "create_local_sandbox_executor",
    "create_new_file",
    "make_directories",
    "resolve_workspace_path",
    "truncate_utf8",
    "validate_workspace_path",
]
