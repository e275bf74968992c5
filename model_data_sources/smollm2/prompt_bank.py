"""The prompts the real target answers for its heads' data: about 15,000 conversations of the
kinds an endpoint serves (everyday chat, how-to, explanations, comparisons, code, code read
and explained, JSON and extraction, rewriting, summaries, multi-turn, and agents' requests
with tools: tool_sessions.py), written from code (no dataset hub is reachable here) and
seeded.

The bank is written once and kept with the target's answers (answer_bank.py stores both, as
compressed text in the repository), so which Python wrote it does not matter after that:
code and docstrings come from the standard library of the Python that writes it.

Held out from it, and from every head's data, are the sets measured from elsewhere: HumanEval
(workloads/prompts.py) and everyday questions written by hand in another voice
(workloads/prompts.py's `everyday_questions`); the bank writes neither.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import textwrap
from collections.abc import Iterator
from typing import Any

from model_data_sources.smollm2 import tool_sessions

SEED = 20261207

TOPICS = (
    # nature and science
    "ocean tides", "photosynthesis", "rainbows", "the phases of the moon", "volcanoes",
    "glaciers", "honey bees", "the northern lights", "earthquakes", "snowflakes", "clouds",
    "rivers", "rainforests", "deserts", "coral reefs", "whales", "ants", "octopuses",
    "migratory birds", "mushrooms", "wetlands", "tornadoes", "hurricanes", "caves", "fossils",
    "the water cycle", "the carbon cycle", "plate tectonics", "evolution", "genetics", "DNA",
    "cells", "bacteria", "viruses", "the immune system", "the human heart", "the brain",
    "sleep", "memory", "vision", "hearing", "the skeleton", "muscles", "digestion", "vitamins",
    "gravity", "magnets", "light", "sound", "electricity", "friction", "energy", "atoms",
    "chemical reactions", "acids and bases", "the periodic table", "black holes", "comets",
    "the solar system", "Mars", "Jupiter", "the Sun", "galaxies", "the Big Bang", "telescopes",
    "satellites", "space stations", "rockets", "climate change", "air pollution", "recycling",
    "renewable energy", "wind power", "solar panels", "nuclear power", "batteries",
    "drinking water", "soil", "bees and pollination", "endangered species", "national parks",
    # technology
    "the internet", "email", "smartphones", "computers", "operating systems", "web browsers",
    "search engines", "social media", "cloud computing", "data centers", "databases",
    "machine learning", "deep learning", "neural networks", "large language models",
    "computer vision", "robots", "self-driving cars", "electric cars", "drones", "3D printing",
    "cybersecurity", "passwords", "encryption", "two-factor authentication", "phishing",
    "open source software", "version control", "programming languages", "APIs",
    "video games", "virtual reality", "GPS", "Wi-Fi", "Bluetooth", "fiber optics",
    "semiconductors", "quantum computing", "blockchains", "digital cameras", "streaming video",
    # history and society
    "the Roman Empire", "ancient Egypt", "ancient Greece", "the Silk Road", "the printing press",
    "the Industrial Revolution", "the Renaissance", "the Moon landing", "the Olympic Games",
    "democracy", "elections", "the United Nations", "human rights", "trade", "museums",
    "libraries", "newspapers", "the telephone", "railways", "the steam engine", "castles",
    "the Vikings", "the Maya", "the Great Wall of China", "world languages", "writing systems",
    "calendars", "maps", "time zones", "cities", "villages", "migration", "public transport",
    # money and work
    "money", "inflation", "interest rates", "banks", "credit cards", "budgeting",
    "saving for retirement", "investing", "the stock market", "taxes", "insurance",
    "starting a small business", "remote work", "job interviews", "resumes", "negotiation",
    "leadership", "teamwork", "meetings", "customer service", "marketing", "advertising",
    "supply chains", "shipping containers", "freelancing", "time management", "productivity",
    # daily life, health, culture
    "healthy eating", "breakfast", "coffee", "tea", "chocolate", "bread baking", "pizza",
    "cooking rice", "spices", "vegetarian diets", "food safety", "exercise", "running",
    "swimming", "cycling", "yoga", "meditation", "stress", "friendship", "parenting",
    "pets", "dogs", "cats", "houseplants", "gardening", "composting", "moving house",
    "cleaning", "laundry", "travel", "packing for a trip", "camping", "hiking", "road trips",
    "airports", "hotels", "learning a language", "reading", "writing essays", "public speaking",
    "studying for exams", "online courses", "chess", "board games", "puzzles", "music",
    "jazz", "classical music", "playing the guitar", "painting", "photography", "movies",
    "theater", "poetry", "novels", "comics", "fashion", "architecture", "bridges",
    "skyscrapers", "football", "basketball", "tennis", "the marathon", "mountain climbing",
    "birthdays", "weddings", "holidays", "volunteering", "kindness", "habits", "motivation",
)  # fmt: skip

CHAT_FORMS = (
    "What is {}?", "Explain {} in simple terms.", "Explain {} to a ten-year-old.",
    "Write a short paragraph about {}.", "Give me three interesting facts about {}.",
    "Why is {} important?", "Describe {} in three sentences.",
    "What are the benefits and drawbacks of {}?", "Write a short poem about {}.",
    "Tell me a short story about {}.", "What should a beginner know about {}?",
    "List five tips related to {}.", "How would you explain {} to a friend?",
    "What is the history of {}?", "Write a haiku about {}.",
    "Summarize what people should know about {} in one paragraph.",
    "What are common misconceptions about {}?", "How does {} work?",
    "What are the most important things about {}?", "Write a limerick about {}.",
    "Give me a fun fact about {}.", "Write a short blog post introduction about {}.",
    "What questions do people often ask about {}?", "Write a tweet about {}.",
    "How has {} changed over the last hundred years?", "What is the future of {}?",
    "Explain {} in one sentence.", "Write a short dialogue between two people about {}.",
    "What would a world without {} look like?",
    "Give me a quiz question about {} with the answer.", "Create a short lesson plan about {}.",
    "What are three key terms related to {}? Define each.",
    "Write an encouraging note to someone who is curious about {}.",
    "What are the pros and cons of {}? Answer as a list.", "How can I learn more about {}?",
    "Write a product description inspired by {}.",
    "Describe {} to someone who has never heard of it.", "What is surprising about {}?",
    "Write a short speech about {}.", "Explain the science behind {}.",
)  # fmt: skip

HOW_TO = (
    "change a flat tire", "boil an egg", "make a cup of tea", "write a cover letter",
    "prepare for a job interview", "start running", "learn to cook", "plan a budget",
    "save money on groceries", "clean a laptop keyboard", "back up my phone",
    "set up a Python virtual environment", "install Python on Windows", "use git branches",
    "write a good commit message", "make a website", "learn a new language quickly",
    "improve my handwriting", "fall asleep faster", "stop procrastinating", "organize my desk",
    "make friends in a new city", "write a thank-you note", "ask for a raise",
    "give constructive feedback", "prepare a presentation", "take better photos with my phone",
    "grow tomatoes", "care for a houseplant", "train a puppy", "bake bread at home",
    "make pancakes", "cook rice without a rice cooker", "brew coffee with a French press",
    "pack light for a trip", "plan a road trip", "read more books", "take notes in class",
    "study for a math exam", "memorize a speech", "write a short story", "start a journal",
    "meditate", "reduce stress", "drink more water", "stretch after exercise", "fix a leaking tap",
    "paint a room", "hang a picture", "unclog a drain", "choose a laptop",
    "create a strong password", "spot a phishing email", "protect my privacy online",
    "write a SQL query", "debug a Python program", "read a CSV file in Python", "deploy a web app",
    "write unit tests", "learn to type faster", "make a spreadsheet budget", "write a resume",
    "run a meeting", "negotiate a salary", "plan a birthday party", "host a dinner",
    "start a garden", "compost at home", "recycle electronics", "save energy at home",
    "ride a bike safely in a city", "change a light bulb", "iron a shirt", "tie a tie",
    "sew a button", "make a paper airplane", "learn chess", "solve a Rubik's cube",
    "learn to swim", "prepare for a marathon", "write a haiku", "start a podcast", "edit a video",
    "take a screenshot", "clear my browser cache", "name variables well in code",
    "review a pull request", "estimate a software project",
    "explain a technical topic to a non-expert", "apologize sincerely", "say no politely",
)  # fmt: skip
HOW_TO_FORMS = (
    "How do I {}?", "What is the best way to {}?", "Give me step-by-step instructions to {}.",
    "I want to {}. Where should I start?", "What are common mistakes when trying to {}?",
    "Can you give me a checklist to {}?", "How can a beginner {}?", "Explain briefly how to {}.",
)  # fmt: skip

CONCEPTS = (
    "recursion", "a hash table", "a linked list", "a binary search tree", "big O notation",
    "a REST API", "an HTTP request", "a DNS lookup", "a compiler", "an interpreter",
    "garbage collection", "a race condition", "a deadlock", "a database index",
    "a transaction in a database", "caching", "load balancing", "a container image",
    "a virtual machine", "an operating system kernel", "a neural network", "overfitting",
    "gradient descent", "a loss function", "tokenization", "an embedding",
    "attention in transformers", "speculative decoding", "a random forest", "linear regression",
    "a p-value", "the median", "standard deviation", "probability", "compound interest",
    "opportunity cost", "supply and demand", "a budget deficit", "a mortgage", "an index fund",
    "diversification", "a carbon footprint", "the greenhouse effect", "natural selection",
    "an ecosystem", "photosynthesis", "an atom", "a molecule", "a chemical bond", "entropy",
    "momentum", "inertia", "a light-year", "the speed of light", "a vaccine", "an antibiotic",
    "the placebo effect", "a metaphor", "irony", "a thesis statement", "the scientific method",
    "a hypothesis", "critical thinking", "a fallacy", "a contract", "copyright", "an algorithm",
    "a sorting algorithm", "binary numbers", "floating point numbers", "a regular expression",
    "a function in programming", "a class in object-oriented programming",
    "inheritance in programming", "an exception", "unit testing", "continuous integration",
    "version control", "a pull request", "technical debt", "an API key", "public-key cryptography",
    "a firewall", "a VPN", "latency", "bandwidth", "a server", "the cloud", "a microservice",
)  # fmt: skip
EXPLAIN_FORMS = (
    "What is {}?", "Explain {} with an example.", "Explain {} like I'm five.",
    "Why does {} matter?", "Give me a simple analogy for {}.",
    "What is a common misunderstanding about {}?", "Define {} in two sentences.",
    "How would a teacher explain {}?", "When is {} useful?", "Explain {} step by step.",
)  # fmt: skip

PAIRS = (
    ("a virus", "a bacterium"), ("weather", "climate"), ("a lake", "a sea"), ("RAM", "storage"),
    ("a list", "a tuple in Python"), ("TCP", "UDP"), ("an alligator", "a crocodile"),
    ("baking soda", "baking powder"), ("a comet", "an asteroid"), ("speed", "velocity"),
    ("a democracy", "a monarchy"), ("HTML", "CSS"), ("a loan", "a grant"), ("coffee", "tea"),
    ("a star", "a planet"), ("frogs", "toads"), ("SQL", "NoSQL databases"), ("a noun", "a verb"),
    ("mitosis", "meiosis"), ("renting", "buying a home"), ("Python", "JavaScript"),
    ("a process", "a thread"), ("HTTP", "HTTPS"), ("a stock", "a bond"),
    ("a debit card", "a credit card"), ("machine learning", "traditional programming"),
    ("a laptop", "a desktop"), ("email", "instant messaging"), ("a novel", "a short story"),
    ("a violin", "a cello"), ("running", "walking"), ("yoga", "pilates"), ("butter", "margarine"),
    ("a cold", "the flu"), ("a hurricane", "a tornado"), ("a river", "a stream"),
    ("an ape", "a monkey"), ("a republic", "a democracy"), ("inflation", "deflation"),
    ("a compiler", "an interpreter"), ("git merge", "git rebase"), ("a function", "a method"),
    ("an array", "a linked list"), ("a stack", "a queue"), ("static typing", "dynamic typing"),
    ("a library", "a framework"), ("a solar eclipse", "a lunar eclipse"),
    ("weathering", "erosion"), ("a city", "a town"), ("a job", "a career"), ("a goal", "a habit"),
    ("confidence", "arrogance"),
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
    "implements a stack with push and pop", "implements a queue with two stacks",
    "counts the lines in a text file", "returns the n most common words in a text",
    "converts a string to title case", "checks whether brackets in a string are balanced",
    "computes the median of a list", "generates all permutations of a string",
    "returns all subsets of a set", "computes the power set of a list", "parses a date string",
    "computes the number of days between two dates", "converts a number to binary",
    "converts a binary string to an integer", "finds the missing number in a list from 1 to n",
    "returns the index of the first duplicate", "computes a moving average",
    "groups words by their first letter", "merges two dictionaries", "inverts a dictionary",
    "computes the dot product of two vectors", "multiplies two matrices",
    "checks whether a list is sorted", "implements bubble sort", "implements insertion sort",
    "implements merge sort", "implements quicksort", "finds the k smallest elements of a list",
    "removes punctuation from a string", "counts the characters in a string",
    "truncates a string to n characters with an ellipsis", "generates a random password",
    "computes the area of a circle", "computes compound interest", "converts kilometers to miles",
    "validates a phone number", "extracts all numbers from a string",
    "returns the unique characters of a string", "checks whether a number is a perfect square",
    "computes the least common multiple", "finds all prime numbers below n",
    "returns the Collatz sequence of n", "checks whether a string contains only digits",
    "splits a full name into first and last name", "formats a number with thousands separators",
    "reads a JSON file and returns a dictionary", "writes a list of dictionaries to a CSV file",
    "downloads a web page and returns its title", "retries a function call up to three times",
    "measures how long a function takes", "caches the results of a function",
    "implements a simple linked list", "implements a binary tree with insert and search",
    "finds the depth of a binary tree", "performs breadth-first search on a graph",
    "performs depth-first search on a graph", "finds the shortest path in an unweighted graph",
    "counts islands in a grid", "implements a LRU cache", "validates a Sudoku row",
    "computes the Levenshtein distance", "checks whether a sentence is a pangram",
    "encodes a string with a Caesar cipher", "decodes run-length encoding",
    "run-length encodes a string",
)  # fmt: skip
# Python three times in ten: the language asked for most.
LANGUAGES = (
    "Python", "Python", "Python", "JavaScript", "TypeScript", "Java", "Go", "Rust", "C", "C++",
)  # fmt: skip
CODE_FORMS = (
    "Write a {lang} function that {task}.", "Write a {lang} function that {task}, with comments.",
    "Show me how to write a function in {lang} that {task}.",
    "Write a {lang} function that {task} and explain how it works.",
    "Implement a function in {lang} that {task}. Keep it short.",
    "I need a {lang} function that {task}. Can you write it?",
)  # fmt: skip
SQL_TASKS = (
    "selects all customers from Germany", "counts orders per customer",
    "finds the five most expensive products", "joins orders with customers",
    "finds employees who earn more than their manager",
    "computes the average salary per department", "deletes duplicate rows",
    "finds customers without orders", "lists the top three products by sales",
    "updates the price of a product", "creates a table for blog posts",
    "finds the second highest salary",
)  # fmt: skip
SHELL_TASKS = (
    "finds all .log files larger than 10 MB", "counts the lines of every Python file in a folder",
    "renames every .txt file to .md", "shows the ten largest files in a folder",
    "prints the disk usage of each folder", "searches for a word in every file recursively",
    "backs up a folder into a dated tar archive", "kills a process by name",
)  # fmt: skip
CODE_QUESTIONS = (
    "What does `{}` do in Python?", "How do I use `{}` in Python? Give a short example.",
    "When should I use `{}` in Python?", "What is a common mistake with `{}` in Python?",
)  # fmt: skip
PYTHON_NAMES = (
    "enumerate", "zip", "sorted", "map", "filter", "any", "all", "isinstance", "range", "dict.get",
    "str.join", "str.split", "list.append", "set", "lambda", "with open", "try/except", "yield",
    "f-strings", "list comprehensions", "dict comprehensions", "functools.lru_cache",
    "itertools.groupby", "collections.Counter", "collections.defaultdict", "dataclasses",
    "typing.Optional", "pathlib.Path", "argparse", "logging", "json.loads", "re.sub", "async def",
    "await", "*args and **kwargs", "decorators", "context managers", "__init__", "@property",
    "super()", "slicing", "the walrus operator", "assert", "global",
)  # fmt: skip
CODE_READING = (
    "Explain what this Python function does:\n\n```python\n{}```",
    "Add type hints to this function:\n\n```python\n{}```",
    "Write a docstring for this function:\n\n```python\n{}```",
    "Can this function be simplified? Show the simpler version.\n\n```python\n{}```",
    "Write two unit tests for this function:\n\n```python\n{}```",
    "Is there a bug in this code? Explain.\n\n```python\n{}```",
    "Rename the variables in this function to be clearer:\n\n```python\n{}```",
)  # fmt: skip
# Modules whose code and docstrings the bank reads: importing them has no side effects.
STDLIB = (
    "argparse", "ast", "base64", "bisect", "calendar", "cmd", "code", "codecs", "colorsys",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "difflib", "email.utils", "enum",
    "filecmp", "fileinput", "fnmatch", "fractions", "ftplib", "functools", "getopt", "gettext",
    "glob", "graphlib", "gzip", "heapq", "html", "html.parser", "http.client", "http.cookies",
    "imaplib", "inspect", "ipaddress", "json", "keyword", "linecache", "locale", "logging",
    "mailbox", "mimetypes", "netrc", "numbers", "optparse", "pathlib", "pickletools", "platform",
    "plistlib", "poplib", "pprint", "pstats", "queue", "quopri", "random", "reprlib", "sched",
    "secrets", "shlex", "shutil", "smtplib", "statistics", "string", "tarfile", "tempfile",
    "textwrap", "threading", "timeit", "tokenize", "trace", "traceback", "typing", "urllib.parse",
    "urllib.request", "uuid", "warnings", "wave", "weakref", "xml.dom.minidom", "zipfile",
    "zipapp",
)  # fmt: skip

FIRST = (
    "Maria", "John", "Aiko", "Peter", "Fatima", "Lucas", "Emma", "Chen", "Olga", "David", "Amara",
    "Sofia", "Liam", "Noah", "Mia", "Ravi", "Priya", "Hans", "Ingrid", "Kwame", "Yuki", "Carlos",
    "Ana", "Omar", "Leila", "Tom", "Grace", "Ivan", "Elena", "Sam",
)  # fmt: skip
LAST = (
    "Lopez", "Smith", "Tanaka", "Novak", "Khan", "Silva", "Brown", "Wei", "Ivanova", "Cohen",
    "Obi", "Rossi", "Murphy", "Garcia", "Müller", "Patel", "Kim", "Nguyen", "Jensen", "Mensah",
)  # fmt: skip
CITIES = (
    "Madrid", "Chicago", "Osaka", "Prague", "Karachi", "Lisbon", "Leeds", "Shanghai", "Kazan",
    "Haifa", "Lagos", "Turin", "Toronto", "Sydney", "Nairobi", "Lima", "Oslo", "Berlin", "Seoul",
    "Mumbai", "Cairo", "Denver", "Dublin", "Hanoi", "Accra",
)  # fmt: skip
JOBS = (
    "engineer", "teacher", "designer", "doctor", "student", "chef", "nurse", "architect", "pilot",
    "lawyer", "artist", "journalist", "accountant", "farmer", "electrician", "pharmacist",
    "librarian", "developer", "photographer", "dentist",
)  # fmt: skip
PRODUCTS = (
    "laptop", "coffee maker", "running shoes", "desk lamp", "backpack", "headphones",
    "water bottle", "office chair", "phone case", "blender", "tent", "keyboard", "monitor",
    "umbrella", "wrist watch", "bicycle helmet", "yoga mat", "kettle",
)  # fmt: skip
COLORS = ("black", "silver", "blue", "white", "green", "red", "orange", "gray", "yellow", "purple")
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
EVENTS = (
    "team meeting", "dentist appointment", "birthday party", "conference talk", "flight",
    "job interview", "yoga class", "concert", "book club", "product launch",
)  # fmt: skip
JSON_THINGS = (
    "a book", "a movie", "a city", "a recipe", "a car", "a planet", "a song", "a country",
    "a restaurant", "a programming language", "a sports team", "a museum", "a hotel",
    "a university", "an animal", "a video game", "a painting", "a bird", "a mountain", "a river",
    "a board game", "a smartphone", "a job posting", "an invoice", "a user profile",
    "a weather report", "a train timetable", "a shopping list",
)  # fmt: skip
SENTIMENT_TEXTS = (
    "The delivery was late and the box was damaged.", "I love this kettle, it boils in seconds!",
    "The hotel was fine, nothing special.", "Terrible support, I waited two hours.",
    "Great value for the price and very comfortable.", "The app keeps crashing after the update.",
    "Our guide was friendly and knew everything about the old town.",
    "The food was cold but the staff apologized and gave us dessert.",
)  # fmt: skip

FOLLOW_UPS = (
    "Can you summarize that in one sentence?", "Can you give me an example?", "Why is that?",
    "Can you explain it more simply?", "What else should I know?",
    "Thank you! Can you make it shorter?", "Can you put that in a list?",
    "How would that apply to a beginner?", "What is the most important point?",
    "Can you give me another example?", "Is there a downside?",
    "Can you say more about the first point?", "Interesting. What do experts disagree about here?",
    "How would I explain this to my kid?", "Can you turn that into a short quiz?",
    "Great, and what should I avoid?",
)  # fmt: skip
CODE_FOLLOW_UPS = (
    "Can you add error handling?", "How would I test this?", "Can you make it faster?",
    "What is its time complexity?", "Can you write it without a loop?", "Add comments, please.",
    "How would this look in JavaScript?", "What happens with an empty input?",
)  # fmt: skip
REWRITE_FORMS = (
    "Rewrite this sentence to be more formal: {}", "Rewrite this in plain English: {}",
    "Make this sentence shorter: {}", "Fix any grammar mistakes in this text: {}",
    "Rewrite this as a friendly email opening: {}", "Turn this into a bullet list: {}",
    "Paraphrase this: {}", "Translate this into simple words for a child: {}",
)  # fmt: skip
SUMMARY_FORMS = (
    "Summarize the following text in two sentences:\n\n{}",
    "What is the main idea of this text?\n\n{}", "List the key points of this text:\n\n{}",
    "Explain this text in simple words:\n\n{}", "Write a one-line summary of this:\n\n{}",
    "What questions does this text answer?\n\n{}",
)  # fmt: skip

# How many conversations of each kind the bank holds.
COUNTS = {
    "chat": 4200, "how_to": 1400, "explain": 1500, "compare": 450, "code": 2200,
    "code_reading": 900, "json": 1500, "rewrite": 600, "summary": 700, "multi_turn": 1500,
    "tools": 1500,
}  # fmt: skip


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def chat_pool() -> list[str]:
    return [form.format(topic) for topic in TOPICS for form in CHAT_FORMS]


def how_to_pool() -> list[str]:
    return [form.format(task) for task in HOW_TO for form in HOW_TO_FORMS]


def explain_pool() -> list[str]:
    return [form.format(concept) for concept in CONCEPTS for form in EXPLAIN_FORMS]


def compare_pool() -> list[str]:
    forms = ("What is the difference between {} and {}?", "Compare {} and {} in a short paragraph.",
             "{} or {}: which should I choose, and why?", "What do {} and {} have in common?",
             "Make a short table comparing {} and {}.")  # fmt: skip
    pool = [form.format(a, b) for a, b in PAIRS for form in forms]
    return [text[0].upper() + text[1:] for text in pool]


def code_pool() -> list[str]:
    pool = [form.format(lang=lang, task=task) for task in CODE_TASKS for lang in set(LANGUAGES)
            for form in CODE_FORMS]  # fmt: skip
    pool += [f"Write a SQL query that {task}." for task in SQL_TASKS]
    pool += [f"Write a shell command that {task}." for task in SHELL_TASKS]
    return pool + [form.format(name) for name in PYTHON_NAMES for form in CODE_QUESTIONS]


def stdlib_members() -> Iterator[Any]:
    for name in STDLIB:
        module = importlib.import_module(name)
        yield module
        for _, member in inspect.getmembers(module):
            if getattr(member, "__module__", None) == name:
                yield member


def stdlib_functions() -> list[str]:
    """Short functions of the standard library, as source."""
    sources = set()
    for member in stdlib_members():
        if not inspect.isfunction(member) or member.__name__.startswith("_"):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(member))
        except (OSError, TypeError):
            continue
        if 4 <= source.count("\n") <= 22 and len(source) <= 900:
            sources.add(source)
    return sorted(sources)


def stdlib_paragraphs() -> list[str]:
    """Paragraphs of prose from the standard library's docstrings."""
    paragraphs = set()
    for member in stdlib_members():
        for block in (inspect.getdoc(member) or "").split("\n\n"):
            paragraph = " ".join(block.split())
            if 160 <= len(paragraph) <= 700 and ">>>" not in paragraph and "::" not in paragraph:
                paragraphs.add(paragraph)
    return sorted(paragraphs)


