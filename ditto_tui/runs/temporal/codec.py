"""Every payload a durable run stores, encrypted with the user's own key.

The Temporal server keeps a run's history: its graph, its input, each node's output, each request and
each decision. :class:`KeyCodec` encrypts each payload with AES-256-GCM under a key kept in the user
config directory (``durable.key``, mode 0600, made on first use), so the server, and whoever reads its
database, holds no plain arguments. A payload that does not decrypt under the key (another user's, a
forged or altered one, a plain one a client without the key sent) is decoded as :data:`FOREIGN`, a value
that carries none of it: the workflow refuses a run started with it (nothing runs) and a decision made
with it (refused and recorded), and a listing shows nothing of it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from ditto_tui.errors import DittoError
from ditto_tui.home import config_dir, open_private

KEY_FILE = "durable.key"
ENCODING = b"binary/ditto-aes256gcm"
_KEY_BYTES = 32
_NONCE_BYTES = 12


FOREIGN_MARK = "__ditto_foreign__"
FOREIGN = {FOREIGN_MARK: "not made with your key"}
"""What a payload this user's key did not make decodes to: nothing of what it held."""
_FOREIGN_PAYLOAD = Payload(
    metadata={"encoding": b"json/plain"}, data=json.dumps(FOREIGN, separators=(",", ":")).encode()
)


def is_foreign(value: object) -> bool:
    """Whether ``value`` is (or holds at its top) a payload not made with the user's key."""
    return isinstance(value, dict) and FOREIGN_MARK in value


def key_path() -> Path:
    """Where the user's durable-run key lives."""
    return config_dir() / KEY_FILE


def load_key(path: Path | None = None, *, create: bool = True) -> bytes:
    """The user's key: read from ``path`` (a private regular file, never a link), made there when missing."""
    path = path or key_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise DittoError(f"no durable-run key at {str(path)!r}") from None
        return _make_key(path)
    except OSError as exc:
        raise DittoError(f"cannot read the durable-run key {str(path)!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DittoError(f"the durable-run key {str(path)!r} is not a regular file")
        if info.st_mode & 0o077:
            raise DittoError(
                f"the durable-run key {str(path)!r} can be read by others (mode {info.st_mode & 0o777:o}): "
                "run chmod 600 on it"
            )
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise DittoError(f"the durable-run key {str(path)!r} is not {_KEY_BYTES} bytes long")
    return key


def _make_key(path: Path) -> bytes:
    key = AESGCM.generate_key(bit_length=_KEY_BYTES * 8)
    try:
        fd = open_private(path, exclusive=True)
    except DittoError:
        if path.exists():  # another process made it first: use theirs
            return load_key(path, create=False)
        raise
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


class KeyCodec(PayloadCodec):
    """AES-256-GCM over each payload (its metadata and data), a fresh random nonce each time."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._seal(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._open(payload) for payload in payloads]

    def _seal(self, payload: Payload) -> Payload:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, payload.SerializeToString(), ENCODING)
        return Payload(metadata={"encoding": ENCODING}, data=nonce + sealed)

    def _open(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return _FOREIGN_PAYLOAD
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            plain = self._aead.decrypt(nonce, sealed, ENCODING)
        except Exception:  # InvalidTag: another key, or altered on the way
            return _FOREIGN_PAYLOAD
        opened = Payload()
        opened.ParseFromString(plain)
        return opened
