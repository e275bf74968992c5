"""`make serve-model`: it builds the demo pair it is asked to serve, and only that."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.image_files import ROOT


@pytest.mark.parametrize(
    ("opt_ml_root", "build"),
    [
        ("build/opt_ml_smollm2", "model_data_sources.smollm2 build/opt_ml_smollm2"),
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
    builds = [
        line.split(" -m ", 1)[1]
        for line in dry_run.splitlines()
        if " -m model_data_sources" in line
    ]
    if build is None:
        assert builds == []
    else:
        *flags, root = build.split()
        module = flags.pop(0) if flags and flags[0].startswith("model_data_sources") else None
        expected = " ".join([module or "model_data_sources", *flags, str(ROOT / root)])
        assert builds == [expected]


def test_make_serve_serves_the_real_pair_by_default_in_the_dtype_this_cpu_computes_in():
    from harness.host import native_bf16

    dry_run = subprocess.run(
        ["make", "--dry-run", "serve"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    # Under another make (make test) the dry run also prints make's directory lines.
    served = next(line for line in dry_run.splitlines() if "entrypoint.sh serve" in line)
    assert f"OPT_ML_ROOT={ROOT / 'build' / 'opt_ml_smollm2'}" in served
    dtype = "bfloat16" if native_bf16() else "float32"
    assert f"SM_VLLM_DTYPE=${{SM_VLLM_DTYPE:-{dtype}}}" in served
    assert "SM_VLLM_ENFORCE_EAGER=${SM_VLLM_ENFORCE_EAGER:-true}" in served
