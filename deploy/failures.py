"""The two ways the deploy command stops: a bad input (exit 2) or a failed deployment (exit 1)."""

from __future__ import annotations

EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input found before any call; each problem is a sentence naming the option and the
    fix."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class DeployFailed(Exception):
    """A call or a resource failed after the command started sending; the message says where
    to look."""
