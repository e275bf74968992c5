"""The trained demo pairs as the repository ships them: the same bytes on every machine.

A pair trained here is a property of the CPU that trained it (bfloat16 autocast and oneDNN
pick other code on other instruction sets, and a fixed seed then gives other weights and other
greedy answers), so the quick and trained pairs are trained once, on purpose
(`make demo-pairs`), and kept under model_data_sources/pairs/<kind>/ with a manifest: each
file's sha256, the recipe they were trained from, the machine and the held-out figures. `make
quick-model` and `make trained-model` copy them into build/, checking every hash; a recipe that
changed since they were trained is a loud error until they are trained and shipped again.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
from pathlib import Path

from model_data_sources.cache import CONTENTS, copy_contents

PAIRS = Path(__file__).parent / "pairs"
SHIPPED_KINDS = ("quick", "trained")
MANIFEST = "manifest.json"
# Modules that do not change what a recipe trains.
NOT_RECIPE = {"__init__.py", "__main__.py", "cache.py", "finetune.py", "shipped.py"}


class StalePair(RuntimeError):
    pass


def recipe_hash(kind: str) -> str:
    """What the pair's bytes follow from in this repository: its kind, the builder's sources
    (seeds and recipes included) and the served grammar settings. Not the machine's part (its
    CPU, and the corpus, which is the running Python's own standard library): a user's other
    Python 3.11 must still get the shipped pair. Those are recorded in `trained_on`."""
    from model_data_sources.grammar import SERVED

    digest = hashlib.sha256(kind.encode() + b"\0")
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name not in NOT_RECIPE:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(json.dumps(SERVED).encode())
    return digest.hexdigest()


def files_of(tree: Path) -> dict[str, str]:
    """Every file of a pair's tree under CONTENTS: relative path -> sha256."""
    found = {}
    for name in CONTENTS:
        top = tree / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in paths:
            found[path.relative_to(tree).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def manifest(kind: str) -> dict:
    return json.loads((PAIRS / kind / MANIFEST).read_text())


def key(kind: str) -> str:
    """The shipped pair's identity, for build/'s stamp: the hash of its manifest."""
    return hashlib.sha256((PAIRS / kind / MANIFEST).read_bytes()).hexdigest()


def install(kind: str, out: Path) -> None:
    """Copy the shipped pair into `out`, every file checked against its manifest."""
    shipped = manifest(kind)
    if shipped["recipe"] != recipe_hash(kind):
        raise StalePair(
            f"the shipped {kind} pair (model_data_sources/pairs/{kind}) was trained from another "
            "recipe than model_data_sources/ holds now; train and ship it again with "
            "`make demo-pairs`, or build one for this machine only with "
            f"`python -m model_data_sources --{kind} --retrain`"
        )
    source = PAIRS / kind
    for relative, digest in shipped["files"].items():
        if hashlib.sha256((source / relative).read_bytes()).hexdigest() != digest:
            raise StalePair(
                f"model_data_sources/pairs/{kind}/{relative} does not match its sha256 in "
                f"{MANIFEST}; restore it (git checkout) or ship the pair again (make demo-pairs)"
            )
    copy_contents(source, out)


def ship(kind: str, built: Path) -> Path:
    """Keep a pair trained here as the shipped one, with its manifest."""
    target = PAIRS / kind
    shutil.rmtree(target, ignore_errors=True)
    copy_contents(built, target)
    report = json.loads((built / "training-report.json").read_text())
    (target / MANIFEST).write_text(
        json.dumps(
            {
                "kind": kind,
                "recipe": recipe_hash(kind),
                "trained_on": machine(),
                "offline": report.get("offline"),
                "files": files_of(target),
            },
            indent=2,
        )
        + "\n"
    )
    return target


def machine() -> dict:
    import torch

    from model_data_sources.corpus import corpus_hash

    flags = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "isa": sorted(flag for flag in flags if flag.startswith(("avx", "amx"))),
        "corpus": corpus_hash(),
    }
