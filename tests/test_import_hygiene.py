"""The core never imports Textual: checked at run time and in the import-linter contract."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ditto_tui"

# Everything under ditto_tui except the UI itself and the CLI that launches it.
UI_MODULES = frozenset({"tui", "__main__"})

CORE_MODULES = (
    "ditto_tui",
    "ditto_tui.contracts",
    "ditto_tui.errors",
    "ditto_tui.signal",
    "ditto_tui.config",
    "ditto_tui.runtime",
    "ditto_tui.sandbox",
    "ditto_tui.interaction",
    "ditto_tui.supervise",
)

PROBE = """
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        found[name] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    found[name] = {
        top: sorted(m for m in sys.modules if m == top or m.startswith(top + "."))
        for top in ("textual", "temporalio")
    }
print(json.dumps(found))
"""
"""Imports the modules one after another in one fresh interpreter and says, after each, which Textual
and Temporal modules are loaded: a module that is clean after all those before it were clean is clean
alone too."""

APP_MODULES = ("ditto_tui.__main__", "ditto_tui.tui.app")
"""Probed last (they load Textual): the app and the CLI as `make run` starts them."""


def _top_level_modules() -> list[str]:
    """Every first-level module or package of ditto_tui that exists on disk, UI excluded."""
    names = {path.stem for path in PACKAGE.glob("*.py")}
    names |= {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    return sorted(f"ditto_tui.{name}" for name in names - UI_MODULES - {"__init__"})


def _modules_to_probe() -> list[str]:
    return sorted(set(CORE_MODULES) | set(_top_level_modules()))


@pytest.fixture(scope="module")
def probed() -> dict[str, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *_modules_to_probe(), *APP_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, dict[str, object]] = json.loads(proc.stdout)
    return result


@pytest.mark.parametrize("module", _modules_to_probe())
def test_core_module_does_not_import_textual(module: str, probed: dict[str, dict[str, object]]) -> None:
    found = probed[module]
    if "error" in found:
        pytest.fail(f"importing {module!r} failed: {found['error']}", pytrace=False)
    assert found["textual"] == [], f"importing {module!r} loaded {found['textual']}"


def _textual_contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    linter = config["tool"]["importlinter"]
    assert linter["root_package"] == "ditto_tui"
    return [
        contract
        for contract in linter.get("contracts", [])
        if contract.get("type") == "forbidden" and "textual" in contract.get("forbidden_modules", [])
    ]


def test_import_linter_forbids_textual() -> None:
    assert _textual_contracts(), "pyproject.toml has no import-linter contract forbidding 'textual'"


@pytest.mark.parametrize("module", [m for m in _modules_to_probe() if m != "ditto_tui"])
def test_import_linter_contract_covers_core_module(module: str) -> None:
    covered: set[str] = set()
    for contract in _textual_contracts():
        sources = contract.get("source_modules", [])
        assert isinstance(sources, list)
        covered.update(str(source) for source in sources)
    assert module in covered, f"{module!r} is missing from the contract that forbids 'textual'"


def test_the_embedded_default_never_loads_temporal(probed: dict[str, dict[str, object]]) -> None:
    """The core, the app and the CLI start without Temporal (``make run`` needs nothing else); only a
    durable host imports it, through ditto_tui.runs.temporal. The last module probed has them all loaded."""
    assert probed[APP_MODULES[-1]]["temporalio"] == []
    assert all(found.get("temporalio") == [] for found in probed.values()), probed


COMMAND_LINE_LOADS_LATER = (
    "mcp",
    "httpx",
    "ditto_tui.program",
    "ditto_tui.headless",
    "ditto_tui.session",
    "ditto_tui.infer",
    "ditto_tui.interaction.mcp",
    "ditto_tui.interaction.worker",
    "ditto_tui.gateway.serving",
    "ditto_tui.supervise.journal",
    "ditto_tui.supervise.audit",
    "ditto_tui.mcp_import",
)
"""What the command line imports only for a command that uses it: the graph and its runtime, the MCP SDK,
the gateway, the journal's readers. `inbox`, `decide` and `runs` on a durable host start without them."""


def test_the_command_line_loads_a_commands_modules_only_when_that_command_runs() -> None:
    script = (
        "import json, sys\n"
        "import ditto_tui.__main__\n"
        "print(json.dumps(sorted(m for m in sys.modules if m in sys.argv[1:])))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *COMMAND_LINE_LOADS_LATER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(proc.stdout) == []


@pytest.mark.parametrize("package", ["ditto_tui.interaction", "ditto_tui.supervise", "ditto_tui.gateway"])
def test_a_lazy_package_exports_exactly_the_names_it_loads_and_each_loads(package: str) -> None:
    """A package that loads its names on first use lists them twice (``__all__`` for the type checker,
    the name-to-module map for the loader): the two say the same, and every name is where the map says."""
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(module._MODULE_OF)
    for name in module.__all__:
        assert getattr(module, name) is getattr(importlib.import_module(module._MODULE_OF[name]), name)
