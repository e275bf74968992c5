"""The training corpus: CPython's own standard library, which every machine with Python has.

Three kinds of documents:
- chat samples, one per documented function or method: the user sends the signature and
  docstring under the same instruction the benchmark sends with HumanEval prompts, and the
  assistant answers with the whole function. They teach the target the serving format.
- raw source chunks, for plain code modelling.
- tool-use conversations (model_data_sources/tool_use.py), spread evenly through the first
  documents, which every recipe's training reaches: the target learns its template's
  tool-call syntax.

Everything is sorted and shuffled with a fixed seed, so the corpus is identical on every run
of one Python version (its hash is part of the build's cache key).
"""

from __future__ import annotations

import ast
import hashlib
import random
import textwrap
from dataclasses import dataclass
from pathlib import Path

from model_data_sources import tool_use
from model_data_sources.tokenizer import stdlib_dir

# The benchmark's instruction (bench/prompts.py); repeated, not imported, so the builder
# does not depend on the serving package.
CODE_INSTRUCTION = "Complete the following Python function.\n\n"
PACKAGES = ("asyncio", "collections", "concurrent/futures", "email", "http", "importlib", "json")
PACKAGES += ("logging", "urllib")
MAX_FUNCTION_CHARS = 1600
RAW_CHUNK_CHARS = 1500
# About 7% of the tokens the full recipe trains on: one after every TOOL_SPACING documents,
# through the first 3,200, so that both recipes see them to the end of their training (the
# full one reads about 2,900 documents, the quick one 1,700). Bunched at the start, the full
# recipe's target forgot them: it wrote no call.
TOOL_DOCUMENTS = 800
TOOL_SPACING = 3


@dataclass(frozen=True)
class ChatSample:
    prompt: str  # the user's message
    answer: str  # the assistant's message


def corpus_files() -> list[Path]:
    root = stdlib_dir()
    files = sorted(root.glob("*.py"))
    for package in PACKAGES:
        files += sorted((root / package).glob("*.py"))
    return [path for path in files if path.is_file()]


def corpus_hash() -> str:
    digest = hashlib.sha256()
    for path in corpus_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read_source(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def function_samples(source: str) -> list[ChatSample]:
    """One sample per function or method whose body starts with a docstring."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    samples = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if ast.get_docstring(node) is None or len(node.body) < 2:
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        docstring_end = node.body[0].end_lineno
        whole = textwrap.dedent("".join(lines[start : node.end_lineno]))
        if len(whole) > MAX_FUNCTION_CHARS:
            continue
        head = textwrap.dedent("".join(lines[start:docstring_end]))
        samples.append(ChatSample(CODE_INSTRUCTION + head, f"```python\n{whole}```"))
    return samples


def raw_chunks(source: str) -> list[str]:
    """The module cut at top-level statements into pieces of about RAW_CHUNK_CHARS."""
    chunks, current = [], ""
    for block in source.split("\n\n\n"):
        if current and len(current) + len(block) > RAW_CHUNK_CHARS:
            chunks.append(current)
            current = ""
        current += block + "\n\n\n"
    if current.strip():
        chunks.append(current)
    return chunks


def chat_text(sample: ChatSample, with_answer: bool = True) -> str:
    """ChatML, exactly as the tokenizer's chat template renders it."""
    text = f"<|im_start|>user\n{sample.prompt}<|im_end|>\n<|im_start|>assistant\n"
    return text + f"{sample.answer}<|im_end|>\n" if with_answer else text


@dataclass(frozen=True)
class Corpus:
    train_documents: list[str]  # for the target's language modelling
    prompt_samples: list[ChatSample]  # held out of the target's training; the heads' prompts
    tool_prompts: list[str]  # tool-use conversations up to the assistant's turn, rendered
    json_prompts: list[tuple[str, dict]]  # JSON questions, rendered, and their answers' schema


def build_corpus(
    seed: int, num_prompt_samples: int, num_tool_prompts: int = 0, num_json_prompts: int = 0
) -> Corpus:
    samples: list[ChatSample] = []
    chunks: list[str] = []
    for path in corpus_files():
        source = read_source(path)
        if source is None:
            continue
        samples += function_samples(source)
        chunks += raw_chunks(source)
    rng = random.Random(seed)
    rng.shuffle(samples)
    prompt_samples, train_samples = samples[:num_prompt_samples], samples[num_prompt_samples:]
    documents = [chat_text(sample) for sample in train_samples] + chunks
    rng.shuffle(documents)
    # Short answers for the code questions among the tools: the conversation must fit a window.
    code = [(s.prompt, s.answer) for s in train_samples if len(s.prompt + s.answer) < 600][:200]
    for index, document in enumerate(tool_use.documents(seed, TOOL_DOCUMENTS, code)):
        documents.insert(index * (TOOL_SPACING + 1), document)
    tool_prompts = tool_use.prompts(seed + 1, num_tool_prompts, code)
    json_prompts = tool_use.json_prompts(seed + 2, num_json_prompts)
    return Corpus(documents, prompt_samples, tool_prompts, json_prompts)
