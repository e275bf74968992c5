"""The demo-pair cache outside the checkout: a build is kept under its key and copied back,
a half-written entry is never taken for a finished one, and an unreadable cache costs a build."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_data_sources import cache


@pytest.fixture()
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    out = tmp_path / "clone-a"
    (out / "model").mkdir(parents=True)
    (out / "model" / "config.json").write_text('{"hidden_size": 128}')
    (out / "additional-model-data-sources" / "eagle").mkdir(parents=True)
    (out / "additional-model-data-sources" / "eagle" / "model.safetensors").write_bytes(b"w")
    (out / "training-report.json").write_text("{}")
    return out


def test_a_stored_build_is_copied_into_another_clone(built: Path, tmp_path: Path):
    assert cache.store("trained", "k" * 64, built) is not None
    other = tmp_path / "clone-b"
    assert cache.restore("trained", "k" * 64, other)
    assert (other / "model" / "config.json").read_text() == '{"hidden_size": 128}'
    assert (other / "additional-model-data-sources" / "eagle" / "model.safetensors").is_file()
    assert (other / "training-report.json").is_file()


def test_another_key_misses(built: Path, tmp_path: Path):
    cache.store("trained", "k" * 64, built)
    assert not cache.restore("trained", "j" * 64, tmp_path / "clone-b")
    assert not cache.restore("quick", "k" * 64, tmp_path / "clone-b")


def test_a_half_written_entry_is_not_an_entry(built: Path, tmp_path: Path):
    # An interrupted store leaves only its staging folder, which restore never reads.
    staging = tmp_path / "cache" / ".trained-interrupted"
    (staging / "model").mkdir(parents=True)
    assert not cache.restore("trained", "k" * 64, tmp_path / "clone-b")


def test_only_the_newest_entries_of_a_kind_are_kept(built: Path, tmp_path: Path):
    for key in ("a", "b", "c"):
        cache.store("trained", key * 64, built)
    entries = sorted(path.name for path in (tmp_path / "cache").glob("trained-*"))
    assert len(entries) == cache.KEEP_PER_KIND
    assert cache.restore("trained", "c" * 64, tmp_path / "clone-b")


def test_off_turns_it_off(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.store("trained", "k" * 64, built) is None
    assert not cache.restore("trained", "k" * 64, tmp_path / "clone-b")


def test_a_copy_that_fails_costs_a_build_not_a_failure(built: Path, tmp_path: Path):
    cache.store("trained", "k" * 64, built)
    other = tmp_path / "clone-b"
    other.mkdir()
    (other / "model").write_text("a file where the model folder goes")  # the copy fails
    assert not cache.restore("trained", "k" * 64, other)
    # Nothing half-copied is left for the build to mistake for its own output.
    assert not any(other.iterdir())
