"""The prompts the real target's heads learn from: chat, code, JSON and extraction, and
multi-turn conversations, written from code (no dataset hub is reachable here) and seeded, so
every machine writes the same set.

Each prompt is an OpenAI chat conversation with user turns only: the target answers every
turn itself (self-distillation, training/regenerate.py), so a head learns what this target
says. The held-out split is by conversation (training/rows.py's stable hash): the figures on
held-out prompts are on conversations no head saw.
"""

from __future__ import annotations

import inspect
import json
import random
import textwrap
from collections.abc import Iterator
from typing import Any

SEED = 20261202

TOPICS = (
    "ocean tides", "photosynthesis", "rainbows", "the phases of the moon", "bread baking",
    "bicycles", "volcanoes", "coffee", "the seasons", "thunderstorms", "glaciers", "honey bees",
    "airplanes", "ice", "the northern lights", "earthquakes", "compost", "tea", "snowflakes",
    "wind power", "clouds", "rivers", "mountains", "libraries", "the internet", "electricity",
    "vaccines", "black holes", "dinosaurs", "the Roman Empire", "the printing press",
    "democracy", "recycling", "sleep", "exercise", "meditation", "chess", "jazz", "painting",
    "photography", "gardening", "rainforests", "deserts", "coral reefs", "whales", "ants",
    "the human heart", "the immune system", "DNA", "gravity", "magnets", "light", "sound",
    "batteries", "solar panels", "electric cars", "trains", "bridges", "skyscrapers", "maps",
    "time zones", "money", "inflation", "banks", "taxes", "job interviews", "public speaking",
    "learning a language", "reading", "writing essays", "cooking pasta", "making soup",
    "camping", "hiking", "swimming", "running a marathon", "football", "the Olympics",
    "machine learning", "deep learning", "databases", "cloud computing", "cybersecurity",
    "passwords", "email", "smartphones", "video games", "robots", "space travel", "Mars",
    "the Moon landing", "the solar system", "climate change", "forests", "birds", "cats",
    "dogs", "friendship", "time management", "saving money", "healthy eating", "water",
)  # fmt: skip

CHAT_FORMS = (
    "What is {}?",
    "Explain {} in simple terms.",
    "Explain {} to a ten-year-old.",
    "Write a short paragraph about {}.",
    "Give me three interesting facts about {}.",
    "Why is {} important?",
    "Describe {} in three sentences.",
    "What are the benefits and drawbacks of {}?",
    "Write a short poem about {}.",
    "Tell me a short story about {}.",
    "What should a beginner know about {}?",
    "List five tips related to {}.",
    "How would you explain {} to a friend?",
    "What is the history of {}?",
    "Write a haiku about {}.",
    "Summarize what people should know about {} in one paragraph.",
)

PAIRS = (
    ("a virus", "a bacterium"), ("weather", "climate"), ("a lake", "a sea"),
    ("RAM", "storage"), ("a list", "a tuple in Python"), ("TCP", "UDP"),
    ("an alligator", "a crocodile"), ("baking soda", "baking powder"), ("a comet", "an asteroid"),
    ("speed", "velocity"), ("a democracy", "a monarchy"), ("HTML", "CSS"),
    ("a loan", "a grant"), ("coffee", "tea"), ("a star", "a planet"), ("frogs", "toads"),
    ("SQL", "NoSQL databases"), ("a noun", "a verb"), ("mitosis", "meiosis"),
    ("renting", "buying a home"),
)  # fmt: skip

CODE_TASKS = (
    "reverses a string", "checks whether a number is prime", "returns the n-th Fibonacci number",
    "counts the vowels in a string", "removes duplicates from a list while keeping order",
    "finds the largest element of a list", "checks whether a string is a palindrome",
    "merges two sorted lists", "computes the factorial of n", "flattens a nested list",
    "converts Celsius to Fahrenheit", "counts how often each word occurs in a text",
    "returns the common elements of two lists", "sorts a list of dictionaries by a key",
    "reads a CSV file and returns its rows", "computes the average of a list of numbers",
    "checks whether two strings are anagrams", "returns the second largest number in a list",
    "capitalizes the first letter of every word", "computes the greatest common divisor",
    "checks whether a year is a leap year", "transposes a matrix", "binary searches a sorted list",
    "validates an email address with a regular expression", "chunks a list into pieces of n",
    "returns the sum of the digits of an integer", "finds the longest word in a sentence",
    "rotates a list by k positions", "converts a Roman numeral to an integer",
    "implements a stack class with push and pop",
)  # fmt: skip

CODE_FORMS = (
    "Write a Python function that {}.",
    "Write a Python function that {}, with a docstring.",
    "Show me how to write a function in Python that {}.",
    "Write a JavaScript function that {}.",
)

CODE_QUESTIONS = (
    "What does `{}` do in Python?",
    "How do I use `{}` in Python? Give a short example.",
)
PYTHON_NAMES = (
    "enumerate", "zip", "sorted", "map", "filter", "any", "all", "isinstance", "range",
    "dict.get", "str.join", "str.split", "list.append", "set", "lambda", "with open",
    "try/except", "yield", "f-strings", "list comprehensions",
)  # fmt: skip

