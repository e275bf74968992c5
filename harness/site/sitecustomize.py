"""The suite's switches for every Python process it starts (the front, vLLM's engine and its
workers, the pair builder): with this folder on PYTHONPATH (harness.host puts it there for a
container whose environment turns a switch on; `make test CPU_ISA=avx2` for the whole suite),
each is applied at start-up where its variable is set, and does nothing where it is not.
Test tooling only: nothing in serving/ or the images imports it.

- HARNESS_CPU_ISA=avx2 (limited_isa): a CPU limited to AVX2;
- SERVING_TEST_CPU_ASYNC_SCHEDULING=1 (cpu_async_scheduling): vLLM's asynchronous scheduling
  kept on on the CPU build, as a GPU runs P-EAGLE.
"""

import importlib.abc
import importlib.machinery
import sys

import cpu_async_scheduling
import limited_isa


class AfterImport(importlib.abc.MetaPathFinder):
    """Patches a module the moment it has been imported, whoever imports it. Every lookup
    gets a wrapped loader (transformers asks importlib.util.find_spec("torch") long before
    anything imports it)."""

    def __init__(self):
        self.patches = {}

    def add(self, name, patch) -> None:
        self.patches.setdefault(name, []).append(patch)

    def find_spec(self, name, path=None, target=None):
        if name not in self.patches:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        original = spec.loader.exec_module
        patches = self.patches[name]

        def exec_module(module):
            original(module)
            for patch in patches:
                patch(module)

        spec.loader.exec_module = exec_module
        return spec


_after_import = AfterImport()
limited_isa.apply(_after_import.add)
cpu_async_scheduling.apply(_after_import.add)
if _after_import.patches:
    sys.meta_path.insert(0, _after_import)
