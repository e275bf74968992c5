"""The target's hidden states for each prepared row, as speculators' trainer reads them.

speculators 0.9.0 gets them only from a vLLM server running `extract_hidden_states` with its
connector, which on vLLM's CPU build needs CUDA streams. This writes the same files from the
HF checkpoint with forward hooks: hs_{row}.safetensors with `hidden_states` [T, 4, H] (the
three auxiliary layers, then the last layer before the final norm) and `token_ids` [T].
Layer id k is the residual stream after k decoder layers, as vLLM counts them.
"""

from __future__ import annotations

from pathlib import Path


def aux_layer_ids(num_layers: int) -> list[int]:
    """EAGLE-3's auxiliary layers (2, L/2, L-3); for a target too shallow for those to be
    three distinct layers (fewer than 8), 1, L/2 and L-1."""
    default = [2, num_layers // 2, num_layers - 3]
    if default[0] < default[1] < default[2]:
        return default
    return [1, num_layers // 2, num_layers - 1]


def extract(
    target_dir: Path, data_dir: Path, out_dir: Path, aux_ids: list[int], dtype: str | None = None
) -> int:
    """Files for every row of the prepared dataset at `data_dir`, the auxiliary layers
    `aux_ids` then the last one (the trainer's target logits); how many. On a CPU the target
    computes in float32 unless `dtype` says otherwise. A row whose file is there already is
    kept: an interrupted extraction goes on where it stopped."""
    import torch
    from datasets import load_from_disk
    from safetensors.torch import save_file
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM

    if torch.cuda.is_available():  # the target in its own dtype, on the first GPU
        model = AutoModelForCausalLM.from_pretrained(target_dir, dtype="auto").to("cuda")
    else:
        cpu_dtype = getattr(torch, dtype) if dtype else torch.float32
        model = AutoModelForCausalLM.from_pretrained(target_dir, dtype=cpu_dtype)
    model.eval()
    device = model.get_input_embeddings().weight.device
    ids = [*aux_ids, model.config.num_hidden_layers]
    captured: dict[int, torch.Tensor] = {}

    def keep(layer_id: int):
        def hook(_module, _inputs, output):
            captured[layer_id] = (output[0] if isinstance(output, tuple) else output)[0]

        return hook

    hooks = [model.model.layers[k - 1].register_forward_hook(keep(k)) for k in ids]
    rows = load_from_disk(str(data_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with torch.no_grad():
            for index in tqdm(range(len(rows)), desc="hidden states", unit="row"):
                out = out_dir / f"hs_{index}.safetensors"
                if out.is_file():
                    continue
                tokens = torch.as_tensor(rows[index]["input_ids"], dtype=torch.long)
                captured.clear()
                model.model(input_ids=tokens[None].to(device))  # the decoder only: no lm_head
                states = torch.stack([captured[k].cpu() for k in ids], dim=1).contiguous()
                partial = out.with_suffix(".partial")
                save_file({"hidden_states": states, "token_ids": tokens.contiguous()}, str(partial))
                partial.rename(out)
    finally:
        for hook in hooks:
            hook.remove()
    return len(rows)
