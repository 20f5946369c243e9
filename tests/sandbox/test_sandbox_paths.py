"""Lexical path rules (ADVERSARIAL P-01…P-16) and property 1 of §2.3."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.errors import PathError
from ditto_tui.sandbox import validate_workspace_path
from tests.properties import examples


def _code(path: object) -> str:
    with pytest.raises(PathError) as caught:
        validate_workspace_path(path)
    assert "\n" not in caught.value.message
    return caught.value.code


@pytest.mark.parametrize("path", ["../x", "..", "x/..", "a/../../x"])
def test_p01_p02_traversal_refused(path: str) -> None:
    assert _code(path) == "path_traversal"


@pytest.mark.parametrize("path", ["a/..", "a/../b", "./../a"])
def test_p03_traversal_that_stays_inside_is_refused_too(path: str) -> None:
    assert _code(path) == "path_traversal"


@pytest.mark.parametrize("path", ["..foo", "foo..", "...", "a/..b/c.."])
def test_p04_dotted_names_are_legitimate(path: str) -> None:
    assert validate_workspace_path(path) == path


@pytest.mark.parametrize("path", ["/etc/passwd", "//etc/passwd", "/"])
def test_p05_absolute_paths_refused(path: str) -> None:
    assert _code(path) == "absolute_path"


@pytest.mark.parametrize("path", ["a\\b", "..\\..\\etc\\passwd", "C:\\Windows"])
def test_p06_backslash_refused(path: str) -> None:
    assert _code(path) == "backslash"


@pytest.mark.parametrize("path", ["C:/x", "C:x", "z:", "c:/"])
def test_p07_drive_letter_refused(path: str) -> None:
    assert _code(path) == "drive_letter"


def test_p07_colon_elsewhere_is_fine() -> None:
    assert validate_workspace_path("ab:c/d:e") == "ab:c/d:e"


def test_p08_empty_path_refused() -> None:
    assert _code("") == "empty_path"


@pytest.mark.parametrize("path", [".", "./", "./.", ".//."])
def test_p09_dot_is_the_root(path: str) -> None:
    assert validate_workspace_path(path) == "."


@pytest.mark.parametrize(
    ("path", "expected"), [("a//b", "a/b"), ("./a", "a"), ("a/", "a"), ("a/./b", "a/b"), ("a/b/.", "a/b")]
)
def test_p10_lexical_normalisation(path: str, expected: str) -> None:
    assert validate_workspace_path(path) == expected


def test_p11_nul_byte_refused_before_any_syscall() -> None:
    assert _code("a\x00b") == "nul_byte"


@pytest.mark.parametrize(
    "path", ["a\nb", "a\rb", "a\x1b[2Jb", "a\x85b", "a\x7fb", "a\x9bb", "\tx", "a\u2028b"]
)
def test_p12_control_characters_refused(path: str) -> None:
    assert _code(path) == "control_character"


@pytest.mark.parametrize(
    "path", ["evil\u202etxt.exe", "a\u200bb", "a\U000e0041b", "\ufeffa", "a\u2066b", "a\u00adb"]
)
def test_p13_invisible_and_bidi_characters_refused(path: str) -> None:
    assert _code(path) == "invisible_character"


@pytest.mark.parametrize("path", ["a" * 5000, "a" * 300, "a/" * 10_000, "a/" * 257, "\u20ac" * 1366])
def test_p14_long_paths_refused_at_documented_limits(path: str) -> None:
    assert _code(path) == "path_too_long"


def test_p14_limits_are_inclusive() -> None:
    assert validate_workspace_path("a" * 255) == "a" * 255
    assert validate_workspace_path("/".join(["a"] * 256)) == "/".join(["a"] * 256)
    assert _code("\u20ac" * 86) == "path_too_long"


@pytest.mark.parametrize(
    "path", ["\uff0e\uff0e\uff0fetc", "\u2215etc", "%2e%2e/etc", "..%2f", "\u2024\u2024"]
)
def test_p15_unicode_and_percent_tricks_stay_literal(path: str) -> None:
    assert validate_workspace_path(path) == path


def test_p16_no_unicode_normalisation() -> None:
    nfd = "cafe\u0301"
    assert validate_workspace_path(nfd) == nfd
    assert validate_workspace_path(unicodedata.normalize("NFC", nfd)) == "caf\u00e9"


@pytest.mark.parametrize("path", [None, 3, b"a", Path("a"), ["a"]])
def test_non_string_paths_refused(path: object) -> None:
    assert _code(path) == "invalid_path"


def test_lone_surrogates_refused() -> None:
    assert _code("a\udcffb") == "invalid_path"


def test_messages_never_echo_the_path() -> None:
    hostile = "secret-\u202e/../x"
    with pytest.raises(PathError) as caught:
        validate_workspace_path(hostile)
    assert "secret" not in str(caught.value)


_TRICKY = st.sampled_from(
    ["/", ".", "..", "\\", "\x00", "\n", "\x85", "\u202e", "\u200b", ":", "C", "a", "\udcff"]
)
_PATHS = st.one_of(
    st.text(max_size=40), st.lists(st.one_of(_TRICKY, st.text(max_size=3)), max_size=12).map("".join)
)
_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs"}


@pytest.fixture(scope="module")
def empty_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty canonical directory, so resolution depends only on the validated path."""
    return Path(os.path.realpath(tmp_path_factory.mktemp("empty")))


@settings(max_examples=examples(300), deadline=None)
@given(path=_PATHS)
def test_property_1_validated_paths_stay_inside(path: str, empty_root: Path) -> None:
    root = empty_root
    try:
        normalised = validate_workspace_path(path)
    except PathError as error:
        assert error.code
        return
    resolved = Path(os.path.realpath(root / normalised))
    assert resolved == root or root in resolved.parents
    assert not any(unicodedata.category(char) in _FORBIDDEN_CATEGORIES for char in path)
    assert "\\" not in path and ".." not in path.split("/")
