"""Sandbox.read_text and Sandbox.write_text: permissions, limits, atomic replacement, refused links."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from ditto_tui.errors import DittoError, PathError, PermissionDeniedError, ValidationError
from tests.sandbox.hostile_tree import Hostile


def _error(call: object, hostile: Hostile) -> DittoError:
    assert callable(call)
    with pytest.raises(DittoError) as caught:
        call()
    hostile.assert_clean(str(caught.value))
    return caught.value


def test_read_needs_the_read_permission(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(write=True, execute=True)
    error = _error(lambda: sandbox.read_text("sub/inner.txt"), hostile)
    assert isinstance(error, PermissionDeniedError) and error.code == "read_not_allowed"


def test_write_needs_the_write_permission(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    error = _error(lambda: sandbox.write_text("new.txt", "x"), hostile)
    assert isinstance(error, PermissionDeniedError) and error.code == "write_not_allowed"
    assert not (hostile.root / "new.txt").exists()


def test_o05_invalid_utf8_is_refused_as_text(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    error = _error(lambda: sandbox.read_text("invalid_utf8"), hostile)
    assert isinstance(error, ValidationError) and error.code == "not_utf8"


def test_size_limit_is_exact(hostile: Hostile) -> None:
    (hostile.root / "ten").write_bytes(b"0123456789")
    sandbox = hostile.sandbox(read=True)
    assert sandbox.read_text("ten", max_bytes=10) == "0123456789"
    assert _error(lambda: sandbox.read_text("ten", max_bytes=9), hostile).code == "file_too_large"


def test_o01_sparse_2gib_file_is_refused_without_reading_it(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    started = time.monotonic()
    assert _error(lambda: sandbox.read_text("big"), hostile).code == "file_too_large"
    assert time.monotonic() - started < 0.5


def test_one_megabyte_line_reads_whole(hostile: Hostile) -> None:
    assert hostile.sandbox(read=True).read_text("oneline") == "x" * (1024 * 1024)


def test_invalid_read_limit_refused(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    assert _error(lambda: sandbox.read_text("sub/inner.txt", max_bytes=-1), hostile).code == "invalid_limit"


def test_missing_file_is_not_found(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True)
    assert _error(lambda: sandbox.read_text("sub/missing.txt"), hostile).code == "not_found"


def test_write_creates_and_replaces(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True, write=True)
    sandbox.write_text("sub/new.txt", "h\u00e9llo")
    assert (hostile.root / "sub" / "new.txt").read_text(encoding="utf-8") == "h\u00e9llo"
    sandbox.write_text("dirlink_inside/new.txt", "again")
    assert sandbox.read_text("sub/new.txt") == "again"
    assert not [name for name in os.listdir(hostile.root / "sub") if name.startswith(".ditto-")]


def test_write_keeps_the_mode_of_the_replaced_file(hostile: Hostile) -> None:
    target = hostile.root / "sub" / "inner.txt"
    target.chmod(0o600)
    hostile.sandbox(write=True).write_text("sub/inner.txt", "changed")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("path", ["link_inside", "link_abs", "dangling", "loop_a"])
def test_write_refuses_a_final_symlink(hostile: Hostile, path: str) -> None:
    sandbox = hostile.sandbox(write=True)
    assert _error(lambda: sandbox.write_text(path, "pwned"), hostile).code == "is_symlink"
    assert (hostile.outside / "secret.txt").read_text() == hostile.token
    assert (hostile.root / "sub" / "inner.txt").read_text() == "inner\n"
    assert not (hostile.outside / "nope").exists()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("dirlink/new.txt", "outside_workspace"),
        ("rootlink/tmp/new.txt", "outside_workspace"),
        ("sub", "is_directory"),
        (".", "is_directory"),
        ("nodir/new.txt", "not_found"),
        ("fifo", "not_regular_file"),
        ("../new.txt", "path_traversal"),
        ("/tmp/new.txt", "absolute_path"),
    ],
)
def test_write_refusals(hostile: Hostile, path: str, code: str) -> None:
    sandbox = hostile.sandbox(write=True)
    error = _error(lambda: sandbox.write_text(path, "x"), hostile)
    assert isinstance(error, PathError) and error.code == code
    assert sorted(os.listdir(hostile.outside)) == ["back", "secret.txt"]


def test_write_refuses_unencodable_text(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(write=True)
    assert _error(lambda: sandbox.write_text("new.txt", "a\udcffb"), hostile).code == "not_utf8"
    assert not (hostile.root / "new.txt").exists()


def test_readers_never_see_half_a_file(hostile: Hostile) -> None:
    sandbox = hostile.sandbox(read=True, write=True)
    versions = ["A" * 200_000, "B" * 200_000]
    sandbox.write_text("doc.txt", versions[0])
    seen: set[str] = set()
    done = threading.Event()

    def read_until_done() -> None:
        while not done.is_set():
            seen.add(sandbox.read_text("doc.txt"))

    reader = threading.Thread(target=read_until_done)
    reader.start()
    try:
        for index in range(30):
            sandbox.write_text("doc.txt", versions[index % 2])
    finally:
        done.set()
        reader.join()
    assert seen and seen <= set(versions)


def test_o11_device_node_is_refused_without_opening(hostile: Hostile) -> None:
    try:
        os.mknod(hostile.root / "devzero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        pytest.skip("device nodes cannot be created here")
    sandbox = hostile.sandbox(read=True)
    assert _error(lambda: sandbox.read_text("devzero"), hostile).code == "not_regular_file"
