"""The table of vLLM's negatable flags matches the installed vLLM's parser."""

from __future__ import annotations

import subprocess
import sys

from serving.vllm_flags import NEGATABLE_FLAGS, SPECULATIVE_SHORTCUT_FLAGS

# Run in a subprocess: importing vLLM's CLI pulls in torch, which the front never needs.
PARSER_FACTS = """
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser())
options = {o for a in parser._actions for o in a.option_strings}
print("\\n".join(sorted(options)))
"""


def test_tables_match_the_installed_vllm():
    out = subprocess.run(
        [sys.executable, "-c", PARSER_FACTS], capture_output=True, text=True, check=True
    ).stdout
    options = set(out.split())
    negatable = {option[len("--no-") :] for option in options if option.startswith("--no-")}
    assert negatable == NEGATABLE_FLAGS
    for flag in SPECULATIVE_SHORTCUT_FLAGS:
        assert f"--{flag}" in options
