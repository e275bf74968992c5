"""The configurations' vocabulary, declared once: what each text stands for, what make serve
serves from it, and how a text it cannot read is refused."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.configurations import DEMO_SCHEDULE, REAL_SCHEDULE, parse_configuration
from harness.locations import REAL_ROOT, TRAINED_DEMO_ROOT

ROOT = Path(__file__).parents[2]


def served_by_make(*make_args: str) -> dict:
    """The SM_VLLM_SPECULATIVE_CONFIG make serve's recipe hands the container, evaluated by
    the shell as the recipe would be, in an environment that does not set it."""
    dry_run = subprocess.run(
        ["make", "-s", "-n", "serve", *make_args], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    assignment = re.search(r'SM_VLLM_SPECULATIVE_CONFIG="[^"]*"', dry_run)
    assert assignment is not None, dry_run
    env = {key: value for key, value in os.environ.items() if not key.startswith("SM_")}
    shown = subprocess.run(
        ["bash", "-c", f'{assignment[0]}; printf %s "$SM_VLLM_SPECULATIVE_CONFIG"'],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(shown)


def test_make_serve_serves_the_schedules_calibrated_for_each_pair():
    trained = served_by_make(f"OPT_ML_ROOT={TRAINED_DEMO_ROOT}")
    assert trained == parse_configuration(DEMO_SCHEDULE, None).speculative_config()
    assert trained["num_speculative_tokens_per_batch_size"] == [[1, 8, 7], [9, 1024, 3]]
    assert served_by_make(f"OPT_ML_ROOT={REAL_ROOT}") == (
        parse_configuration(REAL_SCHEDULE, None).speculative_config()
    )
    assert served_by_make(f"OPT_ML_ROOT={TRAINED_DEMO_ROOT}", "K=5") == {
        "method": "eagle3",
        "num_speculative_tokens": 5,
        "parallel_drafting": True,
    }


def test_each_text_stands_for_its_speculative_config():
    assert parse_configuration("none", None).speculative_config() is None
    assert parse_configuration("eagle3:4", None).speculative_config() == {
        "method": "eagle3",
        "num_speculative_tokens": 4,
    }
    scheduled = parse_configuration("peagle:7@1-8/3@9-1024", Path("/heads/eagle"))
    assert scheduled.k == 7 and scheduled.name == "peagle-k7@1-8,k3@9-1024"
    assert scheduled.speculative_config()["model"] == "/heads/eagle"


@pytest.mark.parametrize("text", ["peagle:7@1-8/x@9-10", "peagle:3@5-1", "peagle:0@1-8", "peagle:"])
def test_a_configuration_that_is_not_understood_says_how_to_write_one(text):
    with pytest.raises(SystemExit, match="K@START-END|never drafts|K >= 1"):
        parse_configuration(text, None)
