"""SERVING_TEST_CPU_ASYNC_SCHEDULING=1, a test-only switch, CPU build only: vLLM's
asynchronous scheduling on the CPU.

On a GPU, vLLM schedules step N+1 while step N runs (async scheduling, on by default for
EAGLE-3 and P-EAGLE), and that is the mode the GPU image serves P-EAGLE in. The CPU
platform turns it off (`CpuPlatform.check_and_update_config`: "async scheduling is not
required on CPU"), so the CPU suite would never exercise the GPU's scheduling path. With
the switch, this folder's sitecustomize patches the CPU platform as vLLM imports it, in each
of vLLM's processes, to keep the mode vLLM chose before the platform turned it off. Unset,
and on any platform but the CPU, it does nothing; it is not in the images: the GPU path
stays vLLM's own. tests/serving/test_cpu_async_scheduling.py drives it.
"""

from __future__ import annotations

import logging
import os

SWITCH_VAR = "SERVING_TEST_CPU_ASYNC_SCHEDULING"


def apply(after_import) -> None:
    if os.environ.get(SWITCH_VAR) == "1":
        after_import("vllm.platforms.cpu", keep_async_scheduling)


def keep_async_scheduling(module) -> None:
    CpuPlatform = module.CpuPlatform
    original = CpuPlatform.check_and_update_config.__func__
    if getattr(original, "keeps_async_scheduling", False):
        return  # patched already

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
