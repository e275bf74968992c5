"""`python -m serving serve|check`: the container's entry points."""

from __future__ import annotations

import argparse
import logging
import sys

from serving import exit_codes, logs, preflight
from serving.settings import Settings, SettingsError, load_settings

log = logging.getLogger("serving")


def checked_settings(serving: bool = True) -> Settings | None:
    """Settings and preflight; prints every problem and returns None when start-up must stop
    (`serving` False: for the `check` command, which needs no GPU).

    Logs go out in the format the settings ask for (SERVING_LOG_FORMAT), their own problems
    included."""
    try:
        settings = load_settings()
    except SettingsError as error:
        logs.configure(error.log_format)
        for problem in error.problems:
            log.error("%s", problem)
        return None
    logs.configure(settings.log_format)
    report = preflight.check(settings, serving=serving)
    for warning in report.warnings:
        log.warning("%s", warning)
    for problem in report.errors:
        log.error("%s", problem)
    log.info("%s", report.summary)
    log.info("%s", settings.agent_summary)
    return settings if report.ok else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving", description=__doc__)
    parser.add_argument("command", choices=["serve", "check"])
    args = parser.parse_args(argv)
    settings = checked_settings(serving=args.command == "serve")
    if settings is None:
        log.error("start-up stopped before loading any weights; fix the problems above.")
        return exit_codes.BAD_CONFIG
    if args.command == "check":
        return 0
    from serving.server import serve

    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
