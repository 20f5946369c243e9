"""Test-wide settings: the Hypothesis profile (``HYPOTHESIS_PROFILE``) and the ``property`` marker.

``make test`` runs every property with the bounded example counts written beside it; ``make fuzz`` sets
``HYPOTHESIS_PROFILE=fuzz`` and runs only the tests marked ``property`` (every Hypothesis test is
marked automatically), each with many more examples (see ``tests/properties.py``).

Every test runs with ``DITTO_TUI_HOME`` set to a directory of its own, so that no test reads or writes
the real user config and state directories (journals, logs, the trust store); module- and
session-scoped fixtures, which run outside any one test, get a home of the session's.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

FUZZ_EXAMPLES = 2_000
"""Examples of a property that names no count of its own, under the fuzz profile."""

settings.register_profile(
    "fuzz",
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session", autouse=True)
def ditto_session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private ``DITTO_TUI_HOME`` for everything the session runs outside a test (shared fixtures).

    The real config and state directories are checked at the end: one the suite created means some
    test, or a process it started, wrote to the user's home, and the session fails saying which.
    """
    real = _real_dirs()
    absent = [path for path in real if not path.exists()]
    home = str(tmp_path_factory.mktemp("ditto-session-home"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DITTO_TUI_HOME", home)
        patch.setenv("DITTO_TUI_NOTIFY", "off")  # no bells or desktop notifications from the suite
        for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
            patch.delenv(name, raising=False)
        yield home
    created = [str(path) for path in absent if path.exists()]
    assert not created, f"the suite wrote to the real home directory: {created}"


def _real_dirs() -> list[Path]:
    """The user's own ditto-tui config and state directories, as they are without DITTO_TUI_HOME."""
    from ditto_tui.home import HOME_VARIABLE, config_dir, state_dir

    env = {name: value for name, value in os.environ.items() if name != HOME_VARIABLE}
    return [config_dir(env), state_dir(env)]


@pytest.fixture(autouse=True)
def ditto_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private ``DITTO_TUI_HOME`` for this test (also seen by the processes it starts)."""
    home = str(tmp_path_factory.mktemp("ditto-home"))
    monkeypatch.setenv("DITTO_TUI_HOME", home)
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


ARMING_SECONDS_IN_TESTS = 0.2
"""How long decision views here wait before their keys work (ARM_SECONDS, 0.5 s in the app)."""

_REAL_ARMING = "u09"
"""Tests of the arming itself (ADVERSARIAL U-09, named after it) keep the app's delay."""


@pytest.fixture(autouse=True)
def quick_arming(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision views arm their keys (and keys come back after a modal closes) sooner than in the app.

    Waiting for the arming is most of many TUI tests' time, and what they check does not depend on
    its length; the tests of arming itself keep the app's delay, and a test may still set its own.
    """
    keys = sys.modules.get("ditto_tui.tui.keys")  # loaded by the TUI tests only
    if keys is None or _REAL_ARMING in request.node.name or _REAL_ARMING in request.module.__name__:
        return
    monkeypatch.setattr(keys, "ARM_SECONDS", ARMING_SECONDS_IN_TESTS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "property: a Hypothesis property (make fuzz runs these only)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and is_hypothesis_test(item.obj):
            item.add_marker(pytest.mark.property)


TEST_PROCESS_GC_THRESHOLD = (50_000, 20, 100)
"""The collector's thresholds in the test process (CPython's are 700, 10, 10)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """The test process holds every module and fixture the suite imported, a heap the app never has:
    each full collection walked all of it (up to a second, O-16 saw), and the young collections ran
    thousands of times per file. What collection built is frozen out of the collector's walks and the
    thresholds raised: a tenth of the tests' time went to collecting, now less than half of that. The
    processes the tests start (the app, the CLI, servers) keep CPython's defaults."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*TEST_PROCESS_GC_THRESHOLD)