def code_reading_pool(rng: random.Random) -> list[str]:
    return [form.format(source) for source in stdlib_functions()
            for form in rng.sample(CODE_READING, 3)]  # fmt: skip


def summary_pool(rng: random.Random) -> list[str]:
    return [
        form.format(text) for text in stdlib_paragraphs() for form in rng.sample(SUMMARY_FORMS, 2)
    ]


def rewrite_pool(rng: random.Random) -> list[str]:
    sentences = set()
    for paragraph in stdlib_paragraphs():
        for sentence in paragraph.split(". "):
            sentence = sentence.rstrip(".") + "."
            if 40 <= len(sentence) <= 200:
                sentences.add(sentence)
    return [rng.choice(REWRITE_FORMS).format(sentence) for sentence in sorted(sentences)]


def person(rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "age": rng.randint(19, 78),
        "city": rng.choice(CITIES),
        "job": rng.choice(JOBS),
    }


def json_task(rng: random.Random) -> str:
    """One JSON or extraction request, from a record made up for it."""
    who = person(rng)
    sentence = f"{who['name']} is a {who['age']}-year-old {who['job']} who lives in {who['city']}."
    item, color = rng.choice(PRODUCTS), rng.choice(COLORS)
    price, days = rng.randint(5, 1500), rng.randint(1, 14)
    product = f"The {color} {item} costs ${price} and ships in {days} days."
    day, month = rng.randint(1, 28), rng.choice(MONTHS)
    hour = rng.randint(8, 19)
    first_name = who["name"].split()[0]
    appointment = (
        f"{first_name}'s {rng.choice(EVENTS)} is on {month} {day} at {hour}:00 in {who['city']}."
    )
    thing = rng.choice(JSON_THINGS)
    capital = rng.choice(("France", "Japan", "Kenya", "Peru", "Canada", "Norway", "Egypt", "India"))
    choices = (
        f"Extract the name, age and city from this text as JSON: {sentence}",
        f"Return a JSON object with the fields name, job and city for: {sentence}",
        f"Extract the product, price and color as JSON from: {product}",
        f"Convert this to JSON with keys event, date, time and place: {appointment}",
        f"Describe {thing} as a JSON object with three fields.",
        f"Give me a JSON list of three examples of {thing}, each with a name.",
        f"Write a JSON schema for {thing}.",
        f'Classify the sentiment of this review as JSON {{"sentiment": ..., "reason": ...}}: '
        f"{rng.choice(SENTIMENT_TEXTS)}",
        f"Return only JSON: the name and age of the person in this text. {sentence}",
        f"Make a JSON array of {rng.randint(2, 5)} made-up users with name, email and age.",
        f"Turn this sentence into a JSON object: {product}",
        f"Answer in JSON with keys answer and confidence: what is the capital of {capital}?",
    )
    return rng.choice(choices)


