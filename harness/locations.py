"""Where things are on this machine: the checkout, its entrypoint, and the demo trees
(`make demo-model`, `quick-model`, `trained-model`) a test or a benchmark serves."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = REPO_ROOT / "entrypoint.sh"
# The suite's test switches, for PYTHONPATH (harness/site/sitecustomize.py).
SITE_DIR = REPO_ROOT / "harness" / "site"
RANDOM_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml"
TRAINED_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml_trained"
# The first `make serve`'s pair, trained in minutes: a P-EAGLE head only.
QUICK_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml_quick"
# The real pair (`make real-model`): SmolLM2-135M-Instruct and its shipped P-EAGLE and EAGLE-3
# heads (model_data_sources/smollm2), what `make serve` serves.
REAL_ROOT = REPO_ROOT / "build" / "opt_ml_smollm2"
# The trained demo pair keeps its sequential EAGLE-3 head in a second channel.
EAGLE3_CHANNEL = "eagle3"


def default_opt_ml_root() -> Path:
    """The trained demo pair when it is built (`make trained-model`), the random one otherwise."""
    if (TRAINED_DEMO_ROOT / ".stamp").is_file():
        return TRAINED_DEMO_ROOT
    return RANDOM_DEMO_ROOT
