"""The target's answers to JSON questions as vLLM serves them: decoded greedily under the JSON
schema's grammar, compiled as the container's vLLM compiles a `response_format` (xgrammar,
whitespace bounded by the container's `max_whitespace_cnt`, serving/engine_args/agents.py).

The heads learn from these answers, token by token as the grammar let them through. Where the
target's own choice is valid JSON for the schema (its `", "`, its indentation up to the bound)
that is its free choice; where the grammar refuses it, the heads learn the token the grammar
let through instead, as they will be asked to draft it.
"""

from __future__ import annotations

import json

import torch
import xgrammar as xgr
from tqdm import tqdm
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from serving.engine_args.agents import STRUCTURED_OUTPUTS

# The structured-outputs config the container starts vLLM with: the trained pair's build
# key holds it, so a new bound retrains the heads.
SERVED = STRUCTURED_OUTPUTS


def compile_schemas(
    tokenizer: PreTrainedTokenizerFast, vocab_size: int, schemas: list[dict]
) -> list[xgr.CompiledGrammar]:
    info = xgr.TokenizerInfo.from_huggingface(
        tokenizer, vocab_size=vocab_size, stop_token_ids=[tokenizer.eos_token_id]
    )
    compiler = xgr.GrammarCompiler(info, max_threads=1)
    return [
        # vllm/v1/structured_output/backend_xgrammar.py with max_whitespace_cnt
        # (vllm_patches/json_whitespace_bound.py).
        compiler.compile_json_schema(
            json.dumps(schema),
            any_whitespace=True,
            max_whitespace_cnt=SERVED["max_whitespace_cnt"],
        )
        for schema in schemas
    ]


@torch.no_grad()
def generate_constrained(
    model: LlamaForCausalLM,
    prompts: list[list[int]],
    grammars: list[xgr.CompiledGrammar],
    new_tokens: int,
    progress: tqdm,
) -> list[list[int]]:
    """Prompt + the target's greedy answer under its grammar: the tokens the grammar refuses
    are masked before the argmax, and the answer ends with the stop token where the grammar
    ends (or after `new_tokens`)."""
    vocab_size = model.config.vocab_size
    sequences = []
    for prompt, grammar in zip(prompts, grammars, strict=True):
        matcher = xgr.GrammarMatcher(grammar)
        bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        sequence = list(prompt)
        input_ids, past = torch.tensor([prompt]), None
        for _ in range(new_tokens):
            output = model(input_ids=input_ids, past_key_values=past, use_cache=True)
            past = output.past_key_values
            logits = output.logits[:, -1, :].float()
            matcher.fill_next_token_bitmask(bitmask)
            xgr.apply_token_bitmask_inplace(logits, bitmask)
            token = int(logits.argmax(-1))
            sequence.append(token)
            if not matcher.accept_token(token) or matcher.is_terminated():
                break
            input_ids = torch.tensor([[token]])
        sequences.append(sequence)
        progress.update(1)
    return sequences


def constrained_labels(greedy: torch.Tensor, sequence: list[int], prompt_length: int) -> None:
    """Set one row of the heads' labels (the target's choice after each position) to the
    choice the grammar let through: the answer's next token, since it was decoded greedily
    under the grammar."""
    answer = torch.tensor(sequence[prompt_length:])
    greedy[prompt_length - 1 : len(sequence) - 1] = answer
