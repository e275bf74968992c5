"""Preflight's copied vLLM facts (serving/preflight/vllm_facts.py) against the installed vLLM.

Preflight never imports vLLM; these tests do, in a subprocess (vLLM pulls in torch), or read
its source, so a vLLM upgrade that changes a fact fails here rather than in production.
"""

from __future__ import annotations

import ast
import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from serving.preflight import vllm_facts
from serving.preflight.head_layouts import parse_head_config
from tests.support.preflight import head_dir, to_speculators_layout

# Run in a subprocess: vLLM pulls in torch, which the checker must never need.
# argv[1] is a JSON list of speculators configs to translate as vLLM does.
VLLM_FACTS = """
import dataclasses, json, sys, typing
from vllm.config import speculative
from vllm.transformers_utils.configs.speculators.base import SpeculatorsConfig

def literal_values(kind):
    args = typing.get_args(kind)
    if not args:
        return [kind]
    return [value for arg in args for value in literal_values(arg)]

def without_model(method):
    # What SpeculativeConfig does with a method and K but no "model" and no target.
    try:
        speculative.SpeculativeConfig(
            method=method, num_speculative_tokens=1, prompt_lookup_max=4
        )
    except Exception as error:
        message = str(error)
        if "without speculative model" in message:
            return "needs a model"
        if "target_model_config must be present" in message:
            return "target checkpoint"
        if "requires 'model'" in message:
            return "class path"
    return "no drafter"  # past the model check, whatever failed later

methods = literal_values(speculative.SpeculativeMethod)
print(json.dumps({
    "fields": [f.name for f in dataclasses.fields(speculative.SpeculativeConfig)],
    "methods": methods,
    "mtp_methods": literal_values(speculative.MTPModelTypes),
    "without_model": {method: without_model(method) for method in methods},
    "translated": [
        SpeculatorsConfig.extract_transformers_pre_trained_config(config)
        for config in json.loads(sys.argv[1])
    ],
}))
"""


def with_dropped_keys(config: dict, where: str) -> dict:
    """The config with fc_norm and norm_output on, at the top level or in the layer config."""
    config = copy.deepcopy(config)
    target = config if where == "top level" else config["transformer_layer_config"]
    target.update(fc_norm=True, norm_output=True)
    return config


@pytest.fixture(scope="module")
def installed(demo_pair, tmp_path_factory) -> dict:
    peagle_root = Path(shutil.copytree(demo_pair, tmp_path_factory.mktemp("peagle") / "opt_ml"))
    eagle3_root = Path(shutil.copytree(demo_pair, tmp_path_factory.mktemp("eagle3") / "opt_ml"))
    peagle = to_speculators_layout(peagle_root)
    eagle3 = to_speculators_layout(eagle3_root, kind="eagle3")
    variants = {
        "peagle": peagle,
        "peagle, top level": with_dropped_keys(peagle, "top level"),
        "peagle, layer config": with_dropped_keys(peagle, "layer config"),
        "eagle3, top level": with_dropped_keys(eagle3, "top level"),
    }
    out = subprocess.run(
        [sys.executable, "-c", VLLM_FACTS, json.dumps(list(variants.values()))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    facts = json.loads(out.splitlines()[-1])
    facts["variants"] = dict(zip(variants, facts.pop("translated"), strict=True))
    facts["configs"] = variants
    facts["speculators"] = facts["variants"]["peagle"]
    facts["speculators_config"] = peagle
    facts["speculators_path"] = head_dir(peagle_root) / "config.json"
    return facts


def test_speculative_config_fields_match_the_installed_vllm(installed):
    assert list(vllm_facts.SPECULATIVE_CONFIG_FIELDS) == installed["fields"]


def test_speculative_methods_match_the_installed_vllm(installed):
    assert set(installed["methods"]) == vllm_facts.SPECULATIVE_METHODS


def test_speculators_layout_is_read_as_vllm_reads_it(installed):
    translated = installed["speculators"]
    problems: list[str] = []
    head = parse_head_config(
        installed["speculators_config"], installed["speculators_path"], problems
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
    assert expected == vllm_facts.EAGLE3_TARGET_ARCHITECTURES


def test_eagle3_drafter_architectures_match_the_installed_vllm():
    drafters = registry_tables()["_SPECULATIVE_DECODING_MODELS"]
    expected = {
        arch: module for arch, (module, _) in drafters.items() if module.endswith("_eagle3")
    }
    assert expected == vllm_facts.EAGLE3_DRAFTER_ARCHITECTURES


def test_dflash_and_dspark_heads_are_known_as_the_installed_vllm_knows_them():
    drafters = registry_tables()["_SPECULATIVE_DECODING_MODELS"]
    named = {arch for arch in drafters if arch.startswith(("DFlash", "DSpark"))}
    assert set(vllm_facts.OTHER_PARALLEL_DRAFTER_ARCHITECTURES) <= named
    algos = vllm_source() / "transformers_utils" / "configs" / "speculators" / "algos.py"
    registered = {
        decorator.args[0].value
        for node in ast.walk(ast.parse(algos.read_text()))
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and getattr(decorator.func, "id", "") == "register_speculator"
    }
    assert set(vllm_facts.OTHER_PARALLEL_DRAFTERS) == registered - {"eagle3", "peagle"}
    methods = {method for _, method in vllm_facts.OTHER_PARALLEL_DRAFTERS.values()}
    assert methods <= vllm_facts.PARALLEL_DRAFTING_METHODS & vllm_facts.SPECULATIVE_METHODS


def test_mtp_methods_match_the_installed_vllm(installed):
    assert set(installed["mtp_methods"]) == vllm_facts.MTP_METHODS


def test_what_each_method_drafts_with_matches_the_installed_vllm(installed):
    expected = {
        method: "no drafter"
        if method in vllm_facts.MODEL_FREE_METHODS
        else "target checkpoint"
        if method in vllm_facts.TARGET_CHECKPOINT_METHODS
        else "class path"
        if method == vllm_facts.CUSTOM_CLASS_METHOD
        else "needs a model"
        for method in installed["methods"]
    }
    assert installed["without_model"] == expected


@pytest.mark.parametrize(
    "variant", ["peagle", "peagle, top level", "peagle, layer config", "eagle3, top level"]
)
def test_keys_update_peagle_drops_match_the_installed_vllm(installed, variant):
    config = installed["configs"][variant]
    problems: list[str] = []
    head = parse_head_config(config, installed["speculators_path"], problems)
    translated = installed["variants"][variant]
    lost = tuple(
        key
        for key in vllm_facts.PEAGLE_DROPPED_KEYS
        if (config.get(key) or config["transformer_layer_config"].get(key))
        and not translated.get(key)
    )
    assert head.dropped_keys == lost
    assert (variant == "peagle, top level") == bool(lost)
