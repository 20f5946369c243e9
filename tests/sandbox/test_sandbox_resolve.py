"""Symlink-aware resolution and reads against the hostile tree (ADVERSARIAL P-09, P-15…P-26)."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from ditto_tui.errors import DittoError, PathError
from ditto_tui.sandbox import Sandbox, SandboxPermissions, resolve_workspace_path
from tests.sandbox.hostile_tree import ODD_NAMES, Hostile, Swapper


def _refusal(call: object, hostile: Hostile) -> PathError:
    assert callable(call)
    with pytest.raises(PathError) as caught:
        call()
    hostile.assert_clean(str(caught.value))
    return caught.value


def _refused_everywhere(hostile: Hostile, path: str) -> set[str]:
    """Codes of ``resolve`` and ``read_text`` refusing ``path``; both must refuse without leaking."""
    sandbox = hostile.sandbox(read=True)
    codes = {_refusal(lambda: sandbox.resolve(path), hostile).code}
    codes.add(_refusal(lambda: sandbox.read_text(path), hostile).code)
    return codes


def test_p09_dot_resolves_to_root_but_is_not_readable(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve(".") == "."
    assert _refusal(lambda: sandbox.read_text("."), hostile).code == "is_directory"
    assert _refusal(lambda: sandbox.read_text("sub/"), hostile).code == "is_directory"


@pytest.mark.parametrize("path", ["\uff0e\uff0e\uff0fetc", "\u2215etc", "..%2f"])
def test_p15_literal_names_are_simply_not_found(hostile: Hostile, path: str) -> None:
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve(path) == path
    assert _refusal(lambda: sandbox.read_text(path), hostile).code == "not_found"


def test_p15_percent_encoded_parent_is_a_missing_directory(hostile: Hostile) -> None:
    assert _refused_everywhere(hostile, "%2e%2e/etc/passwd") == {"not_found"}


def test_p16_nfc_and_nfd_are_different_names(hostile: Hostile) -> None:
    (hostile.root / "caf\u00e9").write_text("nfc")
    sandbox = hostile.sandbox(read=True)
    assert sandbox.read_text("caf\u00e9") == "nfc"
    assert _refusal(lambda: sandbox.read_text("cafe\u0301"), hostile).code == "not_found"


@pytest.mark.parametrize("path", ["link_abs", "link_rel"])
def test_p17_symlink_to_outside_refused(hostile: Hostile, path: str) -> None:
    sandbox = hostile.sandbox(read=True)
    error = _refusal(lambda: sandbox.read_text(path), hostile)
    assert (error.code, error.message) == ("outside_workspace", "path resolves outside workspace")
    assert _refusal(lambda: sandbox.resolve(path), hostile).code == "outside_workspace"


@pytest.mark.parametrize("path", ["dirlink", "dirlink/secret.txt", "dirlink/back", "dirlink/"])
def test_p18_symlinked_directory_refused(hostile: Hostile, path: str) -> None:
    assert _refused_everywhere(hostile, path) == {"outside_workspace"}


@pytest.mark.parametrize("path", ["proclink", "proclink/etc/passwd", "rootlink", "rootlink/etc/passwd"])
def test_p19_magic_and_root_links_refused(hostile: Hostile, path: str) -> None:
    assert _refused_everywhere(hostile, path) == {"outside_workspace"}


def test_p20_chain_inside_inside_outside_refused(hostile: Hostile) -> None:
    assert _refused_everywhere(hostile, "chain_1") == {"outside_workspace"}


def test_p20_chain_inside_outside_inside_refused(hostile: Hostile) -> None:
    assert _refused_everywhere(hostile, "out_and_back") == {"outside_workspace"}


def test_p21_symlink_loop_is_a_sanitised_error(hostile: Hostile) -> None:
    started = time.monotonic()
    assert _refused_everywhere(hostile, "loop_a") == {"symlink_loop"}
    assert _refused_everywhere(hostile, "loop_b/x") == {"symlink_loop"}
    assert time.monotonic() - started < 1


def test_p22_dangling_link_to_outside_refused_without_target(hostile: Hostile) -> None:
    assert _refused_everywhere(hostile, "dangling") == {"outside_workspace"}


def test_p23_sibling_prefix_is_not_inside(hostile: Hostile) -> None:
    assert str(hostile.sibling).startswith(str(hostile.root))
    assert _refused_everywhere(hostile, "sibling_link") == {"outside_workspace"}


def test_p23_absolute_target_into_sibling_refused(hostile: Hostile) -> None:
    os.symlink(f"{hostile.sibling}/secret.txt", hostile.root / "sibling_abs")
    assert _refused_everywhere(hostile, "sibling_abs") == {"outside_workspace"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("link_inside", "sub/inner.txt"),
        ("link_inside_abs", "sub/inner.txt"),
        ("dirlink_inside/inner.txt", "sub/inner.txt"),
        ("dirlink_inside", "sub"),
        ("up_and_in", "sub/inner.txt"),
        ("dirlink_inside/deeper/leaf.txt", "sub/deeper/leaf.txt"),
    ],
)
def test_links_that_stay_inside_are_followed(hostile: Hostile, path: str, expected: str) -> None:
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve(path) == expected
    if expected.endswith(".txt"):
        assert sandbox.read_text(path) == (hostile.root / expected).read_text()


def test_missing_final_component_resolves_missing_parent_does_not(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve("dirlink_inside/new.txt") == "sub/new.txt"
    assert _refused_everywhere(hostile, "nodir/x") == {"not_found"}
    assert _refused_everywhere(hostile, "sub/inner.txt/x") == {"not_a_directory"}


def test_resolve_workspace_path_validates_first(hostile: Hostile) -> None:
    with pytest.raises(PathError) as caught:
        resolve_workspace_path(hostile.root, "../outside/secret.txt")
    assert caught.value.code == "path_traversal"


@pytest.mark.parametrize("name", ["-n", "--help", "-exec", "*", "a b"])
def test_odd_but_valid_names_are_ordinary_files(hostile: Hostile, name: str) -> None:
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve(name) == name
    assert sandbox.read_text(name) == "odd\n"


def test_fifo_is_refused_without_blocking(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    assert _refusal(lambda: sandbox.read_text("fifo"), hostile).code == "not_regular_file"


def _sweep_paths(hostile: Hostile) -> Iterator[str]:
    for name in sorted(os.listdir(hostile.root)):
        yield name
        for tail in ("secret.txt", "etc/passwd", "back", "nope", "x"):
            yield f"{name}/{tail}"


def test_canary_never_appears_anywhere(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    outcomes: Counter[str] = Counter()
    for path in _sweep_paths(hostile):
        for call in (sandbox.resolve, lambda p: sandbox.read_text(p, max_bytes=1 << 20)):
            try:
                hostile.assert_clean(str(call(path)))
                outcomes["ok"] += 1
            except DittoError as error:
                hostile.assert_clean(str(error))
                outcomes[error.code] += 1
    assert outcomes["outside_workspace"] >= 20
    assert {"ok", "symlink_loop", "is_directory", "not_regular_file", "not_utf8", "file_too_large"} <= set(
        outcomes
    )


def test_odd_names_in_the_sweep_are_really_there(hostile: Hostile) -> None:
    assert set(ODD_NAMES) <= set(os.listdir(hostile.root))


def test_p25_workspace_reached_through_a_symlink(hostile: Hostile) -> None:
    alias = hostile.base / "alias"
    os.symlink(hostile.root, alias)
    sandbox = Sandbox(SandboxPermissions(read=True), workspace=alias)
    assert sandbox.workspace == hostile.root
    assert sandbox.read_text("sub/inner.txt") == "inner\n"
    assert sandbox.read_text("link_inside_abs") == "inner\n"
    assert _refusal(lambda: sandbox.read_text("link_abs"), hostile).code == "outside_workspace"


def test_p26_hard_link_to_outside_is_a_documented_residual_risk(hostile: Hostile) -> None:
    """A hard link is the outside file itself: no path check can see it, only OS isolation can."""
    try:
        os.link(hostile.outside / "secret.txt", hostile.root / "hl")
    except OSError:
        pytest.skip("this filesystem does not allow the hard link")
    sandbox = hostile.sandbox(read=True)
    assert sandbox.resolve("hl") == "hl"
    assert sandbox.read_text("hl") == hostile.token


def _read_while_swapping(hostile: Hostile, reads: int) -> Counter[str]:
    (hostile.outside / "file").write_text(hostile.token)
    (hostile.root / "sub" / "file").write_text("inside")
    os.symlink(hostile.outside, hostile.root / "sub_link")
    sandbox = hostile.sandbox(read=True)
    swapper = Swapper(hostile.root)
    outcomes: Counter[str] = Counter()
    swapper.start()
    try:
        for _ in range(reads):
            try:
                outcomes[sandbox.read_text("sub/file")] += 1
            except PathError as error:
                hostile.assert_clean(str(error))
                outcomes[error.code] += 1
    finally:
        swapper.stop.set()
        swapper.join()
    assert swapper.flips > 0
    return outcomes


def test_p24_symlink_swap_race_never_reads_outside(hostile: Hostile) -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        outcomes = _read_while_swapping(hostile, reads=4000)
    finally:
        sys.setswitchinterval(interval)
    assert hostile.token not in outcomes
    assert set(outcomes) <= {"inside", "outside_workspace", "not_found", "path_changed"}
    assert outcomes["inside"] > 0
