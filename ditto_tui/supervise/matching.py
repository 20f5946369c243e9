"""Whether one approval rule matches one call: its glob, its ``args``, its ``effects`` and its ``hints``.

Where a call could be read two ways, the reading that is stricter wins: an ``allow`` rule matches only when
it certainly applies, an ``ask`` or ``deny`` rule whenever it could. So for text arguments:

- a glob compares paths as the sandbox reads them: for an ``allow`` rule the text must be a valid
  workspace path, and its normalised form (``a//./b`` → ``a/b``) must match; an ``ask`` or ``deny`` rule
  also matches the text as written and with ``..`` resolved (``a/../.env`` → ``.env``);
- an ``allow`` rule's glob or regex never matches text with a ``..`` component (the sandbox refuses such
  paths, and no allow should depend on how they resolve);
- a list argument matches an ``allow`` rule's glob, regex or range when every item does, an ``ask`` or
  ``deny`` rule's when any item does.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ditto_tui.config import ApprovalRule, ArgMatch
from ditto_tui.errors import PathError
from ditto_tui.sandbox.paths import validate_workspace_path
from ditto_tui.sandbox.permissions import EFFECTS

Match = bool | None
"""Whether a rule matches: yes, no, or ``None``: it depends on what is not known (arguments not given,
annotations or effects not recorded)."""

HINTS = {
    "read_only": ("readOnlyHint", False),
    "destructive": ("destructiveHint", True),
    "idempotent": ("idempotentHint", False),
    "open_world": ("openWorldHint", True),
}
"""Rule hint → (MCP annotation, its default in the MCP specification when the server sends none)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Call:
    """One call as the rules see it: a registered tool (``tool``) or an MCP tool (``mcp``, SERVER:TOOL).

    ``effects`` is what the tool declares (``None``: nothing declared); ``arguments`` ``None`` means not
    known (a screen that lists tools), as do ``effects_known`` and ``annotations_known`` False (a recorded
    run that did not keep them).
    """

    tool: str | None = None
    mcp: str | None = None
    effects: Sequence[str] | None = ()
    annotations: Mapping[str, Any] | None = None
    arguments: Mapping[str, Any] | None = None
    effects_known: bool = True
    annotations_known: bool = True


def hint_value(annotations: Mapping[str, Any] | None, hint: str) -> bool:
    """What ``annotations`` say for ``hint``, the MCP default when they are silent.

    ``destructiveHint`` and ``idempotentHint`` mean something only for a tool that is not read-only, so a
    read-only tool is never destructive.
    """
    key, default = HINTS[hint]
    given = (annotations or {}).get(key)
    if hint == "destructive" and hint_value(annotations, "read_only"):
        return False
    return given if isinstance(given, bool) else default


def given_hints(rule: ApprovalRule) -> dict[str, bool]:
    """The hints a rule needs (those it names), by their rule name."""
    hints = rule.hints.model_dump() if rule.hints else {}
    return {name: value for name, value in hints.items() if value is not None}


