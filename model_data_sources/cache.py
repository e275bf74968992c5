"""A cache of built demo pairs outside the checkout, so a fresh clone on the same machine (CI,
a second worktree) copies a trained pair in seconds instead of training it again.

An entry is one finished build, named by its kind and the build's key (the hash of what
builds it: the builder's sources with their seeds, the recipe, the Python, torch and
tokenizer versions, the corpus). It is written to a temporary folder and renamed into place,
so an interrupted store never looks finished. `DEMO_PAIR_CACHE` names the folder; `off`
turns the cache off. Only the newest entries of each kind are kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

CACHE_ENV = "DEMO_PAIR_CACHE"
KEEP_PER_KIND = 2
# What a build writes under its output tree (the stamp is written by the caller, last).
CONTENTS = ("model", "additional-model-data-sources", "training-report.json")


def copy_contents(source: Path, out: Path) -> None:
    """Copy a pair's tree (CONTENTS, those present) from `source` into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for name in CONTENTS:
        if (source / name).is_dir():
            shutil.copytree(source / name, out / name, dirs_exist_ok=True)
        elif (source / name).is_file():
            shutil.copy2(source / name, out / name)


def cache_root() -> Path | None:
    configured = os.environ.get(CACHE_ENV, "")
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sagemaker-vllm-peagle" / "demo-pairs"


def entry(kind: str, key: str) -> Path | None:
    root = cache_root()
    return None if root is None else root / f"{kind}-{key[:24]}"


def restore(kind: str, key: str, out: Path) -> bool:
    """Copy the cached build of `key` into `out`; False when there is none."""
    cached = entry(kind, key)
    if cached is None or not cached.is_dir():
        return False
    try:
        copy_contents(cached, out)
    except OSError as error:
        # A cache that cannot be read (or a full disk) costs a build, never a failed one.
        print(f"demo pair not copied from {cached}: {error}; building it instead")
        for name in CONTENTS:
            if (out / name).is_dir():
                shutil.rmtree(out / name, ignore_errors=True)
            else:
                (out / name).unlink(missing_ok=True)
        return False
    return True


def store(kind: str, key: str, out: Path) -> Path | None:
    """Keep a copy of the finished build in `out`; a cache that cannot be written is skipped."""
    cached = entry(kind, key)
    if cached is None or cached.is_dir():
        return cached
    staging: Path | None = None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=cached.parent))
        copy_contents(out, staging)
        os.rename(staging, cached)
    except OSError as error:
        print(f"demo pair not cached in {cached.parent}: {error}")
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        return None
    prune(kind, keep=cached)
    return cached


def prune(kind: str, keep: Path) -> None:
    """Drop the oldest entries of `kind` past KEEP_PER_KIND (`keep` always stays)."""
    entries = sorted(
        (path for path in keep.parent.glob(f"{kind}-*") if path != keep),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )
    for stale in entries[KEEP_PER_KIND - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)
