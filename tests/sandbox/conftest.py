"""Fixtures for the sandbox tests: the hostile tree of ADVERSARIAL §2.3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.hostile_tree import Hostile, build_hostile_tree


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    """A fresh hostile workspace with an outside canary."""
    return build_hostile_tree(tmp_path)
