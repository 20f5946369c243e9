"""Which config and which graph a run uses, given the workspace and whether the user trusts it.

The workspace is untrusted input (a repository someone cloned): its ``ditto.yaml`` could widen the
sandbox or start servers, and its ``graphs/react_agent.py`` would run as soon as it is imported. Neither
is used unless the user trusted the folder (``ditto-tui trust``) or named the file (``--config FILE``,
``run GRAPH``). Resolution, as API.md section 9 fixes it:

- config: ``--config FILE`` > ``W/ditto.yaml`` when W is trusted > ``<user config dir>/ditto.yaml`` >
  the built-in defaults (``ditto_tui/agent/ditto.yaml``);
- graph: ``run GRAPH`` > ``W/graphs/react_agent.py`` when W is trusted > the packaged agent graph.

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

from ditto_tui.config import ApprovalRule, RuntimeConfig, load_approval_rules, load_runtime_config_file
from ditto_tui.home import config_dir
from ditto_tui.trust import is_trusted

CONFIG_NAME = "ditto.yaml"
WORKSPACE_GRAPH = Path("graphs") / "react_agent.py"
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
    for candidate, layer in _config_candidates(given, workspace, env):
        if candidate is not None:
            config = load_runtime_config_file(candidate, env, workspace=workspace, layer=layer)
            config = _layered(config, candidate, layer, workspace, env, policy)
            return Resolved(config=config, source=os.fspath(candidate))
    config = load_runtime_config_file(BUILTIN_CONFIG, env, workspace=workspace, layer="built-in")
    config = _layered(config, BUILTIN_CONFIG, "built-in", workspace, env, policy)
    return Resolved(config=config, source="built-in defaults")


def _config_candidates(
    given: str | None, workspace: Path, env: Mapping[str, str]
) -> list[tuple[Path | None, str]]:
    local = workspace / CONFIG_NAME
    user = user_config_file(env)
    return [
        (Path(given) if given is not None else None, "config"),
        (local if local.is_file() and is_trusted(workspace, env) else None, "workspace"),
        (user if user.is_file() else None, "user"),
    ]


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
    """The graph a run uses when none is named: a trusted workspace's own agent, else the packaged one."""
    own = workspace / WORKSPACE_GRAPH
    return own if own.is_file() and is_trusted(workspace, env) else DEFAULT_GRAPH


def untrusted_notice(
    workspace: Path,
    *,
    config_given: bool,
    graph_given: bool,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """One line telling the user which files of an untrusted ``workspace`` were not used, and how to trust
    it; ``None`` when nothing of it was passed over."""
    unused = [] if config_given else [CONFIG_NAME]
    unused += [] if graph_given else [str(WORKSPACE_GRAPH)]
    passed_over = [name for name in unused if (workspace / name).is_file()]
    if not passed_over or is_trusted(workspace, env):  # the trust store is read only when it matters
        return None
    names = " and ".join(passed_over)
    return (
        f"not using {names} of {str(workspace)!r}: the folder is not trusted "
        f"(run `ditto-tui trust {shlex.quote(str(workspace))}` to use them)"
    )
