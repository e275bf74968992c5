"""How the capture command stops on bad input: a sentence naming the option and the fix, and
exit 2."""

from __future__ import annotations

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments, found before anything is written."""