def json_pool(rng: random.Random, count: int) -> list[str]:
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(json_task(rng), None)
    return list(seen)


def multi_turn(rng: random.Random, firsts: list[str], code_firsts: list[str]) -> list[list[dict]]:
    """Each first question, then one or two follow-ups; the target writes every answer."""
    conversations = []
    for first, follow_ups in [*((f, FOLLOW_UPS) for f in firsts),
                              *((f, CODE_FOLLOW_UPS) for f in code_firsts)]:  # fmt: skip
        messages = [user(first)]
        for follow_up in rng.sample(follow_ups, rng.choice((1, 1, 2))):
            messages += [{"role": "assistant", "content": ""}, user(follow_up)]
        conversations.append(messages)
    return conversations


def conversations() -> list[dict[str, Any]]:
    """Every conversation, each as {"messages": [...], "kind": ...}, in a fixed order; no first
    question is asked twice."""
    rng = random.Random(SEED)
    pools = {
        "chat": chat_pool(), "how_to": how_to_pool(), "explain": explain_pool(),
        "compare": compare_pool(), "code": code_pool(), "code_reading": code_reading_pool(rng),
        "json": json_pool(rng, COUNTS["json"]), "rewrite": rewrite_pool(rng),
        "summary": summary_pool(rng),
    }  # fmt: skip
    asked: set[str] = set()
    for pool in pools.values():  # a question two kinds could ask is asked by the first
        pool[:] = sorted(set(pool) - asked)
        asked.update(pool)
        rng.shuffle(pool)
    bank = [
        {"messages": [user(text)], "kind": kind}
        for kind, pool in pools.items()
        for text in pool[: COUNTS[kind]]
    ]
    # Multi-turn conversations open with questions the single turns left unasked.
    follow_on = [
        text for kind in ("chat", "how_to", "explain") for text in pools[kind][COUNTS[kind] :]
    ]
    rng.shuffle(follow_on)
    code_follow_on = pools["code"][COUNTS["code"] :]
    share = COUNTS["multi_turn"] // 5
    firsts, code_firsts = follow_on[: COUNTS["multi_turn"] - share], code_follow_on[:share]
    bank += [{"messages": m, "kind": "multi_turn"} for m in multi_turn(rng, firsts, code_firsts)]
    # Agent traffic, last (a kind added later goes at the end: answered shards keep their
    # prompts), from a generator of its own so the kinds before it draw what they drew.
    words = {
        "cities": CITIES, "first": FIRST, "last": LAST, "products": PRODUCTS, "colors": COLORS,
        "topics": TOPICS, "months": MONTHS, "events": EVENTS,
    }  # fmt: skip
    bank += tool_sessions.sessions(
        random.Random(SEED + 1), COUNTS["tools"], words, {c["messages"][0]["content"] for c in bank}
    )
    return bank


if __name__ == "__main__":
    for record in conversations():
        print(json.dumps(record))
