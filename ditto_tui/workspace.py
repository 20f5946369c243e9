"""Which config and which graph a run uses, given the workspace and whether the user trusts it.

The workspace is untrusted input (a repository someone cloned): its ``ditto.yaml`` could widen the
sandbox or start servers, and its ``graphs/react_agent.py`` would run as soon as it is imported. Neither
is used unless the user trusted the folder (``ditto-tui trust``) or named the file (``--config FILE``,
``run GRAPH``). Resolution, as API.md section 9 fixes it:

- config: ``--config FILE`` > ``W/ditto.yaml`` when W is trusted > ``<user config dir>/ditto.yaml`` >
  the built-in defaults (``ditto_tui/agent/ditto.yaml``);
- graph: ``run GRAPH`` > ``W/graphs/react_agent.py`` when W is trusted > the packaged agent graph.

Trust is pinned to content (:mod:`ditto_tui.trust`): W's ``ditto.yaml`` is used only as it was when W
was trusted (its text is read once, checked, and that text is the one parsed), and its graph only while
no file under ``graphs/`` was edited, added or removed since. Otherwise the run falls back as for an
untrusted folder, and :func:`untrusted_notice` says which file changed.

The approval rules come in layers, lowest first (API.md section 10): the built-in defaults (used when no
file of yours replaces them), your own ``ditto.yaml``, the config the run uses (a trusted workspace's, or
``--config FILE``), and ``--policy FILE``. Every rule of every layer counts and the strictest decision
wins, so a layer above can make a call stricter, never looser: a deny in your own file holds in every
workspace you trust.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ditto_tui.config import (
    ApprovalRule,
    RuntimeConfig,
    load_approval_rules,
    load_runtime_config_file,
    parse_config_text,
)
from ditto_tui.errors import ConfigError
from ditto_tui.home import config_dir
from ditto_tui.sanitize import escape_controls
from ditto_tui.trust import CONFIG_NAME as CONFIG_NAME
from ditto_tui.trust import GRAPHS_DIR, FileChange, TrustState, trust_state, trusted_bytes

WORKSPACE_GRAPH = Path(GRAPHS_DIR) / "react_agent.py"
_NAMED_CHANGES = 3
PACKAGE = Path(__file__).resolve().parent
BUILTIN_CONFIG = PACKAGE / "agent" / CONFIG_NAME
"""The built-in defaults: the sandbox, demo server and policy the packaged agent graph runs with."""
DEFAULT_GRAPH = PACKAGE / "agent" / "react_agent.py"
"""The agent graph that ships with the package: the default graph in any folder."""


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """The config of a run and where it came from (``source``: a path, or ``built-in defaults``)."""

    config: RuntimeConfig
    source: str


def user_config_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's own ``ditto.yaml``, in the user config directory."""
    return config_dir(env) / CONFIG_NAME


def resolve_config(
    given: str | None,
    workspace: Path,
    env: Mapping[str, str] | None = None,
    *,
    policy: str | None = None,
) -> Resolved:
    """The config of a run in ``workspace``: ``given`` (``--config``) first, then as the module says; its
    approval rules are those of every layer, ``policy`` (``--policy FILE``) the highest."""
    env = os.environ if env is None else env
    for candidate, layer, text in _config_candidates(given, workspace, env):
        if candidate is not None:
            config = _load(candidate, layer, text, env, workspace)
            config = _layered(config, candidate, layer, workspace, env, policy)
            return Resolved(config=config, source=os.fspath(candidate))
    config = load_runtime_config_file(BUILTIN_CONFIG, env, workspace=workspace, layer="built-in")
    config = _layered(config, BUILTIN_CONFIG, "built-in", workspace, env, policy)
    return Resolved(config=config, source="built-in defaults")


def _config_candidates(
    given: str | None, workspace: Path, env: Mapping[str, str]
) -> list[tuple[Path | None, str, str | None]]:
    """Each layer's file (``None``: not there, or not to be used) and, for the workspace's, its text."""
    local = workspace / CONFIG_NAME
    user = user_config_file(env)
    text = _trusted_text(local, workspace, env) if local.is_file() else None
    return [
        (Path(given) if given is not None else None, "config", None),
        (local if text is not None else None, "workspace", text),
        (user if user.is_file() else None, "user", None),
    ]


