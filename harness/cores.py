"""The core a local engine's threads bind to, when several engines share this machine.

vLLM's CPU build binds its OpenMP threads by itself (`VLLM_CPU_OMP_THREADS_BIND=auto`): on a
2-core machine it keeps one core back and binds to the other, the same one for every engine.
Engines started together then all run on core 0 while core 1 idles (the test session's six
were all ready in 269 s that way, 205 s spread). Worse, two engines serving at once can starve
each other there: in `rehearsals rollout` the shadow engine's worker, bound to the core where the
production engine's worker ran (and spun, waiting on vLLM's shared-memory queue), made no
progress on its first request for 64 s; the front's stall watch restarted it, and its new
worker, runnable on that core, ran 0.1% of the time for minutes and never became ready. Each
engine is a session and an autogroup of its own, and the kernel weighs a group on a core by
the load it has there: our reading of why the newcomer got almost nothing.
`next_core()` hands this machine's cores out in turn, one per engine, unless a binding was
chosen: to the suite's shared containers (tests/support/containers.py) and to the containers a
study starts together (bench.configuration.up_together).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping

OMP_BIND = "VLLM_CPU_OMP_THREADS_BIND"
_CORES = itertools.cycle(sorted(os.sched_getaffinity(0)))


def next_core(env: Mapping[str, str]) -> dict[str, str]:
    """`env`, with the next core of this machine for the engine's threads if neither `env`
    nor this shell names a binding."""
    if OMP_BIND in env or OMP_BIND in os.environ:
        return dict(env)
    return {**env, OMP_BIND: str(next(_CORES))}
