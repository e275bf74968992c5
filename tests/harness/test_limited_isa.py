"""harness/site/limited_isa.py, which `make test CPU_ISA=avx2` puts under every process: torch and
vLLM's choice of kernels see an AVX2 machine, whoever imports torch first."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.locations import SITE_DIR

PROBE = """
import importlib.util, json, re
importlib.util.find_spec("torch")  # as transformers asks, before anything imports torch
import torch
from vllm.platforms import current_platform
current_platform.import_kernels()
maps = open("/proc/self/maps").read()
libraries = sorted(set(re.findall(r"vllm/(_C[A-Za-z0-9_]*)[.]abi3[.]so", maps)))
print(json.dumps([torch.backends.cpu.get_cpu_capability(), torch.cpu._is_avx512_supported(),
                  torch.cpu._is_amx_tile_supported(), libraries]))
"""


def probe(**env: str) -> list:
    import json

    ran = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env},
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return json.loads(ran.stdout.splitlines()[-1])


def test_a_limited_process_computes_as_an_avx2_machine():
    limited = probe(HARNESS_CPU_ISA="avx2", PYTHONPATH=str(SITE_DIR))
    assert limited == ["AVX2", False, False, ["_C_AVX2"]]
