"""The build context: what .dockerignore keeps out and lets in, and that the package builds
from the files the Dockerfiles copy."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.image_files import CPU_BASE_DOCKERFILE, DOCKERFILES, ROOT, arguments_of

DOCKERIGNORE = ROOT / ".dockerignore"


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: end + 1]) for end in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            ignored = not negated
    return ignored


def dockerignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def copy_sources(dockerfile: Path) -> set[str]:
    sources: set[str] = set()
    for arguments in arguments_of(dockerfile, "COPY"):
        words = [word for word in arguments.split() if not word.startswith("--")]
        sources.update(word.rstrip("/") for word in words[:-1])
    return sources


def copied_sources() -> set[str]:
    """Every repository path that a COPY reads from the repository's own context (the CPU
    base's context is a folder image_build assembles: see the test below)."""
    sources: set[str] = set()
    for dockerfile in DOCKERFILES:
        if dockerfile != CPU_BASE_DOCKERFILE:
            sources |= copy_sources(dockerfile)
    return sources


def test_the_cpu_base_copies_only_the_locked_layers_image_build_puts_beside_it():
    from image_build.build import CPU_BASE_LOCKS, DEPS_DIR

    assert copy_sources(CPU_BASE_DOCKERFILE) == set(CPU_BASE_LOCKS)
    assert all((DEPS_DIR / name).is_file() for name in CPU_BASE_LOCKS)


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "build/opt_ml/model/model.safetensors",
        "build/opt_ml/additional-model-data-sources/eagle/config.json",
        "bench-results/run.json",
        "tests/conftest.py",
        ".pytest_cache/v/cache/lastfailed",
        "serving/__pycache__/app.cpython-311.pyc",
        "model_data_sources/__main__.py",
        "bench/__main__.py",
        "image_build/build.py",
        "serving/weights.safetensors",
    ],
)
def test_dockerignore_keeps_out(path: str):
    assert dockerignored(path, dockerignore_patterns())


def source_files(source: str) -> list[str]:
    """The repository's own files under a COPY source (a file or a package directory)."""
    path = ROOT / source
    if path.is_file():
        return [source]
    return [
        file.relative_to(ROOT).as_posix()
        for file in path.rglob("*.py")
        if "__pycache__" not in file.parts
    ]


def test_dockerignore_lets_in_what_the_dockerfiles_copy():
    patterns = dockerignore_patterns()
    for source in copied_sources():
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        files = source_files(source)
        assert files
        for file in files:
            assert not dockerignored(file, patterns), f"{file} is copied but .dockerignore drops it"


def test_package_builds_from_the_build_context(tmp_path: Path):
    """`pip install --no-deps .` in the image sees only the copied files; they must be enough."""
    pytest.importorskip("setuptools")
    context = tmp_path / "context"
    patterns = dockerignore_patterns()
    for source in copied_sources():
        for path in [ROOT / source, *(ROOT / source).rglob("*")]:
            relative = path.relative_to(ROOT).as_posix()
            if path.is_file() and not dockerignored(relative, patterns):
                (context / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / relative)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "dist"),
            str(context),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "serving/__main__.py" in names
    assert not any(name.startswith(("model_data_sources/", "bench/")) for name in names)
