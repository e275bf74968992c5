"""`make serve-model`: it builds the demo pair it is asked to serve, and only that."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.image_files import ROOT


@pytest.mark.parametrize(
    ("opt_ml_root", "build"),
    [
        ("build/opt_ml_quick", "--quick build/opt_ml_quick"),
        ("build/opt_ml_trained", "--trained build/opt_ml_trained"),
        (str(ROOT / "build" / "opt_ml"), "build/opt_ml"),
        ("/srv/my-own-pair", None),
    ],
)
def test_make_serve_builds_the_demo_pair_it_serves_and_leaves_a_tree_of_yours_alone(
    opt_ml_root, build
):
    dry_run = subprocess.run(
        ["make", "--dry-run", "serve-model", f"OPT_ML_ROOT={opt_ml_root}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    builds = [line for line in dry_run.splitlines() if " -m model_data_sources" in line]
    if build is None:
        assert builds == []
    else:
        *flags, root = build.split()
        assert [line.split(" -m model_data_sources ")[1] for line in builds] == [
            " ".join([*flags, str(ROOT / root)])
        ]
