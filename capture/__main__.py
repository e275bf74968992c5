"""`python -m capture export`: the command line, and nothing else.

    python -m capture export CAPTURES... --out DIR [--min-answer-chars N] [--max-chars N]
                             [--system TEXT]

Bad arguments are sentences on stderr and exit 2, before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from capture.bad_input import EXIT_USAGE, UsageError
from capture.export import DEFAULT_MAX_CHARS, DEFAULT_MIN_ANSWER_CHARS, Options, export
from capture.formats import OPENAI_FILE, SHAREGPT_FILE


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m capture",
        description="Captured traffic in, a training set for a speculative-decoding drafter out.",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    export_command = commands.add_parser(
        "export",
        help="write captured conversations as a drafter training set",
        description="Read the container's capture files and SageMaker Data Capture files "
        f"(files, or folders searched for *.jsonl) and write {OPENAI_FILE} and "
        f"{SHAREGPT_FILE}: each request's messages and the target's answer, filtered and "
        "de-duplicated.",
    )
    export_command.add_argument(
        "inputs", nargs="+", type=Path, metavar="CAPTURES", help="capture files or folders"
    )
    export_command.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="folder for the two files"
    )
    export_command.add_argument(
        "--min-answer-chars",
        type=int,
        default=DEFAULT_MIN_ANSWER_CHARS,
        metavar="N",
        help="drop answers shorter than this (default %(default)s)",
    )
    export_command.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        metavar="N",
        help="drop conversations longer than this, answer included (default %(default)s)",
    )
    export_command.add_argument(
        "--system", metavar="TEXT", help="system message to put first where a request has none"
    )
    return top


def run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit:  # --help, or argparse's own usage error (exit 2)
        return int(exit.code or 0)
    options = Options(
        inputs=tuple(args.inputs),
        out_dir=args.out,
        min_answer_chars=args.min_answer_chars,
        max_chars=args.max_chars,
        system=args.system,
    )
    try:
        summary = export(options)
    except UsageError as error:
        for problem in str(error).splitlines():
            err.write(f"error: {problem}\n")
        return EXIT_USAGE
    out.write(summary.line(options.out_dir) + "\n")
    if summary.read and not summary.written:
        err.write(
            "warning: no record became a training conversation; the skip counts above say "
            "why. The inputs must be chat-completion requests with their answers.\n"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