def _trusted_text(local: Path, workspace: Path, env: Mapping[str, str]) -> str | None:
    """The text of the workspace's ``ditto.yaml`` if it is as it was trusted, else ``None``."""
    data = trusted_bytes(workspace, CONFIG_NAME, env)
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {os.fspath(local)!r}: {exc}") from None


def _load(
    candidate: Path, layer: str, text: str | None, env: Mapping[str, str], workspace: Path
) -> RuntimeConfig:
    if text is None:
        return load_runtime_config_file(candidate, env, workspace=workspace, layer=layer)
    return parse_config_text(text, env, name=os.fspath(candidate), workspace=workspace, layer=layer)


def _layered(
    config: RuntimeConfig,
    base: Path,
    layer: str,
    workspace: Path,
    env: Mapping[str, str],
    policy: str | None,
) -> RuntimeConfig:
    """``config`` (read from ``base``) with the approval rules of every layer: the user's below a
    workspace's or ``--config``'s own, ``--policy``'s above them all."""
    rules: list[ApprovalRule] = []
    user = user_config_file(env)
    if layer in ("workspace", "config") and user.is_file() and not _same_file(user, base):
        rules += load_approval_rules(user, env, layer="user", workspace=workspace)
    rules += config.approval.rules
    if policy is not None:
        rules += load_approval_rules(policy, env, layer="policy", workspace=workspace, policy_file=True)
    if len(rules) == len(config.approval.rules):
        return config
    approval = config.approval.model_copy(update={"rules": tuple(rules)})
    return config.model_copy(update={"approval": approval})


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def default_graph(workspace: Path, env: Mapping[str, str] | None = None) -> Path:
    """The graph a run uses when none is named: a trusted workspace's own agent while no file under its
    ``graphs/`` changed since it was trusted, else the packaged one."""
    own = workspace / WORKSPACE_GRAPH
    return own if own.is_file() and trust_state(workspace, env).graphs_unchanged() else DEFAULT_GRAPH


def untrusted_notice(
    workspace: Path,
    *,
    config_given: bool,
    graph_given: bool,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """One line telling the user which files of ``workspace`` were not used, because the folder is not
    trusted or because they changed since it was trusted, and how to trust it; ``None`` when nothing of
    it was passed over."""
    unused = [] if config_given else [CONFIG_NAME]
    unused += [] if graph_given else [str(WORKSPACE_GRAPH)]
    present = [name for name in unused if (workspace / name).is_file()]
    if not present:  # the trust store is read only when it matters
        return None
    state = trust_state(workspace, env)
    passed_over = [name for name in present if not _used(state, name)]
    if not passed_over:
        return None
    names = " and ".join(passed_over)
    folder = shlex.quote(str(workspace))
    if not state.trusted:
        line = (
            f"not using {names} of {str(workspace)!r}: the folder is not trusted "
            f"(run `ditto-tui trust {folder}` to use them)"
        )
    else:
        line = (
            f"not using {names} of {str(workspace)!r}: {_why_changed(state, passed_over)} "
            f"(`ditto-tui trust --show {folder}` shows what changed; `ditto-tui trust {folder}` trusts "
            "the files as they are now)"
        )
    return escape_controls(line)


def _used(state: TrustState, name: str) -> bool:
    return state.uses(name) if name == CONFIG_NAME else state.graphs_unchanged()


def _why_changed(state: TrustState, passed_over: list[str]) -> str:
    """Which files changed since the folder was trusted, the first few by name."""
    if not state.pinned:
        return "the folder was trusted before ditto-tui pinned trust to the files' content"
    changes = [change for change in state.changes if _concerns(change, passed_over)]
    said = "; ".join(_change_words(change) for change in changes[:_NAMED_CHANGES])
    more = len(changes) - _NAMED_CHANGES
    return said + (f"; and {more} more" if more > 0 else "")


def _concerns(change: FileChange, passed_over: list[str]) -> bool:
    if change.name == CONFIG_NAME:
        return CONFIG_NAME in passed_over
    return str(WORKSPACE_GRAPH) in passed_over


def _change_words(change: FileChange) -> str:
    if change.kind == "edited":
        return f"{change.name} changed since the folder was trusted"
    if change.kind == "removed":
        return f"{change.name} was removed since the folder was trusted"
    return f"{change.name} was not trusted with the folder"
