"""The export: records in, filtered and de-duplicated conversations out, in both formats, with
a count of what was skipped and why.

Order is deterministic: files in sorted path order, records in file order, and the first of
equal conversations kept.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capture import sources
from capture.bad_input import UsageError
from capture.conversations import Conversation, conversation_of
from capture.formats import OPENAI_FILE, SHAREGPT_FILE, json_line, openai_record, sharegpt_record
from capture.types import Skip, Skipped

DEFAULT_MIN_ANSWER_CHARS = 1
DEFAULT_MAX_CHARS = 32000


@dataclass(frozen=True)
class Options:
    inputs: tuple[Path, ...]
    out_dir: Path
    min_answer_chars: int = DEFAULT_MIN_ANSWER_CHARS
    max_chars: int = DEFAULT_MAX_CHARS
    system: str | None = None

    @property
    def outputs(self) -> tuple[Path, Path]:
        return self.out_dir / OPENAI_FILE, self.out_dir / SHAREGPT_FILE


@dataclass
class Summary:
    files: int = 0
    read: int = 0
    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: Skip) -> None:
        self.skipped[reason.value] += 1

    def line(self, out_dir: Path) -> str:
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(self.skipped.items()))
        files = f"{self.files} file" + ("" if self.files == 1 else "s")
        return (
            f"read {self.read} records from {files}; wrote {self.written} to "
            f"{out_dir} ({OPENAI_FILE}, {SHAREGPT_FILE}); skipped {self.skipped.total()}"
            + (f": {reasons}" if reasons else "")
        )


def option_problems(options: Options) -> list[str]:
    problems = []
    if options.min_answer_chars < 0:
        problems.append(
            f"--min-answer-chars {options.min_answer_chars} is below 0; use 0 or more "
            f"(default {DEFAULT_MIN_ANSWER_CHARS})."
        )
    if options.max_chars < 1:
        problems.append(
            f"--max-chars {options.max_chars} is below 1; give the longest conversation to "
            f"keep in characters (default {DEFAULT_MAX_CHARS})."
        )
    elif options.min_answer_chars > options.max_chars:
        problems.append(
            f"--min-answer-chars {options.min_answer_chars} is above --max-chars "
            f"{options.max_chars}, so nothing could be kept; lower one or raise the other."
        )
    if options.system is not None and not options.system.strip():
        problems.append("--system is empty; give the system prompt text, or leave it out.")
    return problems


def ensure_writable(out_dir: Path) -> None:
    """Make the output folder, and prove a file can be written there, before reading."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as error:
        raise UsageError(
            f"--out {out_dir} is not a writable folder ({error.strerror or error}); pass a "
            "folder you can write to (it is created when missing)."
        ) from None


def conversations(
    records: Iterable[dict[str, Any] | Skipped], options: Options, summary: Summary
) -> Iterator[Conversation]:
    """The conversations that pass the filters, first of each kind only; the rest counted.
    Each exchange counts as a record read (a JSON Lines body's records one by one)."""
    seen: set[str] = set()
    for exchange in sources.exchanges(records):
        summary.read += 1
        try:
            if isinstance(exchange, Skipped):
                raise exchange
            conversation = conversation_of(exchange, options.system)
            if len(conversation.answer) < options.min_answer_chars:
                raise Skipped(Skip.SHORT_ANSWER)
            if conversation.chars > options.max_chars:
                raise Skipped(Skip.TOO_LONG)
            key = conversation.key()
            if key in seen:
                raise Skipped(Skip.DUPLICATE)
        except Skipped as skipped:
            summary.skip(skipped.reason)
            continue
        seen.add(key)
        yield conversation


def write_atomically(path: Path, lines: Iterable[str]) -> None:
    """Write beside the target, then rename: a reader never sees half a training set."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8", newline="\n") as file:
        file.writelines(lines)
    os.replace(partial, path)


def export(options: Options) -> Summary:
    """Run the export; UsageError (before anything is written) for bad options or inputs."""
    problems = option_problems(options)
    if problems:
        raise UsageError("\n".join(problems))
    files = sources.input_files(options.inputs, exclude=options.outputs)
    ensure_writable(options.out_dir)
    summary = Summary(files=len(files))
    kept = list(conversations(sources.records(files), options, summary))
    summary.written = len(kept)
    openai_path, sharegpt_path = options.outputs
    write_atomically(openai_path, (json_line(openai_record(c)) for c in kept))
    write_atomically(sharegpt_path, (json_line(sharegpt_record(c)) for c in kept))
    return summary
