"""The service's key file: a private JWKS of every key it signs with, each with a ``kid`` of
its own. The first key of each kind signs:

* session keys (EC P-256 for ES256, or OKP Ed25519 for EdDSA): session tokens, and the ID
  tokens of clients that register ES256;
* RSA keys (RS256, at least 2048 bits): the OpenID Provider's ID tokens by default (OIDC Core
  15.1), access tokens and logout tokens; needed only when clients are registered.

Every key verifies and is published, so a key is rotated by putting a new one first
(:func:`rotate_key_file`) and removed once the tokens it signed have expired
(:func:`prune_key_file`). A key the service writes carries ``created`` (Unix seconds, kept out
of the published JWKS): when it was added, so when its predecessor stopped signing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import itertools
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet, RSAKey

from authgate.adapters.files import create_private_file, make_private_dirs, warn_if_exposed

ALGORITHMS = {"EC": "ES256", "OKP": "EdDSA"}  # the session keys' types and algorithms
RSA_ALGORITHM = "RS256"
RSA_BITS = 2048
CREATED = "created"  # the private file's member: when the key was added (Unix seconds)


class SessionKeyError(Exception):
    """The key file is missing, unreadable or holds no usable signing key."""


def _parameters(created: int | None) -> Any:
    stamp = int(time.time()) if created is None else created
    # joserfc keeps members it does not know (its KeyParameters type lists only JWK's own).
    return {"kid": uuid.uuid4().hex, "use": "sig", CREATED: stamp}


def new_signing_key(created: int | None = None) -> ECKey:
    """A fresh ES256 session key with a random kid, stamped with its creation time
    (``created``, Unix seconds; now by default)."""
    return ECKey.generate_key("P-256", parameters=_parameters(created))


def new_rsa_key(created: int | None = None) -> RSAKey:
    """A fresh RS256 key (2048 bits) with a random kid, stamped like a session key."""
    parameters = _parameters(created)
    parameters["alg"] = RSA_ALGORITHM
    return RSAKey.generate_key(RSA_BITS, parameters=parameters)


def ephemeral_keys(*, rsa: bool = False) -> KeySet:
    """Keys that live as long as the process (for documents and tests, never for sessions);
    with ``rsa``, an RSA key beside the session key."""
    keys: list[Key] = [new_signing_key()]
    if rsa:
        keys.append(new_rsa_key())
    return KeySet(keys)


def is_session_key(key: Key) -> bool:
    """Whether ``key`` is of the kind that signs session tokens (EC or OKP)."""
    return key.key_type in ALGORITHMS


def algorithm_of(key: Key) -> str:
    """The one algorithm the service signs with ``key``."""
    return RSA_ALGORITHM if key.key_type == "RSA" else ALGORITHMS[key.key_type]


def public_jwks(keys: KeySet) -> dict[str, Any]:
    """The published form of the key set: every key's public members, with the algorithm it
    signs with and ``use: sig`` (the private file's own members left out)."""
    return {
        "keys": [
            {
                **{m: v for m, v in k.as_dict(private=False).items() if m != CREATED},
                "alg": algorithm_of(k),
                "use": "sig",
            }
            for k in keys.keys
        ]
    }


def load_or_create_keys(path: str | Path, create: bool, *, rsa: bool = False) -> KeySet:
    """Load the private JWKS; ``rsa``: an RSA key is needed (clients are registered). With
    ``create``, what is missing is written (a fresh 0600 file, or an RSA key added), processes
    starting together taking turns so they all load the same keys; without, a missing file or
    RSA key is a :class:`SessionKeyError` that says so."""
    path = Path(path)
    if path.exists():
        warn_if_exposed(path, "the session key file")
        raw, keys = _read_key_file(path)
        if not rsa or _has_rsa(raw):
            return keys
        if not create:
            raise SessionKeyError(
                f"session key file {path} holds no RSA key, which signs the OpenID Provider's "
                "ID and access tokens (clients are registered): `authgate keys rotate` adds "
                "one, or session.generate_keys: true creates it at start"
            )
    elif not create:
        raise missing_key_file(path)
    with _exclusive(path, make_folders=True):
        if not path.exists():
            _create_key_file(path, rsa)
        else:
            raw, _ = _read_key_file(path)
            if rsa and not _has_rsa(raw):  # another process may have added it meanwhile
                _write_key_file(path, [*raw, new_rsa_key().as_dict(private=True)])
    _, keys = _read_key_file(path)
    return keys


def missing_key_file(path: str | Path) -> SessionKeyError:
    """The error for a key file that is not there and will not be made, saying how to make one."""
    return SessionKeyError(
        f"session key file {path} does not exist (set session.generate_keys: true to create "
        "one on first start)"
    )


def _create_key_file(path: Path, rsa: bool) -> None:
    keys = [new_signing_key().as_dict(private=True)]  # made first: written at once once created
    if rsa:
        keys.append(new_rsa_key().as_dict(private=True))
    try:  # None: a process that does not take turns (an older version) just created it
        fd = create_private_file(path)
    except OSError as e:
        raise SessionKeyError(f"session key file {path}: {e.strerror or e}") from None
    if fd is not None:
        with os.fdopen(fd, "w") as f:
            json.dump({"keys": keys}, f)


@contextlib.contextmanager
def _exclusive(path: Path, *, make_folders: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on the key file's folder (made first with ``make_folders``), so
    that processes create or change the file in turn; no lock file is left beside the keys."""
    try:
        if make_folders:
            make_private_dirs(path.parent)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError as e:
        raise SessionKeyError(f"session key file {path}: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _has_rsa(raw: list[dict[str, Any]]) -> bool:
    return any(k.get("kty") == "RSA" for k in raw)


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
        usable = is_session_key(stored) or (
            isinstance(stored, RSAKey) and stored.public_key.key_size >= RSA_BITS
        )
        if not usable or not stored.is_private or not isinstance(stored.kid, str):
            raise SessionKeyError(
                f"session key file {path}: every key must be a private EC (P-256), OKP "
                f"(Ed25519) or RSA (at least {RSA_BITS} bits) key with a kid"
            )
    if not any(is_session_key(k) for k in keys.keys):
        raise SessionKeyError(f"session key file {path}: no EC or OKP key to sign sessions")
    kids = [k.kid for k in keys.keys]
    if "" in kids or len(set(kids)) != len(kids):
        raise SessionKeyError(f"session key file {path}: every key needs a kid of its own")
    return list(data["keys"]), keys


@attrs.frozen
class StoredKey:
    """One key of the file as an operator sees it (``created`` None: written before keys were
    stamped)."""

    kid: str
    created: int | None
    algorithm: str = "ES256"


def _stored(raw: Mapping[str, Any]) -> StoredKey:
    created = raw.get(CREATED)
    ok = isinstance(created, int) and not isinstance(created, bool)
    kty = str(raw.get("kty"))
    algorithm = RSA_ALGORITHM if kty == "RSA" else ALGORITHMS.get(kty, "")
    return StoredKey(str(raw["kid"]), created if ok else None, algorithm)


def _kind(raw: Mapping[str, Any]) -> str:
    """Which keys succeed one another: the session keys, and the RSA keys."""
    return "rsa" if raw.get("kty") == "RSA" else "session"


def rotate_key_file(path: str | Path, now: dt.datetime, *, rsa: bool = False) -> list[StoredKey]:
    """Put a new session key first in the key file, and a new RSA key when ``rsa`` or the file
    holds one, keeping every other key; the keys added (signing once instances restart)."""
    path = Path(path)
    stamp = int(now.timestamp())
    with _exclusive(path):
        raw, _ = _read_key_file(path)
        added: list[Key] = [new_signing_key(stamp)]
        if rsa or _has_rsa(raw):
            added.append(new_rsa_key(stamp))
        _write_key_file(path, [*(k.as_dict(private=True) for k in added), *raw])
    return [_stored(k.as_dict(private=False)) for k in added]


def prune_key_file(
    path: str | Path, now: dt.datetime, retired_for: dt.timedelta
) -> list[StoredKey]:
    """Remove the keys that stopped signing (their successor's ``created``) more than
    ``retired_for`` ago; the keys removed. A signing key, or one whose successor has no
    ``created``, is never removed."""
    path = Path(path)
    limit = now.timestamp() - retired_for.total_seconds()
    with _exclusive(path):
        raw, _ = _read_key_file(path)
        retired: list[int] = []  # positions in the file
        for kind in ("session", "rsa"):
            positions = [i for i, k in enumerate(raw) if _kind(k) == kind]
            for successor, key in itertools.pairwise(positions):
                retired_at = _stored(raw[successor]).created
                if retired_at is not None and retired_at <= limit:
                    retired.append(key)
        if retired:
            _write_key_file(path, [k for i, k in enumerate(raw) if i not in retired])
    return [_stored(raw[i]) for i in sorted(retired)]


def list_key_file(path: str | Path) -> list[StoredKey]:
    """The file's keys in its order (the first of each kind signs)."""
    raw, _ = _read_key_file(Path(path))
    return [_stored(k) for k in raw]


def _write_key_file(path: Path, keys: list[dict[str, Any]]) -> None:
    """Replace the key file atomically (a new file flushed, then renamed over it): a reader
    sees the old file or the new one, never a part. mkstemp makes it 0600 whatever the umask."""
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
    with contextlib.suppress(OSError):  # the rename survives a crash once the folder is flushed
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
