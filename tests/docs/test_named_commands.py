"""Prose that cannot drift: every `make TARGET` and `python -m bench VERB` (or `rehearsals
VERB`) that a doc, a docstring or a comment names is one the repository has. A command that
is gone may still be named where the text dates it ("retired on 2026-12-04", "until
2026-12-03"): within a few lines of a date, or in docs/results/, whose pages are dated."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache

from harness.locations import REPO_ROOT

# Tracked text a reader meets: docs, code, the Makefile, CI and image files.
TEXT_FILES = re.compile(r"(\.(py|md|sh|env|yml|toml)$|^Makefile$|Dockerfile$|^\.ci/run$)")
# A make command in a code span, or a line of a fenced code block that starts with one.
MAKE = re.compile(r"`make ([a-z][a-z0-9-]+)")
MAKE_LINE = re.compile(r"^\s*(?:\$ )?make ([a-z][a-z0-9-]+)")
VERB = re.compile(r"(?:python -m |`)(bench|rehearsals) ([a-z][a-z0-9-]+)")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
DATED_PAGES = "docs/results/"
NEAR = 2  # lines either side of a mention that may date it


def tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [path for path in listed if TEXT_FILES.search(path.split("/")[-1]) or path == ".ci/run"]


def make_targets() -> set[str]:
    text = (REPO_ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z0-9-]*):", text, re.M))


@cache
def verbs(package: str) -> set[str]:
    """The commands `python -m PACKAGE --help` lists."""
    usage = subprocess.run(
        [sys.executable, "-m", package, "--help"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout
    return set(re.search(r"\{([a-z,-]+)\}", usage)[1].split(","))


def dated(lines: list[str], number: int) -> bool:
    window = lines[max(0, number - NEAR) : number + NEAR + 1]
    return any(DATE.search(line) for line in window)


def undated_mentions() -> list[str]:
    targets = make_targets()
    found = []
    for path in tracked():
        if path.startswith("tests/docs/"):
            continue
        lines = (REPO_ROOT / path).read_text(errors="replace").splitlines()
        fenced = False
        for number, line in enumerate(lines):
            fenced ^= line.lstrip().startswith("```")
            named = MAKE.findall(line) + (MAKE_LINE.findall(line) if fenced else [])
            for target in named:
                if target not in targets:
                    found.append(f"{path}:{number + 1}: make {target}")
            for package, verb in VERB.findall(line):
                if verb in verbs(package) or path.startswith(DATED_PAGES):
                    continue
                if not dated(lines, number):
                    found.append(f"{path}:{number + 1}: {package} {verb}")
    return found


def test_every_command_named_exists_or_is_dated() -> None:
    assert undated_mentions() == []
