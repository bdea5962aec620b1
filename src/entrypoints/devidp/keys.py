"""The development Apple key file (the client's ES256 private key), created when missing so
that the default configuration runs with no credentials at all."""

from __future__ import annotations

import os
from pathlib import Path

from joserfc.jwk import ECKey

from authgate.adapters.files import create_private_file


def ensure_apple_key_file(path: str | Path) -> bool:
    """Create a P-256 private key in PEM at ``path`` (mode 0600, whatever the umask; missing
    folders 0700) unless the file exists.

    Returns True when it created the file. Creation is exclusive, so two processes starting
    at once cannot overwrite each other's key.
    """
    target = Path(path)
    if target.exists():
        return False
    pem = ECKey.generate_key("P-256", private=True).as_pem(private=True)
    fd = create_private_file(target)  # its missing folders 0700
    if fd is None:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return True
