"""Fixtures for the command tools: the hostile tree of ADVERSARIAL §2.3 and a runtime over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interaction.commands.command_harness import CommandHarness
from tests.sandbox.hostile_tree import Hostile, build_hostile_tree


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    """A fresh hostile workspace with an outside canary."""
    return build_hostile_tree(tmp_path)


@pytest.fixture
def harness(hostile: Hostile) -> CommandHarness:
    """The 14 tools with default limits, granted ``tools`` + ``execute`` over the hostile workspace."""
    return CommandHarness(hostile.root)
