"""docs/SECURITY.md cannot rot: every catalogue case is listed with tests that exist, every test named
after a case is listed under it, and exceptions and open defects are explained. Nothing is run: the
tests are collected from the sources with ``ast``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECURITY = ROOT / "docs" / "SECURITY.md"
GROUPS = {
    "P": 26,
    "A": 18,
    "O": 16,
    "R": 15,
    "M": 18,
    "W": 14,
    "E": 13,
    "T": 18,
    "S": 10,
    "U": 15,
    "V": 12,
    "X": 21,
}
STATUSES = {"pass", "exception", "open"}

_ROW = re.compile(r"^\| ([A-Z]-\d\d) \| (.+?) \| (.*?) \| ([a-z; ]+) \|$")
_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::([\w:]+)`")
_CASE_IN_NAME = re.compile(r"(?<=_)([paormwetsuvx])(\d\d)(?=_|$)")


def _definitions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Test names of a module: functions, methods of classes (``Class::name``) and assigned test cases."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and member.name.startswith(
                    "test"
                ):
                    yield f"{node.name}::{member.name}", member
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.startswith("test"):
                    yield target.id, node


def collect_tests() -> dict[str, ast.AST]:
    """Every test in ``tests/`` by node id (``tests/x/test_y.py::test_z``)."""
    found: dict[str, ast.AST] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for name, node in _definitions(ast.parse(path.read_text(encoding="utf-8"))):
            found[f"{relative}::{name}"] = node
    return found


def _is_xfail(node: ast.AST) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any("xfail" in ast.unparse(decorator) for decorator in decorators)


def read_matrix() -> dict[str, tuple[list[str], set[str]]]:
    """Case id -> (test node ids, statuses), from the matrix tables."""
    rows: dict[str, tuple[list[str], set[str]]] = {}
    for line in SECURITY.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        case, _summary, tests, status = match.groups()
        assert case not in rows, f"{case} is listed twice"
        references = [f"{path}::{name}" for path, name in _REFERENCE.findall(tests)]
        rows[case] = (references, {part.strip() for part in status.split(";")})
    return rows


@pytest.fixture(scope="module")
def tests() -> dict[str, ast.AST]:
    return collect_tests()


@pytest.fixture(scope="module")
def matrix() -> dict[str, tuple[list[str], set[str]]]:
    return read_matrix()


def test_every_case_of_the_catalogue_is_listed_once(matrix: dict[str, tuple[list[str], set[str]]]) -> None:
    expected = {f"{group}-{number:02d}" for group, count in GROUPS.items() for number in range(1, count + 1)}
    assert set(matrix) == expected
    assert len(matrix) == sum(GROUPS.values()) == 196


def test_every_case_has_tests_and_a_known_status(matrix: dict[str, tuple[list[str], set[str]]]) -> None:
    for case, (references, statuses) in matrix.items():
        assert references, f"{case} lists no test"
        assert statuses <= STATUSES, f"{case} has an unknown status {statuses}"


def test_every_test_named_on_the_page_exists(tests: dict[str, ast.AST]) -> None:
    text = SECURITY.read_text(encoding="utf-8")
    references = [f"{path}::{name}" for path, name in _REFERENCE.findall(text)]
    assert len(references) > 300
    missing = sorted({reference for reference in references if reference not in tests})
    assert missing == [], f"SECURITY.md names tests that do not exist: {missing}"


def test_every_test_named_after_a_case_is_listed_under_it(
    tests: dict[str, ast.AST], matrix: dict[str, tuple[list[str], set[str]]]
) -> None:
    unlisted = []
    for node_id in tests:
        name = node_id.rsplit("::", 1)[-1]
        for group, number in _CASE_IN_NAME.findall(name):
            case = f"{group.upper()}-{number}"
            if case in matrix and node_id not in matrix[case][0]:
                unlisted.append(f"{case}: {node_id}")
    assert unlisted == [], f"add these tests to their rows of docs/SECURITY.md: {unlisted}"


def test_exceptions_and_open_defects_are_explained(
    tests: dict[str, ast.AST], matrix: dict[str, tuple[list[str], set[str]]]
) -> None:
    text = SECURITY.read_text(encoding="utf-8")
    explained = text.split("## Exceptions, decisions and open defects", 1)[1].split("## The matrix", 1)[0]
    for case, (references, statuses) in matrix.items():
        if statuses & {"exception", "open"}:
            assert f"**{case}**" in explained, f"{case} needs its reason under Exceptions"
        expected_failures = [reference for reference in references if _is_xfail(tests[reference])]
        if expected_failures:
            assert "open" in statuses, f"{case} lists an expected failure but is not marked open"
