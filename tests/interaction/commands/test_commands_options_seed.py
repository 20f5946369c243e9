"""Seed fidelity of ``create_read_only_command_tools(options)``: the config's ``interaction.commands``
group as is — the ``CommandsConfig`` object, or its mapping in either spelling."""

from __future__ import annotations

from typing import Any

import pytest

from ditto_tui.config import CommandsConfig
from ditto_tui.errors import ValidationError
from ditto_tui.interaction import create_read_only_command_tools
from ditto_tui.interaction.commands import CommandTool


def _limits(tools: list[CommandTool]) -> tuple[int, int, int]:
    limits = {
        (tool.limits.max_entries, tool.limits.max_output_bytes, tool.limits.max_error_bytes) for tool in tools
    }
    assert len(limits) == 1 and len(tools) == 14
    return limits.pop()


def test_seed_the_commands_config_object_is_accepted_as_is() -> None:
    group = CommandsConfig.model_validate({"maxEntries": 200, "maxOutputBytes": 32768, "maxErrorBytes": 1024})
    assert _limits(create_read_only_command_tools(group)) == (200, 32768, 1024)


@pytest.mark.parametrize(
    "options",
    [
        {"maxEntries": 200, "maxOutputBytes": 32768, "maxErrorBytes": 1024},
        {"max_entries": 200, "max_output_bytes": 32768, "max_error_bytes": 1024},
        {"maxEntries": 200, "max_output_bytes": 32768, "maxErrorBytes": 1024},
    ],
)
def test_seed_the_groups_mapping_is_accepted_in_either_spelling(options: dict[str, Any]) -> None:
    assert _limits(create_read_only_command_tools(options)) == (200, 32768, 1024)


def test_seed_missing_and_empty_options_take_the_seeds_defaults() -> None:
    defaults = (1000, 65536, 8192)
    assert _limits(create_read_only_command_tools()) == defaults
    assert _limits(create_read_only_command_tools(None)) == defaults
    assert _limits(create_read_only_command_tools({})) == defaults
    assert _limits(create_read_only_command_tools(CommandsConfig())) == defaults
    assert _limits(create_read_only_command_tools({"maxEntries": None, "maxErrorBytes": 4})) == (
        1000,
        65536,
        4,
    )


def test_seed_keywords_still_work_and_win_over_the_group() -> None:
    assert _limits(create_read_only_command_tools(max_entries=200, max_output_bytes=32 * 1024)) == (
        200,
        32768,
        8192,
    )
    group = CommandsConfig.model_validate({"maxEntries": 200, "maxOutputBytes": 32768})
    assert _limits(create_read_only_command_tools(group, max_entries=50)) == (50, 32768, 8192)


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"maxEntries": 0}, "invalid_limit"),
        ({"max_output_bytes": 1024 * 1024 + 1}, "invalid_limit"),
        ({"maxErrorBytes": "8192"}, "invalid_limit"),
        ({"maxEntries": True}, "invalid_limit"),
        ({"maxLines": 5}, "invalid_options"),
        ({"maxEntries": 5, "max_entries": 6}, "invalid_options"),
        ("maxEntries=5", "invalid_options"),
        (5, "invalid_options"),
    ],
)
def test_seed_options_outside_the_contract_raise(options: Any, code: str) -> None:
    with pytest.raises(ValidationError) as info:
        create_read_only_command_tools(options)
    assert info.value.code == code
