"""How every ``kafka-chaos`` command writes to the terminal: a progress line on stderr,
and the exit status of a problem the user can fix.

Its own module so the commands and ``cli.main`` share them without importing each other.
"""

from __future__ import annotations

import sys

EXIT_USAGE = 2
"""A user error: a wrong option, file or declaration, one line on stderr."""


def progress(line: str) -> None:
    """One line of what a command is doing, on stderr, shown at once."""
    print(f"[kafka-chaos] {line}", file=sys.stderr, flush=True)
