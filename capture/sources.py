"""Where the records come from: the files named and every *.jsonl under the directories
named, in sorted order, read a line at a time; and which capture format each record is."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from capture import container_capture, sagemaker_capture
from capture.bad_input import UsageError
from capture.types import Exchange, Skip, Skipped

PATTERN = "*.jsonl"


def input_files(paths: Sequence[Path], exclude: Iterable[Path] = ()) -> list[Path]:
    """Each file named, and each *.jsonl under each directory named, once, sorted by path;
    never one of `exclude` (the export's own output). UsageError when there is none."""
    excluded = {path.resolve() for path in exclude}
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(file for file in path.rglob(PATTERN) if file.is_file())
        elif path.is_file():
            found.add(path)
        else:
            raise UsageError(
                f"input {path} does not exist; name capture files or the folders that hold "
                "them (e.g. a local copy of the Data Capture prefix: aws s3 sync s3://...)."
            )
    files = sorted(file for file in found if file.resolve() not in excluded)
    if not files:
        raise UsageError(
            f"no {PATTERN} files in {', '.join(str(path) for path in paths)}; name capture "
            "files, or folders that hold *.jsonl capture files."
        )
    return files


def read_lines(file: Path) -> Iterator[bytes]:
    try:
        with file.open("rb") as lines:
            yield from lines
    except OSError as error:
        raise UsageError(f"cannot read {file}: {error.strerror}; check the path.") from None


def records(files: Sequence[Path]) -> Iterator[dict[str, Any] | Skipped]:
    """Every non-blank line's JSON object, in file order, or Skipped for a line that is not
    one (a broken upload, a partial last line, a stray byte)."""
    for file in files:
        for line in read_lines(file):
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8-sig"))
            except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                yield Skipped(Skip.MALFORMED_LINE)
                continue
            yield record if isinstance(record, dict) else Skipped(Skip.MALFORMED_LINE)


def exchanges_of(record: dict[str, Any]) -> list[Exchange | Skipped]:
    """The requests and answers in one record of either format: one exchange, or (a Data
    Capture line of a JSON Lines body) one per record of the body."""
    if sagemaker_capture.is_sagemaker_capture(record):
        return sagemaker_capture.exchanges_of(record)
    if container_capture.is_container_capture(record):
        return [container_capture.exchange_of(record)]
    raise Skipped(Skip.UNKNOWN_RECORD)


def exchanges(records: Iterable[dict[str, Any] | Skipped]) -> Iterator[Exchange | Skipped]:
    """Every exchange the records hold, in order, or Skipped for each that cannot be read."""
    for record in records:
        if isinstance(record, Skipped):
            yield record
            continue
        try:
            yield from exchanges_of(record)
        except Skipped as skipped:
            yield skipped