def matches_hints(rule: ApprovalRule, annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool's annotations say what the rule's ``hints`` need (no hints: always)."""
    return all(hint_value(annotations, name) == value for name, value in given_hints(rule).items())


def rule_matches(rule: ApprovalRule, call: Call) -> Match:
    """Whether ``rule`` matches ``call`` (see the module for how each part is read)."""
    if not _subject_matches(rule, call):
        return False
    parts = (_effects_match(rule, call), _hints_match(rule, call), _arguments_match(rule, call.arguments))
    if False in parts:
        return False
    return None if None in parts else True


def _subject_matches(rule: ApprovalRule, call: Call) -> bool:
    if rule.tool is not None:
        return call.tool is not None and fnmatchcase(call.tool, rule.tool)
    return call.mcp is not None and rule.mcp is not None and fnmatchcase(call.mcp, rule.mcp)


def _hints_match(rule: ApprovalRule, call: Call) -> Match:
    if not given_hints(rule):
        return True
    if not call.annotations_known:
        return None
    return matches_hints(rule, call.annotations)


def _effects_match(rule: ApprovalRule, call: Call) -> Match:
    if rule.effects is None:
        return True
    if not call.effects_known:
        return None
    listed = set(rule.effects)
    if rule.decision == "allow":
        return call.effects is not None and set(call.effects) <= listed
    effects = call.effects
    return effects is None or any(effect in listed or effect not in EFFECTS for effect in effects)


def _arguments_match(rule: ApprovalRule, arguments: Mapping[str, Any] | None) -> Match:
    if not rule.args:
        return True
    if arguments is None:
        return None
    eager = rule.decision != "allow"
    return all(_field_matches(match, arguments, path, eager) for path, match in rule.args.items())


_MISSING = object()


def _leaves(value: Any, steps: list[str]) -> list[Any]:
    """The values at the dotted path ``steps`` below ``value``; a list on the way stands for its items."""
    if not steps:
        return [value]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item, steps)]
    if isinstance(value, Mapping) and steps[0] in value:
        return _leaves(value[steps[0]], steps[1:])
    return [_MISSING]


def _field_matches(match: ArgMatch, arguments: Mapping[str, Any], path: str, eager: bool) -> bool:
    leaves = _leaves(arguments, path.split("."))
    if match.in_ is None and not _is_equals(match):  # a glob, a regex or a range: item by item
        leaves = [item for leaf in leaves for item in (leaf if isinstance(leaf, list) else [leaf])]
    results = [leaf is not _MISSING and _value_matches(match, leaf, eager) for leaf in leaves]
    if eager:
        return any(results)
    return bool(results) and all(results)


def _is_equals(match: ArgMatch) -> bool:
    return "equals" in match.model_fields_set


def _value_matches(match: ArgMatch, value: Any, eager: bool) -> bool:
    if match.glob is not None:
        return isinstance(value, str) and _glob_matches(match.glob, value, eager)
    if match.compiled is not None:
        pattern = match.compiled
        return isinstance(value, str) and _text_matches(
            lambda text: bool(pattern.fullmatch(text)), value, eager
        )
    if match.in_ is not None:
        return any(_equal_text(expected, value, eager) for expected in match.in_)
    if _is_equals(match):
        return _equal_text(match.equals, value, eager)
    return _in_range(match, value)


def _in_range(match: ArgMatch, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    low = match.min if match.min is not None else value
    high = match.max if match.max is not None else value
    return bool(low <= value <= high)


def _has_parent_step(text: str) -> bool:
    return ".." in text.split("/")


def _lexical(text: str) -> str:
    """``text`` with ``//``, ``.`` and ``..`` resolved as words of a path (nothing on disk is asked)."""
    return posixpath.normpath(text) if text else text


def _text_matches(test: Callable[[str], bool], text: str, eager: bool) -> bool:
    if eager:
        return test(text) or test(_lexical(text))
    return not _has_parent_step(text) and test(text)


def _glob_matches(glob: str, text: str, eager: bool) -> bool:
    if eager:
        return glob_regex(glob).fullmatch(text) is not None or (
            glob_regex(_lexical(glob)).fullmatch(_lexical(text)) is not None
        )
    try:
        normal = validate_workspace_path(text)
    except PathError:
        return False
    return glob_regex(_lexical(glob)).fullmatch(normal) is not None


def _equal_text(expected: Any, value: Any, eager: bool) -> bool:
    if same_value(expected, value):
        return True
    if eager and isinstance(expected, str) and isinstance(value, str):
        return _lexical(expected) == _lexical(value)
    return False


def same_value(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, lists and objects compared item by item."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(same_value(left[key], right[key]) for key in left)
    return type(left) is type(right) and bool(left == right)


@functools.lru_cache(maxsize=1024)
def glob_regex(glob: str) -> re.Pattern[str]:
    """The regular expression of a path glob: ``*`` and ``?`` stop at ``/``, ``**`` crosses it, and
    ``**/`` also matches no folder at all (``**/x.md`` matches ``x.md``)."""
    out: list[str] = []
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif glob[index] == "*":
            out.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(out), re.DOTALL)


__all__ = [
    "HINTS",
    "Call",
    "Match",
    "glob_regex",
    "hint_value",
    "matches_hints",
    "rule_matches",
    "same_value",
]
