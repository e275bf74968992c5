"""A request against botocore's service model: every value the service would reject.

botocore checks types and required members before sending, but not `enum`, `max`, `pattern`
or numeric bounds: SageMaker rejects those only after the call, possibly halfway through a
deployment (the model created, the endpoint config refused). Walking the operation's input
shape here finds them all before anything is sent.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from typing import Any

from botocore.model import OperationModel, Shape

# Java regex constructs in AWS models that Python's re lacks, as class contents.
POSIX_CLASSES = {
    "Print": r"\x20-\x7e",
    "Graph": r"\x21-\x7e",
    "Alnum": r"a-zA-Z0-9",
    "Alpha": r"a-zA-Z",
    "Digit": r"0-9",
    "Upper": r"A-Z",
    "Lower": r"a-z",
    "Space": r" \t\n\x0b\f\r",
}
# Java writes the astral planes as a surrogate pair range; Python takes the code points.
SURROGATE_PAIR_RANGE = r"\uD800\uDC00-\uDBFF\uDFFF"
ASTRAL_RANGE = r"\U00010000-\U0010FFFF"


@functools.cache
def compiled(pattern: str) -> re.Pattern[str] | None:
    """A model pattern as a Python regex; None when it uses Java constructs we cannot translate
    (then the value is not checked against it rather than wrongly refused)."""
    translated = pattern.replace(SURROGATE_PAIR_RANGE, ASTRAL_RANGE)
    for name, contents in POSIX_CLASSES.items():
        # Inside a class the contents join it; outside they need brackets of their own.
        translated = re.sub(
            r"(\[[^\]]*?)\\p\{" + name + r"\}", lambda m, c=contents: m.group(1) + c, translated
        )
        translated = translated.replace(r"\p{" + name + "}", f"[{contents}]")
    try:
        return re.compile(translated)
    except re.error:
        return None


def violations(operation: OperationModel, params: Mapping[str, Any]) -> list[str]:
    """Every problem with `params` for `operation`, each a sentence naming the member path."""
    found: list[str] = []
    check(operation.input_shape, params, operation.name, found)
    return found


def check(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    kind = shape.type_name
    if kind == "structure":
        check_structure(shape, value, path, found)
    elif kind == "list":
        check_list(shape, value, path, found)
    elif kind == "map":
        check_map(shape, value, path, found)
    elif kind == "string":
        check_string(shape, value, path, found)
    elif kind in ("integer", "long", "float", "double"):
        check_number(shape, value, path, found)
    elif kind == "boolean" and not isinstance(value, bool):
        found.append(f"{path} is {value!r}; it must be true or false.")


def check_structure(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    if not isinstance(value, Mapping):
        found.append(f"{path} is {value!r}; it must be an object ({shape.name}).")
        return
    members = shape.members
    for name in shape.required_members:
        if name not in value:
            found.append(f"{path} has no {name}, which {shape.name} requires; add it.")
    for name, member_value in value.items():
        if name not in members:
            close = difflib.get_close_matches(name, members, n=1)
            hint = f'did you mean "{close[0]}"?' if close else f"{shape.name} has no such member."
            found.append(f"{path} has unknown member {name}; {hint}")
            continue
        check(members[name], member_value, f"{path}.{name}", found)


def check_size(shape: Shape, size: int, unit: str, path: str, found: list[str]) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        found.append(f"{path} has {size} {unit}; {shape.name} needs at least {low}.")
    if high is not None and size > high:
        found.append(f"{path} has {size} {unit}; {shape.name} allows at most {high}.")


# A sized shape's Python types, what it must be called, and what its size counts.
SIZED = {
    "list": ((list, tuple), "a list", "items"),
    "map": ((Mapping,), "an object", "entries"),
    "string": ((str,), "a string", "characters"),
}


def is_sized(shape: Shape, value: Any, path: str, found: list[str]) -> bool:
    """The value has the shape's type (its size checked too); else False, said in `found`."""
    types, called, unit = SIZED[shape.type_name]
    if not isinstance(value, types):
        found.append(f"{path} is {value!r}; it must be {called} ({shape.name}).")
        return False
    check_size(shape, len(value), unit, path, found)
    return True


def check_list(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    if is_sized(shape, value, path, found):
        for index, item in enumerate(value):
            check(shape.member, item, f"{path}[{index}]", found)


def check_map(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    if is_sized(shape, value, path, found):
        for key, item in value.items():
            check(shape.key, key, f"{path} key {key!r}", found)
            check(shape.value, item, f"{path}[{key!r}]", found)


def check_string(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    if not is_sized(shape, value, path, found):
        return
    if shape.enum and value not in shape.enum:
        close = difflib.get_close_matches(value, shape.enum, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}?" if close else f"use one of {shape.name}."
        found.append(f"{path} is {value!r}, which is not one of {shape.name}'s values; {hint}")
    pattern = shape.metadata.get("pattern")
    regex = compiled(pattern) if pattern else None
    if regex is not None and not regex.fullmatch(value):
        found.append(f"{path} is {value!r}, which does not match {shape.name}'s pattern {pattern}.")


def check_number(shape: Shape, value: Any, path: str, found: list[str]) -> None:
    whole = shape.type_name in ("integer", "long")
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        found.append(f"{path} is {value!r}; it must be a {'whole ' if whole else ''}number.")
        return
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and value < low:
        found.append(f"{path} is {value}; {shape.name} needs at least {low}.")
    if high is not None and value > high:
        found.append(f"{path} is {value}; {shape.name} allows at most {high}.")
