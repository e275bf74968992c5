"""Helpers for the preflight tests: breaking a copy of the demo pair, and running the check.

Every case copies the demo pair (tests/preflight/conftest.py), breaks one thing, and runs
`python -m serving check` as the container would, with OPT_ML_ROOT pointing at the copy.
None of them starts vLLM.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from harness.host import CONTAINER_PREFIXES
from harness.locations import REPO_ROOT
from serving.preflight.safetensors_headers import DTYPE_BYTES

PEAGLE = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}
EXIT_BAD_CONFIG = 2
SUMMARY = "speculation: method=eagle3 p-eagle=on K=3"


def head_dir(root: Path) -> Path:
    return root / "additional-model-data-sources" / "eagle"


def target_dir(root: Path) -> Path:
    return root / "model"


def edit_json(path: Path, **changes) -> None:
    """Set keys (None removes one) in a JSON config file."""
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config, indent=2))


def edit_head(root: Path, **changes) -> None:
    edit_json(head_dir(root) / "config.json", **changes)


def edit_target(root: Path, **changes) -> None:
    edit_json(target_dir(root) / "config.json", **changes)


def read_safetensors(path: Path) -> dict[str, tuple[str, list[int], bytes]]:
    blob = path.read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + size])
    data = blob[8 + size :]
    return {
        name: (
            entry["dtype"],
            entry["shape"],
            data[entry["data_offsets"][0] : entry["data_offsets"][1]],
        )
        for name, entry in header.items()
        if name != "__metadata__"
    }


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, offset = {}, 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(t[2] for t in tensors.values()))


def edit_weights(root: Path, drop: tuple[str, ...] = (), **shapes: tuple[str, list[int]]) -> None:
    """Drop tensors, or set tensors (zeros) of the given dtype and shape, in the head's weights."""
    path = head_dir(root) / "model.safetensors"
    tensors = read_safetensors(path)
    for name in drop:
        del tensors[name]
    for name, (dtype, shape) in shapes.items():
        count = 1
        for size in shape:
            count *= size
        tensors[name] = (dtype, shape, bytes(count * DTYPE_BYTES[dtype]))
    write_safetensors(path, tensors)


def clean_env(root: Path, spec: dict | str | None, **extra: str) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(CONTAINER_PREFIXES)
    }
    env["OPT_ML_ROOT"] = str(root)
    if spec is not None:
        env["SM_VLLM_SPECULATIVE_CONFIG"] = spec if isinstance(spec, str) else json.dumps(spec)
    env.update(extra)
    return env


def run_check(root: Path, spec: dict | str | None = PEAGLE, **extra: str):
    return subprocess.run(
        [sys.executable, "-m", "serving", "check"],
        cwd=REPO_ROOT,
        env=clean_env(root, spec, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def logged(result) -> str:
    # Whichever stream the log handler writes to.
    return result.stdout + result.stderr


def problems(result) -> list[str]:
    """The logged problems, without the closing "start-up stopped" line."""
    return [
        line
        for line in logged(result).splitlines()
        if " ERROR " in line and "start-up stopped" not in line
    ]


def assert_fails(result, *fragments: str) -> None:
    """Exit code 2 and every fragment in one logged ERROR line (one sentence per problem)."""
    assert result.returncode == EXIT_BAD_CONFIG, logged(result)
    assert any(all(f in line for f in fragments) for line in problems(result)), logged(result)


def assert_passes(result) -> None:
    assert result.returncode == 0, logged(result)
    assert SUMMARY in logged(result)


def assert_warns(result, *fragments: str) -> None:
    assert result.returncode == 0, logged(result)
    warnings = [line for line in logged(result).splitlines() if " WARNING " in line]
    assert any(all(f in line for f in fragments) for line in warnings), logged(result)


def to_speculators_layout(root: Path, kind: str = "peagle") -> dict:
    """Rewrite the demo head's config in the `speculators` library's layout."""
    path = head_dir(root) / "config.json"
    native = json.loads(path.read_text())
    layer_keys = (
        "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "intermediate_size", "hidden_act", "rms_norm_eps", "rope_theta",
        "max_position_embeddings", "vocab_size", "bos_token_id", "eos_token_id",
        "tie_word_embeddings",
    )  # fmt: skip
    config = {
        "architectures": ["PEagleSpeculator" if kind == "peagle" else "Eagle3Speculator"],
        "speculators_model_type": kind,
        "speculators_version": "0.3.0",
        "transformer_layer_config": {"model_type": "llama", **{k: native[k] for k in layer_keys}},
        "draft_vocab_size": native["draft_vocab_size"],
        "target_hidden_size": native["target_hidden_size"],
        "eagle_aux_hidden_state_layer_ids": native["eagle_aux_hidden_state_layer_ids"],
        "norm_before_residual": False,
        "speculators_config": {
            "algorithm": kind,
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {
                "name_or_path": str(target_dir(root)),
                "architectures": ["LlamaForCausalLM"],
            },
        },
        "torch_dtype": "float32",
    }
    if kind == "peagle":
        config["mask_token_id"] = native["ptd_token_id"]
    path.write_text(json.dumps(config, indent=2))
    return config
