"""Real-shaped model data sources of public P-EAGLE pairs, with no weights: what a user can
`check` on a laptop before uploading the real ones.

`python -m model_data_sources.public_shapes ROOT` writes, for each pair in pairs.json
(Qwen3-Coder-30B-A3B-Instruct-FP8, GPT-OSS-20B, Gemma-4-31B-IT and their P-EAGLE heads),
`ROOT/<name>/model` (the target's config.json and chat template) and
`ROOT/<name>/additional-model-data-sources/eagle` (the head's config.json and a
model.safetensors holding only its header: every tensor's name, dtype and shape, the data
left out). That is everything the container's preflight reads, so `check` judges these as it
judges the real checkpoints, in a second, without a GPU. `ROOT/<name>/speculative-config.json`
is the SM_VLLM_SPECULATIVE_CONFIG to check them with.

pairs.json says where each value was read and which could not be confirmed from a public
file here (see its `_about`). A subpackage, so the demo pairs' build hash (the top-level
modules) does not change with it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

PAIRS_FILE = Path(__file__).with_name("pairs.json")
CHANNEL = "eagle"
# The K to check with: P-EAGLE's best on the published figures (7-11), within every head's
# trained depth.
NUM_SPECULATIVE_TOKENS = 7
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "BOOL": 1, "I32": 4, "U8": 1}


def pairs() -> list[dict[str, Any]]:
    return json.loads(PAIRS_FILE.read_text())["pairs"]


def header_only_safetensors(path: Path, tensors: dict[str, list]) -> None:
    """A safetensors file holding the header alone: offsets laid out as the real file's, and
    the data itself left out (sparse: the file's length is the real one's)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "note": "header only, no weights"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = DTYPE_BYTES[dtype]
        for dimension in shape:
            size *= dimension
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as stream:
        stream.write(struct.pack("<Q", len(raw)) + raw)
        stream.truncate(8 + len(raw) + offset)  # a hole, not data: no disk is used for it


def speculative_config(pair: dict[str, Any]) -> dict[str, Any]:
    """The drafter is the default channel, /opt/ml/additional-model-data-sources/eagle."""
    return {
        "method": "eagle3",
        "num_speculative_tokens": NUM_SPECULATIVE_TOKENS,
        "parallel_drafting": True,
    }


def write(root: Path) -> list[Path]:
    """Every pair under `root`; the pairs' folders."""
    written = []
    for pair in pairs():
        folder = root / pair["name"]
        model = folder / "model"
        head = folder / "additional-model-data-sources" / CHANNEL
        model.mkdir(parents=True, exist_ok=True)
        head.mkdir(parents=True, exist_ok=True)
        (model / "config.json").write_text(json.dumps(pair["target_config"], indent=2))
        (model / "chat_template.jinja").write_text(pair["chat_template"])
        (model / "tokenizer_config.json").write_text(
            json.dumps({"chat_template": pair["chat_template"]}, indent=2)
        )
        (head / "config.json").write_text(json.dumps(pair["head_config"], indent=2))
        header_only_safetensors(head / "model.safetensors", pair["head_tensors"])
        (folder / "speculative-config.json").write_text(json.dumps(speculative_config(pair)))
        written.append(folder)
    return written
