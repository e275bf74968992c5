"""The demo engine's settings have one home, demo.env, which the suite's containers, the
benchmark's and make serve all read."""

import subprocess
from pathlib import Path

import pytest

from harness.demo_engine import DEMO_ENGINE, DEMO_ENV_FILE, read_settings
from harness.host import host_environment

ROOT = Path(__file__).parents[2]


def test_the_suites_containers_get_the_demo_engines_settings():
    env = host_environment(OPT_ML_ROOT="/nowhere")
    assert DEMO_ENGINE == {"VLLM_CPU_KVCACHE_SPACE": "1", "SM_VLLM_MAX_MODEL_LEN": "2048"}
    assert {key: env[key] for key in DEMO_ENGINE} == DEMO_ENGINE
    assert host_environment(SM_VLLM_MAX_MODEL_LEN="4096")["SM_VLLM_MAX_MODEL_LEN"] == "4096"


def test_make_serve_reads_the_same_settings_and_lets_the_shell_override_them():
    dry_run = subprocess.run(
        ["make", "-s", "-n", "serve"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    for key, value in read_settings(DEMO_ENV_FILE).items():
        assert f"{key}=${{{key}:-{value}}}" in dry_run


def test_a_line_that_is_not_a_setting_is_named_with_its_file_and_line(tmp_path):
    garbled = tmp_path / "demo.env"
    garbled.write_text("# comment\n\nVLLM_CPU_KVCACHE_SPACE=1\nSM_VLLM_MAX_MODEL_LEN = 2048\n")
    with pytest.raises(ValueError, match=r"demo.env:4: .* is not KEY=VALUE"):
        read_settings(garbled)
