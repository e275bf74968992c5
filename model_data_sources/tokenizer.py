"""A small byte-level BPE tokenizer trained on the Python standard library and on tool-use
conversations in the chat template (model_data_sources/tool_use.py), so that a conversation's
roles, tool schemas and calls take few tokens.

Every machine with CPython has the corpus and the conversations are seeded, so the tokenizer
is built offline and identically everywhere.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from model_data_sources import tool_use
from model_data_sources.chat_template import CHAT_TEMPLATE

BOS = "<|begin|>"
EOS = "<|im_end|>"
IM_START = "<|im_start|>"
PAD = "<|pad|>"
MASK = "<|mask|>"
SPECIAL_TOKENS = [PAD, BOS, IM_START, EOS, MASK]

# A fixed, sorted list keeps the corpus (and so the merges) identical on every run.
CORPUS_MODULES = [
    "argparse.py",
    "ast.py",
    "collections/__init__.py",
    "dataclasses.py",
    "functools.py",
    "inspect.py",
    "json/decoder.py",
    "json/encoder.py",
    "pathlib.py",
    "random.py",
    "shutil.py",
    "string.py",
    "textwrap.py",
    "typing.py",
]


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files() -> list[Path]:
    root = stdlib_dir()
    return [root / name for name in CORPUS_MODULES if (root / name).is_file()]


# Tool-use conversations among the tokenizer's text (their seed differs from the target's
# corpus); code questions in them stay unanswered, the stdlib supplies the code.
TOOL_CONVERSATIONS = 300
TOOL_SEED = 7


def iter_corpus() -> Iterator[str]:
    for path in corpus_files():
        yield path.read_text(encoding="utf-8")
    yield from tool_use.documents(TOOL_SEED, TOOL_CONVERSATIONS, [("def f():", "pass")])


def build_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE with `vocab_size` entries, special tokens included."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(iter_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        mask_token=MASK,
        additional_special_tokens=[IM_START],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast
