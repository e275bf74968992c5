"""A test-only switch, CPU build only: vLLM's asynchronous scheduling on the CPU.

On a GPU, vLLM schedules step N+1 while step N runs (async scheduling, on by default for
EAGLE-3 and P-EAGLE), and that is the mode the GPU image serves P-EAGLE in. The CPU
platform turns it off (`CpuPlatform.check_and_update_config`: "async scheduling is not
required on CPU"), so the CPU suite would never exercise the GPU's scheduling path. With
SERVING_TEST_CPU_ASYNC_SCHEDULING=1, this vLLM plugin (entry point `vllm.general_plugins`,
loaded by vLLM in each of its processes) keeps the mode vLLM chose before the platform
turned it off. Unset, and on any platform but the CPU, it does nothing: the GPU path stays
vLLM's own. tests/test_cpu_async_scheduling.py drives it.
"""

from __future__ import annotations

import logging
import os

SWITCH_VAR = "SERVING_TEST_CPU_ASYNC_SCHEDULING"


def register() -> None:
    if os.environ.get(SWITCH_VAR) != "1":
        return
    try:
        from vllm.platforms.cpu import CpuPlatform
    except ImportError:  # not the CPU build
        return
    original = CpuPlatform.check_and_update_config.__func__
    if getattr(original, "keeps_async_scheduling", False):
        return  # plugins load once per process, and some processes load them twice

    def check_and_update_config(cls, vllm_config) -> None:
        chosen = vllm_config.scheduler_config.async_scheduling
        original(cls, vllm_config)
        vllm_config.scheduler_config.async_scheduling = chosen
        # vLLM's own logger (it has the handlers): the test reads this line.
        logging.getLogger("vllm.serving").warning(
            "%s=1: asynchronous scheduling %s, as vLLM chose it (the CPU platform would turn "
            "it off; a test-only switch)",
            SWITCH_VAR,
            "on" if chosen else "off",
        )

    check_and_update_config.keeps_async_scheduling = True
    CpuPlatform.check_and_update_config = classmethod(check_and_update_config)
