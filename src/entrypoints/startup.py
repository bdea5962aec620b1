"""Why the service does not start: :class:`StartupError`.

Raised where something the configuration names cannot be opened or used (the composition root,
the development additions, the worker processes' supervisor) and printed by the command line as
one line on standard error, with exit status 2. The module imports nothing, so that each of
them imports it without importing the others.
"""

from __future__ import annotations


class StartupError(Exception):
    """The service cannot start as configured; the text is one line for stderr."""
