"""The service's key file: a private JWKS (``{"keys": [...]}``) of the keys it signs with.

The first key signs session tokens; every key verifies, so a key is rotated by putting a new one
first (:func:`rotate_key_file`) and removing the old one once the tokens it signed have expired
(:func:`prune_key_file`). Each key the service writes carries ``created`` (Unix seconds) besides
the JWK members: the time it was added, which is also the time the key before it stopped
signing. ``created`` stays in the private file; the published JWKS carries only the standard
members.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet

from authgate.adapters.files import create_private_file, warn_if_exposed

ALGORITHMS = {"EC": "ES256", "OKP": "EdDSA"}  # the session keys' types and algorithms
CREATED = "created"  # the private file's member: when the key was added (Unix seconds)


class SessionKeyError(Exception):
    """The key file is missing, unreadable or holds no usable signing key."""


def new_signing_key(created: int | None = None) -> ECKey:
    """A fresh ES256 signing key with a random kid, stamped with its creation time
    (``created``, Unix seconds; now by default)."""
    stamp = int(time.time()) if created is None else created
    # joserfc keeps members it does not know (its KeyParameters type lists only JWK's own).
    parameters: Any = {"kid": uuid.uuid4().hex, "use": "sig", CREATED: stamp}
    return ECKey.generate_key("P-256", parameters=parameters)


def ephemeral_keys() -> KeySet:
    """Keys that live as long as the process (for documents and tests, never for sessions)."""
    return KeySet([new_signing_key()])


def load_or_create_keys(path: str | Path, create: bool) -> KeySet:
    """Load the private JWKS; with ``create``, write a fresh ES256 key when the file is absent
    (mode 0600, its missing folders 0700)."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise SessionKeyError(
                f"session key file {path} does not exist (set session.generate_keys: true "
                "to create one on first start)"
            )
        key = new_signing_key()
        # 0600 in 0700 folders the service creates; None: another process just created it.
        try:
            fd = create_private_file(path)
        except OSError as e:
            raise SessionKeyError(f"session key file {path}: {e.strerror or e}") from None
        if fd is not None:
            with os.fdopen(fd, "w") as f:
                json.dump({"keys": [key.as_dict(private=True)]}, f)
    else:
        warn_if_exposed(path, "the session key file")
    _, keys = _read_key_file(path)
    return keys


def _read_key_file(path: Path) -> tuple[list[dict[str, Any]], KeySet]:
    """The file's keys as stored (every member kept) and as a checked key set."""
    try:
        data = json.loads(path.read_text())
        keys = KeySet.import_key_set(data)
    except (OSError, ValueError, TypeError, KeyError, JoseError) as e:
        raise SessionKeyError(f"session key file {path}: {e}") from None
    if not keys.keys:
        raise SessionKeyError(f"session key file {path}: no keys")
    for stored in keys.keys:
        if stored.key_type not in ALGORITHMS or not stored.is_private or not stored.kid:
            raise SessionKeyError(
                f"session key file {path}: every key must be a private EC (P-256) or OKP "
                "(Ed25519) key with a kid"
            )
    return list(data["keys"]), keys


@attrs.frozen
class StoredKey:
    """One key of the file as an operator sees it: its kid and when it was added (None for a
    key written before keys were stamped)."""

    kid: str
    created: int | None


def _stored(raw: Mapping[str, Any]) -> StoredKey:
    created = raw.get(CREATED)
    ok = isinstance(created, int) and not isinstance(created, bool)
    return StoredKey(str(raw["kid"]), created if ok else None)


def rotate_key_file(path: str | Path, now: dt.datetime) -> StoredKey:
    """Put a new signing key first in the existing key file, keeping every other key (they
    still verify the tokens they signed); the new key. Running instances sign with it once
    they restart. The file is replaced atomically with mode 0600."""
    path = Path(path)
    raw, _ = _read_key_file(path)
    key = new_signing_key(int(now.timestamp()))
    _write_key_file(path, [key.as_dict(private=True), *raw])
    return _stored(key.as_dict(private=False))


def prune_key_file(
    path: str | Path, now: dt.datetime, retired_for: dt.timedelta
) -> list[StoredKey]:
    """Remove the keys that stopped signing more than ``retired_for`` ago; the keys removed.

    A key stopped signing when the key before it in the file was added (that key's
    ``created``), so that is the time that counts, not the key's own age: a key added long ago
    that signed until yesterday still verifies tokens issued yesterday. The signing key (the
    first) is never removed, nor a key whose successor has no ``created`` (its age is unknown).
    The file is replaced atomically with mode 0600, and only when something is removed."""
    path = Path(path)
    raw, _ = _read_key_file(path)
    limit = now.timestamp() - retired_for.total_seconds()
    keep: list[dict[str, Any]] = raw[:1]
    removed: list[StoredKey] = []
    for successor, key in itertools.pairwise(raw):
        retired_at = _stored(successor).created
        if retired_at is not None and retired_at <= limit:
            removed.append(_stored(key))
        else:
            keep.append(key)
    if removed:
        _write_key_file(path, keep)
    return removed


def list_key_file(path: str | Path) -> list[StoredKey]:
    """The file's keys, the signing key first."""
    raw, _ = _read_key_file(Path(path))
    return [_stored(k) for k in raw]


def _write_key_file(path: Path, keys: list[dict[str, Any]]) -> None:
    """Replace the key file atomically: a new 0600 file beside it, flushed, then renamed over
    it, so a reader (a starting instance) sees the old file or the new one, never a part."""
    # mkstemp creates the file 0600 and exclusively, whatever the umask.
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"keys": keys}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise SessionKeyError(f"session key file {path}: {e.strerror or e}") from None
    try:  # the rename itself survives a crash once the folder is flushed
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
