"""The tables of vLLM's flags match the installed vLLM's parser."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from serving.engine_args.flags import (
    MULTI_VALUE_FLAGS,
    NEGATABLE_FLAGS,
    RESERVED_FLAGS,
    SPECULATIVE_SHORTCUT_FLAGS,
    SWITCH_FLAGS,
)

# Run in a subprocess: importing vLLM's CLI pulls in torch, which the front never needs.
# One line per option of the parser: its long names, nargs, and whether it is a --no- pair.
PARSER_FACTS = """
import argparse, json
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser())
for action in parser._actions:
    if isinstance(action, argparse._HelpAction) or not action.option_strings:
        continue
    print(json.dumps({
        "names": [o[2:] for o in action.option_strings if o.startswith("--")],
        "nargs": action.nargs,
        "negatable": isinstance(action, argparse.BooleanOptionalAction),
    }))
"""


@pytest.fixture(scope="module")
def actions() -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-c", PARSER_FACTS], capture_output=True, text=True, check=True
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def flags(actions: list[dict], wanted) -> set[str]:
    """The first long name of every action `wanted` picks (the --no- form comes second)."""
    return {action["names"][0] for action in actions if wanted(action)}


def test_negatable_flags(actions):
    assert flags(actions, lambda action: action["negatable"]) == NEGATABLE_FLAGS


def test_switch_flags(actions):
    switches = flags(actions, lambda action: action["nargs"] == 0 and not action["negatable"])
    assert switches == SWITCH_FLAGS


def test_multi_value_flags(actions):
    assert flags(actions, lambda action: action["nargs"] in ("+", "*")) == MULTI_VALUE_FLAGS


def test_reserved_and_shortcut_flags_exist(actions):
    options = {name for action in actions for name in action["names"]}
    assert set(RESERVED_FLAGS) <= options
    assert set(SPECULATIVE_SHORTCUT_FLAGS) <= options


def test_every_tls_flag_is_reserved(actions):
    # The front talks plain HTTP to the engine; a TLS flag of a newer vLLM must be refused too.
    options = {name for action in actions for name in action["names"]}
    tls = {name for name in options if "ssl" in name and not name.startswith("no-")}
    assert any(name.startswith("ssl") for name in tls)
    assert tls <= set(RESERVED_FLAGS)
