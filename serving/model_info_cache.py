"""vLLM's model-info cache, filled when the image is built: `python -m serving.model_info_cache`.

On start-up vLLM resolves each architecture it serves (the target's, then the drafter's) by
importing its model class in a fresh Python subprocess, unless `$VLLM_CACHE_ROOT/modelinfos`
already holds the answer for that model module's hash. A fresh container has an empty cache,
so every start paid for two such subprocesses (each imports vLLM and torch again: 24 s of
77 s to the first /ping 200 on the CPU demo). Filling the cache at build time, for every
architecture vLLM registers, lets any model's first start skip them.

This leans on two internals of vllm/model_executor/models/registry.py: the lazily registered
model's `inspect_model_cls()` (which hashes, caches and reads the cache) and the module's
`_run_in_subprocess`, replaced here by a plain call so that all architectures are resolved
in this one process. tests/serving/test_model_info_cache.py fails loudly if an upgrade changes them.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterable, Iterator


@contextlib.contextmanager
def in_this_process() -> Iterator[object]:
    """vLLM's registry, resolving architectures in this process instead of a subprocess."""
    from vllm.model_executor.models import registry

    in_subprocess = registry._run_in_subprocess
    registry._run_in_subprocess = lambda resolve: resolve()
    try:
        yield registry
    finally:
        registry._run_in_subprocess = in_subprocess


def warm(architectures: Iterable[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """Resolve (and so cache) each registered architecture, or only those named.

    Returns the architectures cached and, for those that could not be (an optional
    dependency missing in this image), why: vLLM then resolves them at start-up as before."""
    wanted = set(architectures) if architectures is not None else None
    cached: list[str] = []
    failed: dict[str, str] = {}
    with in_this_process() as registry:
        for name, model in sorted(registry.ModelRegistry.models.items()):
            if wanted is not None and name not in wanted:
                continue
            if not isinstance(model, registry._LazyRegisteredModel):
                continue  # registered as a class: nothing to resolve
            try:
                model.inspect_model_cls()
            except Exception as error:  # noqa: BLE001 - an optional import, reported below
                failed[name] = f"{type(error).__name__}: {error}"[:200]
            else:
                cached.append(name)
        for name in sorted((wanted or set()) - set(registry.ModelRegistry.models)):
            failed[name] = "not an architecture this vLLM registers"
    return cached, failed


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or None
    started = time.monotonic()
    cached, failed = warm(names)
    print(
        f"vLLM model-info cache: {len(cached)} architectures cached, {len(failed)} left to "
        f"start-up, in {time.monotonic() - started:.0f} s"
    )
    for name, reason in failed.items():
        print(f"  not cached: {name} ({reason})")
    # Named architectures must all be cached; the full sweep tolerates optional ones.
    return 1 if names and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
