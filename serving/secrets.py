"""What is secret, and how it is hidden before anything reaches a log.

A name is secret when its last word ends in key, token, secret or password (`--api-key`,
`--hf-token`, `HF_TOKEN`, `aws_secret_access_key`, `apiKey`), or any of its words is secret or
password. Words, not substrings: `--max-num-batched-tokens`, `--tokenizer`, `--ssl-keyfile`,
`num_speculative_tokens` and `mask_token_id` stay readable, because the logs need them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

REDACTED = "***"

SECRET_ENDINGS = ("key", "keys", "token", "secret", "secrets", "password", "passwd")
SECRET_WORDS = frozenset({"secret", "secrets", "password", "passwd"})
# An option, not a value: -m, --api-key, --hf-token=x; but -1 is a value.
FLAG = re.compile(r"--?[A-Za-z]")


def is_secret_name(name: str) -> bool:
    """Whether a flag, variable or JSON key names a secret (see the module's docstring)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)  # apiKey -> api Key
    words = [word for word in re.split(r"[^a-z0-9]+", spaced.lower()) if word]
    if not words:
        return False
    return words[-1].endswith(SECRET_ENDINGS) or not SECRET_WORDS.isdisjoint(words)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line fit to log: every value of a secret flag (`--api-key a b`, `--hf-token=x`)
    becomes ***, and secret keys inside JSON-valued arguments too."""
    redacted: list[str] = []
    hiding = False
    for item in argv:
        if FLAG.match(item):
            name, equals, value = item.partition("=")
            secret = is_secret_name(name)
            # A flag may take several values (vLLM's --api-key does): hide up to the next flag.
            hiding = secret and not equals
            if equals:
                item = f"{name}={REDACTED if secret else redact_json_text(value)}"
            redacted.append(item)
        else:
            redacted.append(REDACTED if hiding else redact_json_text(item))
    return redacted


def redact_mapping(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of settings or environment fit to log: secret-named entries become ***, nested
    mappings, JSON strings and argv lists are redacted inside."""
    return {key: redact_entry(key, value) for key, value in mapping.items()}


def redact_entry(key: str, value: Any) -> Any:
    if is_secret_name(key) and value not in (None, ""):
        return REDACTED
    return redact_value(value)


def redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: redact_entry(str(key), item) for key, item in value.items()}
    if isinstance(value, str):
        return redact_json_text(value)
    if isinstance(value, list | tuple):
        strings = all(isinstance(item, str) for item in value)
        if strings and any(FLAG.match(item) for item in value):
            items = redact_argv(value)
        else:
            items = [redact_value(item) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def redact_json_text(text: str) -> str:
    """A JSON object or array with its secret keys redacted; any other text as it was."""
    if text.strip()[:1] not in ("{", "["):
        return text
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    redacted = redact_value(parsed)
    # Unchanged JSON keeps the user's spelling, which is what they will search the logs for.
    return text if redacted == parsed else json.dumps(redacted)
