"""The real pair's shipped heads (model_data_sources/smollm2/shipped_heads.py): each output
layer that is the target's own rows is left out of the repository and written back from the target,
byte for byte."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from model_data_sources.smollm2 import shipped_heads

VOCAB, DRAFT_VOCAB, HIDDEN = 64, 16, 8


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def a_pair(root: Path, trained_lm_head: bool) -> tuple[Path, Path]:
    """A target with tied embeddings, and a head whose output layer is its rows i + d2t[i]
    (or, `trained_lm_head`, a layer of its own)."""
    torch.manual_seed(0)
    model, head = root / "model", root / "heads" / "eagle"
    model.mkdir(parents=True)
    head.mkdir(parents=True)
    embed = torch.randn(VOCAB, HIDDEN).to(torch.bfloat16)
    save_file({"model.embed_tokens.weight": embed}, str(model / shipped_heads.WEIGHTS))
    d2t = torch.randint(0, VOCAB - DRAFT_VOCAB, (DRAFT_VOCAB,))
    lm_head = embed[torch.arange(DRAFT_VOCAB) + d2t]
    if trained_lm_head:
        lm_head = lm_head + 1
    weights = {"d2t": d2t, "fc.weight": torch.randn(HIDDEN, 3 * HIDDEN).to(torch.bfloat16)}
    save_file(
        {**weights, shipped_heads.LM_HEAD: lm_head},
        str(head / shipped_heads.WEIGHTS),
        {"format": "pt"},
    )
    (head / "config.json").write_text("{}\n")
    return model, head


@pytest.mark.parametrize("trained_lm_head", [False, True])
def test_a_head_ships_without_the_targets_rows_and_installs_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trained_lm_head: bool
):
    model, head = a_pair(tmp_path, trained_lm_head)
    whole = sha256(head / shipped_heads.WEIGHTS)
    monkeypatch.setattr(shipped_heads, "HEADS", head.parent)
    monkeypatch.setattr(shipped_heads, "CHANNELS", ("eagle",))
    monkeypatch.setattr(shipped_heads, "MANIFEST", head.parent / "manifest.json")
    files = shipped_heads.hashes(head.parent)

    assert shipped_heads.without_lm_head(head, model) is not trained_lm_head
    shipped = sorted(path.name for path in head.iterdir())
    stripped = [shipped_heads.WEIGHTS] if trained_lm_head else [shipped_heads.SHIPPED_WEIGHTS]
    assert shipped == sorted(["config.json", *stripped])

    manifest = {
        "recipe": shipped_heads.recipe_hash(),
        "files": files,
        "shipped": shipped_heads.hashes(head.parent),
    }
    shipped_heads.MANIFEST.write_text(json.dumps(manifest))
    channels = tmp_path / "additional-model-data-sources"
    shipped_heads.install(channels, model)
    assert sha256(channels / "eagle" / shipped_heads.WEIGHTS) == whole
    assert sorted(path.name for path in (channels / "eagle").iterdir()) == sorted(
        ["config.json", shipped_heads.WEIGHTS]
    )


def test_a_target_converted_differently_is_a_loud_error(tmp_path: Path, monkeypatch):
    model, head = a_pair(tmp_path, trained_lm_head=False)
    monkeypatch.setattr(shipped_heads, "HEADS", head.parent)
    monkeypatch.setattr(shipped_heads, "CHANNELS", ("eagle",))
    monkeypatch.setattr(shipped_heads, "MANIFEST", head.parent / "manifest.json")
    files = shipped_heads.hashes(head.parent)
    shipped_heads.without_lm_head(head, model)
    manifest = {
        "recipe": shipped_heads.recipe_hash(),
        "files": files,
        "shipped": shipped_heads.hashes(head.parent),
    }
    shipped_heads.MANIFEST.write_text(json.dumps(manifest))
    other = tmp_path / "other"
    shutil.copytree(model, other)
    embed = torch.randn(VOCAB, HIDDEN).to(torch.bfloat16)
    save_file({"model.embed_tokens.weight": embed}, str(other / shipped_heads.WEIGHTS))
    with pytest.raises(shipped_heads.StaleHeads, match="converted differently"):
        shipped_heads.install(tmp_path / "channels", other)


def test_the_shipped_heads_are_what_the_manifest_says():
    """Every shipped file's sha256, and only output layers left out (the written files'
    hashes are checked against the real target by `make real-model`)."""
    manifest = shipped_heads.manifest()
    for relative, digest in manifest["shipped"].items():
        assert sha256(shipped_heads.HEADS / relative) == digest, relative
    written = {
        relative.replace(shipped_heads.SHIPPED_WEIGHTS, shipped_heads.WEIGHTS)
        for relative in manifest["shipped"]
    }
    assert written == set(manifest["files"])
