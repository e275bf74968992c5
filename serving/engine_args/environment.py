"""SM_VLLM_* variables as vLLM flags: the one translation from the environment to argv.

vLLM's own SageMaker entrypoint turns every SM_VLLM_FOO_BAR=value into `--foo-bar value`,
which is wrong for booleans (`--enforce-eager true` reads "true" as a model name) and for
lists. The rules here are one function with a table of cases in tests/serving/test_env_flags.py.
Rules that hold for every variable: an empty or blank value means unset, and a yes/no
value is spelled with the words in TRUE_WORDS and FALSE_WORDS.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from serving.engine_args.flags import (
    MULTI_VALUE_FLAGS,
    NEGATABLE_FLAGS,
    RESERVED_FLAGS,
    SWITCH_FLAGS,
)
from serving.variables import CONSUMED_VLLM_VARS, SERVED_MODEL_NAME_VAR, VLLM_PREFIX

TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})


def boolean(word: str) -> bool:
    """true/yes/on/1 -> True, false/no/off/0 -> False, in any case; else ValueError."""
    word = word.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{word!r} is not a yes/no word")


def not_a_boolean(variable: str, value: str) -> str:
    return (
        f"{variable}={value!r} is not true or false; set it to true or false "
        "(yes/no, on/off and 1/0 work too)."
    )


def value_of(environ: Mapping[str, str], variable: str) -> str | None:
    """The variable's value without surrounding blanks; None when unset, empty or blank."""
    return environ.get(variable, "").strip() or None


def flag_name(variable: str) -> str:
    """SM_VLLM_MAX_MODEL_LEN -> max-model-len."""
    return variable[len(VLLM_PREFIX) :].lower().replace("_", "-")


def looks_like_json(value: str) -> bool:
    return value[:1] in ("{", "[")


def env_to_flags(variable: str, value: str) -> list[str]:
    """One SM_VLLM_* variable as vLLM argv entries.

    Empty -> nothing. A boolean flag takes a yes/no word: true -> `--flag`; false ->
    `--no-flag` where vLLM has that form, else nothing. A JSON object or array -> one
    argument, except that a flag taking several values gets each array item as its own.
    A flag taking several values splits a plain value at whitespace. Anything else ->
    `--flag value`. Raises ValueError with a user-facing sentence on a value that cannot
    be right.
    """
    name = flag_name(variable)
    if not name:
        raise ValueError(f"{variable} names no vLLM flag; remove it.")
    value = value.strip()
    if not value:
        return []
    negated = name.removeprefix("no-")
    if name in NEGATABLE_FLAGS or name in SWITCH_FLAGS or negated in NEGATABLE_FLAGS:
        try:
            wanted = boolean(value)
        except ValueError:
            raise ValueError(not_a_boolean(variable, value)) from None
        if wanted:
            return [f"--{name}"]
        if negated != name:
            return [f"--{negated}"]
        return [f"--no-{name}"] if name in NEGATABLE_FLAGS else []
    if looks_like_json(value):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{variable} starts like JSON but is not valid JSON ({error.msg} at "
                f"character {error.pos}); fix the JSON or quote it as a plain string."
            ) from None
        if name in MULTI_VALUE_FLAGS and isinstance(parsed, list):
            items = [item if isinstance(item, str) else json.dumps(item) for item in parsed]
            return [f"--{name}", *items] if items else []
        return [f"--{name}", value]
    if name in MULTI_VALUE_FLAGS:
        return [f"--{name}", *value.split()]
    return [f"--{name}", value]


def vllm_flags_from_env(environ: Mapping[str, str], problems: list[str]) -> list[str]:
    flags: list[str] = []
    for variable in sorted(environ):
        if not variable.startswith(VLLM_PREFIX) or variable in CONSUMED_VLLM_VARS:
            continue
        name = flag_name(variable)
        reason = RESERVED_FLAGS.get(name.removeprefix("no-"))
        if reason:
            problems.append(f"{variable} cannot be set: {reason}. Remove it.")
            continue
        try:
            flags += env_to_flags(variable, environ[variable])
        except ValueError as error:
            problems.append(str(error))
    return flags


def served_name(environ: Mapping[str, str], model: str) -> str:
    """The name vLLM reports first: the first of SM_VLLM_SERVED_MODEL_NAME's names."""
    try:
        names = env_to_flags(SERVED_MODEL_NAME_VAR, environ.get(SERVED_MODEL_NAME_VAR, ""))[1:]
    except ValueError:  # reported by vllm_flags_from_env
        names = []
    return names[0] if names else model
