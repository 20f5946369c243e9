"""The hostile fixture tree of ADVERSARIAL §2.3: a workspace full of traps next to an outside canary."""

from __future__ import annotations

import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ditto_tui.sandbox import Sandbox, SandboxPermissions

BOUNDARY = 64 * 1024
ODD_NAMES = ("-n", "--help", "-exec", "*", "a b", "a\nb", "evil\u202etxt.exe")


@dataclass(frozen=True)
class Hostile:
    """A workspace ``root`` whose links point at ``outside`` and ``sibling``, both holding ``token``."""

    base: Path
    root: Path
    outside: Path
    sibling: Path
    token: str

    def sandbox(self, *, read: bool = False, write: bool = False, execute: bool = False) -> Sandbox:
        """A sandbox over the workspace with the given boolean permissions."""
        return Sandbox(SandboxPermissions(read=read, write=write, execute=execute), workspace=self.root)

    def assert_clean(self, text: str) -> None:
        """The canary and the absolute location of the fixture never appear in ``text``."""
        assert self.token not in text
        assert str(self.base) not in text


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _links(root: Path, outside: Path) -> dict[str, str]:
    return {
        "link_abs": f"{outside}/secret.txt",
        "link_rel": "../outside/secret.txt",
        "dirlink": str(outside),
        "rootlink": "/",
        "proclink": "/proc/self/root",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "dangling": f"{outside}/nope",
        "sibling_link": "../proj2/secret.txt",
        "link_inside": "sub/inner.txt",
        "link_inside_abs": f"{root}/sub/inner.txt",
        "dirlink_inside": "sub",
        "chain_1": "chain_2",
        "chain_2": "link_abs",
        "out_and_back": "../outside/back",
        "up_and_in": "sub/../sub/inner.txt",
    }


def _fill_workspace(root: Path, outside: Path) -> None:
    _write(root / "sub" / "inner.txt", b"inner\n")
    _write(root / "sub" / "deeper" / "leaf.txt", b"leaf\n")
    for name in ODD_NAMES:
        _write(root / name, b"odd\n")
    _write(root / "oneline", b"x" * (1024 * 1024))
    _write(root / "invalid_utf8", b"ok \xff\xfe \x80 \xc0\xaf \xed\xa0\x80 \xe2\x82")
    _write(root / "boundary3", b"a" * (BOUNDARY - 1) + "\u20ac".encode())
    _write(root / "boundary4", b"a" * (BOUNDARY - 2) + "\U0001f600".encode())
    with open(root / "big", "wb") as big:
        big.truncate(2 * 1024 * 1024 * 1024)
    os.mkfifo(root / "fifo")
    for name, target in _links(root, outside).items():
        os.symlink(target, root / name)


def build_hostile_tree(tmp_path: Path) -> Hostile:
    """Build the tree under ``tmp_path``; the canary token is random for every call."""
    base = Path(os.path.realpath(tmp_path))
    token = f"CANARY-{secrets.token_hex(16)}"
    outside, root, sibling = base / "outside", base / "proj", base / "proj2"
    _write(outside / "secret.txt", token.encode())
    _write(sibling / "secret.txt", token.encode())
    os.symlink(f"{root}/sub/inner.txt", outside / "back")
    root.mkdir()
    _fill_workspace(root, outside)
    return Hostile(base=base, root=root, outside=outside, sibling=sibling, token=token)


class Swapper(threading.Thread):
    """Flips ``sub`` between a real directory and a symlink to the outside directory, by renames only.

    ``pause`` (seconds) holds each state for a moment, so that an external program has time both to
    pass the path check (real directory) and to look the path up while it leads outside (symlink).
    """

    def __init__(self, root: Path, *, pause: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.pause = pause
        self.stop = threading.Event()
        self.flips = 0

    def run(self) -> None:
        sub, real, link = self.root / "sub", self.root / "sub_real", self.root / "sub_link"
        while not self.stop.is_set():
            os.rename(sub, real)
            os.rename(link, sub)
            if self.pause:
                time.sleep(self.pause)
            os.rename(sub, link)
            os.rename(real, sub)
            if self.pause:
                time.sleep(self.pause)
            self.flips += 1
