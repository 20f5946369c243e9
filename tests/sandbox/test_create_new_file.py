"""create_new_file: a new file below the workspace, its folders made on the way, never through a link."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.errors import PathError
from ditto_tui.sandbox._files import create_new_file
from tests.sandbox.hostile_tree import Hostile

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _refusal(hostile: Hostile, path: str, data: bytes = b"new") -> PathError:
    with pytest.raises(PathError) as caught:
        create_new_file(hostile.root, path, data)
    hostile.assert_clean(str(caught.value))
    return caught.value


def _outside_listing(hostile: Hostile) -> list[str]:
    return sorted(os.listdir(hostile.outside))


def test_a_new_file_lands_in_new_nested_folders(hostile: Hostile) -> None:
    assert (
        create_new_file(hostile.root, "made/./deeper//blob.bin", b"\x00\x01bytes") == "made/deeper/blob.bin"
    )
    assert (hostile.root / "made" / "deeper" / "blob.bin").read_bytes() == b"\x00\x01bytes"
    assert create_new_file(hostile.root, "sub/empty.bin", b"") == "sub/empty.bin"
    assert (hostile.root / "sub" / "empty.bin").read_bytes() == b""


def test_an_existing_file_or_folder_is_refused_and_left_alone(hostile: Hostile) -> None:
    error = _refusal(hostile, "sub/inner.txt")
    assert error.code == "file_exists" and str(error) == "a file of that name already exists"
    assert (hostile.root / "sub" / "inner.txt").read_bytes() == b"inner\n"
    assert str(_refusal(hostile, "sub/deeper")) == "a folder of that name already exists"
    assert _refusal(hostile, "fifo").code == "file_exists"  # refused without opening it (no hang)


def test_p17_a_final_link_to_an_outside_file_is_not_written_through(hostile: Hostile) -> None:
    error = _refusal(hostile, "link_abs")
    assert error.code == "file_exists" and "symbolic link" in str(error)
    assert (hostile.outside / "secret.txt").read_text() == hostile.token
    assert _refusal(hostile, "link_inside").code == "file_exists"  # even one that stays inside
    assert (hostile.root / "sub" / "inner.txt").read_bytes() == b"inner\n"


def test_p22_a_dangling_final_link_is_not_written_through(hostile: Hostile) -> None:
    before = _outside_listing(hostile)
    error = _refusal(hostile, "dangling")
    assert error.code == "file_exists" and "symbolic link" in str(error)
    assert _outside_listing(hostile) == before and not (hostile.outside / "nope").exists()


@pytest.mark.parametrize("folder", ["dirlink", "rootlink", "proclink", "dirlink_inside", "loop_a"])
def test_p18_a_linked_folder_on_the_way_is_refused(hostile: Hostile, folder: str) -> None:
    before = _outside_listing(hostile)
    error = _refusal(hostile, f"{folder}/made/new.bin")
    assert error.code == "folder_is_link"
    assert str(error) == "a folder on the way is a symbolic link; refusing to write through it"
    assert _outside_listing(hostile) == before
    assert not (hostile.root / "sub" / "made").exists()


def test_a_file_on_the_way_is_refused(hostile: Hostile) -> None:
    assert _refusal(hostile, "sub/inner.txt/new.bin").code == "not_a_folder"
    assert _refusal(hostile, "fifo/new.bin").code == "not_a_folder"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside/new.bin", "path_traversal"),
        ("sub/../new.bin", "path_traversal"),
        ("/tmp/new.bin", "absolute_path"),
        ("a\x00b", "nul_byte"),
        ("a\nb", "control_character"),
        ("a\x1b[2Jb", "control_character"),
        ("evil\u202etxt.exe", "invisible_character"),
        ("x" * 256, "path_too_long"),
        ("a/" * 300 + "b", "path_too_long"),
        ("", "empty_path"),
        (".", "is_directory"),
    ],
)
def test_a_refused_name_touches_nothing(hostile: Hostile, path: str, code: str) -> None:
    before = sorted(os.listdir(hostile.root))
    assert _refusal(hostile, path).code == code
    assert sorted(os.listdir(hostile.root)) == before
    assert _outside_listing(hostile) == sorted(["secret.txt", "back"])


def test_p24_a_folder_swapped_for_a_link_after_it_was_entered_leads_nowhere(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap happens right after the walk made ``new``: the file still lands in the real folder."""
    real_mkdir: Callable[..., None] = os.mkdir

    def mkdir_then_swap(path: Any, *args: Any, **kwargs: Any) -> None:
        real_mkdir(path, *args, **kwargs)
        os.rename(hostile.root / "sub", hostile.root / "sub_real")
        os.symlink(hostile.outside, hostile.root / "sub")

    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    assert create_new_file(hostile.root, "sub/new/file.bin", b"inside") == "sub/new/file.bin"
    monkeypatch.undo()
    assert (hostile.root / "sub_real" / "new" / "file.bin").read_bytes() == b"inside"
    assert _outside_listing(hostile) == sorted(["secret.txt", "back"])
    assert _refusal(hostile, "sub/other.bin").code == "folder_is_link"  # the link is refused next time


class Exchanger(threading.Thread):
    """Flips ``sub`` between a real folder and a link to outside with one atomic exchange each time.

    A rename pair would leave a moment with no ``sub`` at all, where a save makes a fresh folder of
    its own; ``renameat2(RENAME_EXCHANGE)`` leaves none.
    """

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.paths = (os.fsencode(root / "sub"), os.fsencode(root / "sub_link"))
        self.stop = threading.Event()
        self.flips = 0
        self.renameat2 = ctypes.CDLL(None, use_errno=True).renameat2

    def exchange(self) -> None:
        first, second = self.paths
        if self.renameat2(_AT_FDCWD, first, _AT_FDCWD, second, _RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2 failed")

    def run(self) -> None:
        while not self.stop.is_set():
            self.exchange()
            self.exchange()
            self.flips += 1


def _exchanger(hostile: Hostile) -> Exchanger:
    os.symlink(hostile.outside, hostile.root / "sub_link")
    try:
        exchanger = Exchanger(hostile.root)
        exchanger.exchange()
        exchanger.exchange()
    except (AttributeError, OSError):
        pytest.skip("no atomic exchange of names (renameat2) here")
    return exchanger


def _save_while_swapping(hostile: Hostile, saves: int) -> Counter[str]:
    exchanger = _exchanger(hostile)
    outcomes: Counter[str] = Counter()
    exchanger.start()
    try:
        for index in range(saves):
            try:
                create_new_file(hostile.root, f"sub/new-{index}.bin", hostile.token.encode())
                outcomes["created"] += 1
            except PathError as error:
                hostile.assert_clean(str(error))
                outcomes[error.code] += 1
    finally:
        exchanger.stop.set()
        exchanger.join()
    assert exchanger.flips > 0
    return outcomes


def test_p24_a_folder_flipping_to_an_outside_link_never_receives_a_byte(hostile: Hostile) -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        outcomes = _save_while_swapping(hostile, saves=3000)
    finally:
        sys.setswitchinterval(interval)
    assert set(outcomes) <= {"created", "folder_is_link"}
    assert outcomes["created"] > 0 and outcomes["folder_is_link"] > 0
    assert _outside_listing(hostile) == sorted(["secret.txt", "back"])
    made = [name for name in os.listdir(hostile.root / "sub") if name.startswith("new-")]
    assert len(made) == outcomes["created"]
    assert all(Path(hostile.root / "sub" / name).read_text() == hostile.token for name in made)
