"""Reading the JSON files preflight looks at, with a sentence for each way one can be broken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.json"


class UnreadableFile(Exception):
    """A file that cannot be read; the message is one sentence a user can act on."""


def read_config(
    directory: Path, what: str, missing_fix: str, errors: list[str]
) -> tuple[Path, dict[str, Any]] | None:
    """`directory`'s config.json and its object, or None with the problem in `errors`: its
    absence (with `missing_fix`, what to upload) or why it cannot be read."""
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        errors.append(f"{what.split()[0]} {directory} has no config.json; {missing_fix}")
        return None
    try:
        return config_path, read_json_object(config_path, what)
    except UnreadableFile as error:
        errors.append(str(error))
        return None


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from `path`; UnreadableFile with a sentence naming `what` otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableFile(f"{what} {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableFile(f"{what} {path} cannot be read ({error}); upload it again.") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableFile(
            f"{what} {path} is not valid JSON ({error.msg} at line {error.lineno}); "
            "fix the file or upload it again."
        ) from None
    if not isinstance(value, dict):
        raise UnreadableFile(
            f"{what} {path} holds a JSON {type(value).__name__}, not an object; "
            "it must be a model config object."
        )
    return value