PEOPLE = (
    ("Maria Lopez", 34, "Madrid", "engineer"), ("John Smith", 52, "Chicago", "teacher"),
    ("Aiko Tanaka", 28, "Osaka", "designer"), ("Peter Novak", 41, "Prague", "doctor"),
    ("Fatima Khan", 25, "Karachi", "student"), ("Lucas Silva", 37, "Lisbon", "chef"),
    ("Emma Brown", 63, "Leeds", "nurse"), ("Chen Wei", 45, "Shanghai", "architect"),
    ("Olga Ivanova", 30, "Kazan", "pilot"), ("David Cohen", 58, "Haifa", "lawyer"),
    ("Amara Obi", 22, "Lagos", "artist"), ("Sofia Rossi", 49, "Turin", "journalist"),
)  # fmt: skip
PRODUCTS = (
    ("laptop", 1299, "black"), ("coffee maker", 89, "silver"), ("running shoes", 120, "blue"),
    ("desk lamp", 35, "white"), ("backpack", 60, "green"), ("headphones", 199, "red"),
    ("water bottle", 18, "orange"), ("office chair", 240, "gray"),
)  # fmt: skip
JSON_THINGS = (
    "a book", "a movie", "a city", "a recipe", "a car", "a planet", "a song", "a country",
    "a restaurant", "a programming language", "a sports team", "a museum",
)  # fmt: skip

FOLLOW_UPS = (
    "Can you summarize that in one sentence?",
    "Can you give me an example?",
    "Why is that?",
    "Can you explain it more simply?",
    "What else should I know?",
    "Thank you! Can you make it shorter?",
)

SUMMARY_FORMS = (
    "Summarize the following text in two sentences:\n\n{}",
    "What is the main idea of this text?\n\n{}",
    "List the key points of this text:\n\n{}",
)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def chat(rng: random.Random) -> Iterator[list[dict[str, Any]]]:
    for topic in TOPICS:
        for form in rng.sample(CHAT_FORMS, 5):
            yield [user(form.format(topic))]
    for a, b in PAIRS:
        yield [user(f"What is the difference between {a} and {b}?")]
        yield [user(f"Compare {a} and {b} in a short paragraph.")]


def code(rng: random.Random) -> Iterator[list[dict[str, Any]]]:
    for task in CODE_TASKS:
        for form in rng.sample(CODE_FORMS, 3):
            yield [user(form.format(task))]
    for name in PYTHON_NAMES:
        for form in CODE_QUESTIONS:
            yield [user(form.format(name))]


def structured(rng: random.Random) -> Iterator[list[dict[str, Any]]]:
    for name, age, city, job in PEOPLE:
        sentence = f"{name} is a {age}-year-old {job} who lives in {city}."
        yield [user(f"Extract the name, age and city from this text as JSON: {sentence}")]
        yield [user(f"Return a JSON object with the fields name, job and city for: {sentence}")]
    for item, price, color in PRODUCTS:
        text = f"The {color} {item} costs ${price} and ships in {rng.randint(2, 9)} days."
        yield [user(f"Extract the product, price and color as JSON from: {text}")]
    for thing in JSON_THINGS:
        yield [user(f"Describe {thing} as a JSON object with three fields.")]
        yield [user(f"Give me a JSON list of three examples of {thing}, each with a name.")]


def summaries(rng: random.Random, count: int) -> Iterator[list[dict[str, Any]]]:
    """Summaries of English paragraphs from the standard library's own docstrings."""
    import collections
    import email
    import json as json_module
    import logging
    import pathlib
    import statistics
    import textwrap as textwrap_module
    import urllib.parse

    paragraphs = []
    for module in (collections, email, json_module, logging, pathlib, statistics,
                   textwrap_module, urllib.parse, random, inspect):  # fmt: skip
        for _, member in inspect.getmembers(module):
            doc = inspect.getdoc(member) or ""
            paragraph = textwrap.dedent(doc.split("\n\n")[0]).strip()
            if 160 <= len(paragraph) <= 700 and ">>>" not in paragraph:
                paragraphs.append(" ".join(paragraph.split()))
    paragraphs = sorted(set(paragraphs))
    for paragraph in rng.sample(paragraphs, min(count, len(paragraphs))):
        yield [user(rng.choice(SUMMARY_FORMS).format(paragraph))]


def multi_turn(rng: random.Random, count: int) -> Iterator[list[dict[str, Any]]]:
    """A question, the target's answer (left empty: the target writes it), a follow-up."""
    for topic in rng.sample(TOPICS, count):
        first = rng.choice(CHAT_FORMS[:8]).format(topic)
        yield [user(first), {"role": "assistant", "content": ""}, user(rng.choice(FOLLOW_UPS))]


def conversations() -> list[dict[str, Any]]:
    """Every conversation, each as {"messages": [...], "kind": ...}, in a fixed order."""
    rng = random.Random(SEED)
    kinds = {
        "chat": list(chat(rng)),
        "code": list(code(rng)),
        "json": list(structured(rng)),
        "summary": list(summaries(rng, 120)),
        "multi_turn": list(multi_turn(rng, 80)),
    }
    return [
        {"messages": messages, "kind": kind} for kind, items in kinds.items() for messages in items
    ]


if __name__ == "__main__":
    for record in conversations():
        print(json.dumps(record))
