"""The shipped demo pairs (model_data_sources/pairs): the same bytes on every machine. Each
file matches its manifest, the manifest's recipe is the one model_data_sources/ holds now (a
recipe changed without `make demo-pairs` fails here), build/ holds exactly the shipped bytes,
and a damaged file is refused, not served."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.locations import QUICK_DEMO_ROOT, TRAINED_DEMO_ROOT
from model_data_sources import shipped

BUILT = {"quick": QUICK_DEMO_ROOT, "trained": TRAINED_DEMO_ROOT}


@pytest.mark.parametrize("kind", shipped.SHIPPED_KINDS)
def test_the_shipped_pair_is_its_manifest_and_its_recipe_is_todays(kind):
    manifest = shipped.manifest(kind)
    assert shipped.files_of(shipped.PAIRS / kind) == manifest["files"]
    assert any(name.endswith("model.safetensors") for name in manifest["files"])
    assert manifest["recipe"] == shipped.recipe_hash(kind), (
        f"model_data_sources/ changed what the {kind} pair is trained from: run "
        "`make demo-pairs` and commit model_data_sources/pairs"
    )


@pytest.mark.engine  # the pairs `make test` builds
@pytest.mark.parametrize("kind", shipped.SHIPPED_KINDS)
def test_the_built_pair_is_the_shipped_bytes(kind):
    assert shipped.files_of(BUILT[kind]) == shipped.manifest(kind)["files"]


def test_a_damaged_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pairs = tmp_path / "pairs"
    shutil.copytree(shipped.PAIRS / "quick", pairs / "quick")
    monkeypatch.setattr(shipped, "PAIRS", pairs)
    shipped.install("quick", tmp_path / "good")
    assert shipped.files_of(tmp_path / "good") == shipped.manifest("quick")["files"]
    (pairs / "quick" / "model" / "config.json").write_text("{}")
    with pytest.raises(shipped.StalePair, match="model/config.json does not match"):
        shipped.install("quick", tmp_path / "bad")
