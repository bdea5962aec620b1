"""Files holding secrets (the SQLite database, the session keys, a development private key):
created 0600 in 0700 folders whatever the umask. An existing folder or file is left as it is
(an operator may have chosen its mode); a secret file others can read gets one warning.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("authgate.storage")

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Create ``path`` and its missing parents, each with mode 0700; existing ones are kept."""
    missing: list[Path] = []
    current = Path(path)
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            continue  # another process starting at the same moment made it
        # mkdir's mode is reduced by the umask (and an unusual umask could reduce it below
        # what the service needs): set it exactly.
        os.chmod(folder, DIR_MODE)


def create_private_file(path: str | os.PathLike[str]) -> int | None:
    """Create ``path`` (and its folders, see :func:`make_private_dirs`) with mode 0600 and
    return a descriptor open for writing; None when the file exists already.

    Creation is exclusive (two processes starting at once never share or clobber a file) and
    the mode is set before anything is written, so no secret is ever readable by others."""
    make_private_dirs(Path(path).parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return None
    try:
        os.fchmod(fd, FILE_MODE)  # exactly 0600, whatever the umask removed
    except BaseException:
        os.close(fd)
        raise
    return fd


def warn_if_exposed(path: str | os.PathLike[str], what: str) -> None:
    """Log a warning when an existing secret file is accessible to group or others."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return  # its opening reports the real problem
    if mode & 0o077:
        log.warning(
            "%s %s has mode %04o: it is open to group or others on this host; chmod 600 it",
            what,
            os.fspath(path),
            mode,
        )
