"""The prompt bank's agent traffic: requests that offer the target tools, as the agent
frameworks and clients send them, and what the tools answer.

Each session offers one to four tools (the one the request needs among others) in one of
three shapes, by `tool_choice`:
- `named`: the function is named, and the session ends with its call. Structured output
  through a tool: instructor's tools mode, LangChain's `with_structured_output`, pydantic-ai's
  output tools, the OpenAI Agents SDK's output type.
- `required`: a call is forced; the tool's result goes back and the target answers with
  `auto` (an agent's loop: Strands, the OpenAI Agents SDK, LangGraph).
- `auto`: the target decides; where it calls, the result and its answer follow.

No tool runs here: a tool's result is written by `result()`, seeded by the call's name and
arguments, as plausible JSON of the kind such a tool returns, so the target reads and answers
a result as it would in an agent's loop. The requests are written from code and seeded
(prompt_bank.py's word lists), like the rest of the bank.
"""

from __future__ import annotations

import ast
import hashlib
import json
import operator
import random
from typing import Any

# The share of sessions of each shape (they sum to 1).
SHAPES = {"named": 0.4, "required": 0.3, "auto": 0.3}
CONDITIONS = ("sunny", "cloudy", "light rain", "heavy rain", "snow", "fog", "windy", "clear")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR", "BRL", "KRW")
TICKERS = ("AAPL", "MSFT", "AMZN", "GOOGL", "NVDA", "TSLA", "META", "NFLX", "SAP", "ASML")
LANGUAGES = ("French", "Spanish", "German", "Japanese", "Italian", "Portuguese", "Korean")
PHRASES = (
    "Where is the train station?", "Thank you for your help.", "The meeting starts at noon.",
    "Could I see the menu, please?", "My package has not arrived yet.", "Happy birthday!",
    "How much does this cost?", "I would like to book a table for two.",
)  # fmt: skip
TIMEZONES = ("Europe/Madrid", "America/Chicago", "Asia/Tokyo", "Africa/Lagos", "Australia/Sydney")


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def string(description: str, enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {"type": "string", "description": description, **({"enum": list(enum)} if enum else {})}


def number(description: str) -> dict[str, Any]:
    return {"type": "number", "description": description}


def integer(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


TOOLS = {
    "get_weather": tool(
        "get_weather",
        "Get the current weather in a city.",
        {
            "city": string("The city name."),
            "unit": string("Temperature unit.", ("celsius", "fahrenheit")),
        },
        ["city"],
    ),
    "search_web": tool(
        "search_web",
        "Search the web and return the top results.",
        {"query": string("What to search for."), "max_results": integer("How many results.")},
        ["query"],
    ),
    "get_stock_price": tool(
        "get_stock_price",
        "Get the latest price of a stock by its ticker symbol.",
        {"symbol": string("The ticker symbol, e.g. AAPL.")},
        ["symbol"],
    ),
    "convert_currency": tool(
        "convert_currency",
        "Convert an amount of money from one currency to another.",
        {
            "amount": number("The amount to convert."),
            "from_currency": string("ISO code of the currency to convert from."),
            "to_currency": string("ISO code of the currency to convert to."),
        },
        ["amount", "from_currency", "to_currency"],
    ),
    "create_event": tool(
        "create_event",
        "Create an event in the user's calendar.",
        {
            "title": string("The event's title."),
            "date": string("The date, YYYY-MM-DD."),
            "time": string("The start time, HH:MM."),
            "duration_minutes": integer("How long it lasts."),
        },
        ["title", "date", "time"],
    ),
    "send_email": tool(
        "send_email",
        "Send an email.",
        {
            "to": string("The recipient's email address."),
            "subject": string("The subject line."),
            "body": string("The message."),
        },
        ["to", "subject", "body"],
    ),
    "lookup_order": tool(
        "lookup_order",
        "Look up an order's status by its id.",
        {"order_id": string("The order id, e.g. A-10234.")},
        ["order_id"],
    ),
    "search_products": tool(
        "search_products",
        "Search the shop's catalogue.",
        {
            "query": string("What the customer is looking for."),
            "max_price": number("The highest price in dollars."),
            "color": string("A color, if the customer named one."),
        },
        ["query"],
    ),
    "translate": tool(
        "translate",
        "Translate a text into another language.",
        {"text": string("The text to translate."), "target_language": string("The language.")},
        ["text", "target_language"],
    ),
    "get_time": tool(
        "get_time",
        "Get the current local time in a time zone.",
        {"timezone": string("An IANA time zone, e.g. Europe/Paris.")},
        ["timezone"],
    ),
    "calculate": tool(
        "calculate",
        "Evaluate an arithmetic expression.",
        {"expression": string("The expression, e.g. (12 + 7) * 3.")},
        ["expression"],
    ),
    "get_directions": tool(
        "get_directions",
        "Get directions between two places.",
        {
            "origin": string("Where to start."),
            "destination": string("Where to go."),
            "mode": string("How to travel.", ("driving", "walking", "transit", "cycling")),
        },
        ["origin", "destination"],
    ),
}  # fmt: skip


def request(name: str, rng: random.Random, words: dict[str, tuple[str, ...]]) -> str:
    """A user's request that the tool `name` answers."""
    city, other = rng.sample(words["cities"], 2)
    first, last = rng.choice(words["first"]), rng.choice(words["last"])
    item, color = rng.choice(words["products"]), rng.choice(words["colors"])
    topic = rng.choice(words["topics"])
    month, day = rng.choice(words["months"]), rng.randint(1, 28)
    event, hour = rng.choice(words["events"]), rng.randint(8, 19)
    amount, pair = rng.choice((20, 75, 120, 250, 999, 1500, 40000)), rng.sample(CURRENCIES, 2)
    a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 12)
    forms = {
        "get_weather": (
            f"What's the weather like in {city} right now?", f"Is it raining in {city}?",
            f"Should I take a jacket in {city} today?", f"How warm is it in {city} in fahrenheit?",
        ),
        "search_web": (
            f"Search the web for the latest news about {topic}.",
            f"Find me a good introduction to {topic}.", f"Look up who invented {topic}.",
        ),
        "get_stock_price": (
            f"What is {rng.choice(TICKERS)} trading at?",
            f"Get me the price of {rng.choice(TICKERS)}.",
        ),
        "convert_currency": (
            f"How much is {amount} {pair[0]} in {pair[1]}?",
            f"Convert {amount} {pair[0]} to {pair[1]} for me.",
        ),
        "create_event": (
            f"Put a {event} in my calendar on {month} {day} at {hour}:00.",
            f"Schedule a {event} with {first} on {month} {day}, {hour}:30, for an hour.",
        ),
        "send_email": (
            f"Email {first.lower()}.{last.lower()}@example.com that the {event} moved to "
            f"{month} {day}.",
            f"Send {first} ({first.lower()}@example.com) a thank-you note for the {item}.",
        ),
        "lookup_order": (
            f"Where is my order A-{rng.randint(10000, 99999)}?",
            f"Has order B-{rng.randint(10000, 99999)} shipped yet?",
        ),
        "search_products": (
            f"Find me a {color} {item} under ${rng.randint(20, 400)}.",
            f"Do you have any {item} in {color}?", f"Show me your cheapest {item}.",
        ),
        "translate": (
            f"Translate '{rng.choice(PHRASES)}' into {rng.choice(LANGUAGES)}.",
            f"How do you say '{rng.choice(PHRASES)}' in {rng.choice(LANGUAGES)}?",
        ),
        "get_time": (
            f"What time is it in {city} now?", f"What's the local time in {rng.choice(TIMEZONES)}?",
        ),
        "calculate": (
            f"What is ({a} + {b}) * {c}?", f"Calculate {a} times {b} minus {c}.",
            f"What's {a * 17} divided by {c}?",
        ),
        "get_directions": (
            f"How do I get from {city} to {other} by train?",
            f"Give me driving directions from {city} to {other}.",
            f"What's the best way to cycle from the {city} station to the old town?",
        ),
    }  # fmt: skip
    return rng.choice(forms[name])


def sessions(
    rng: random.Random, count: int, words: dict[str, tuple[str, ...]], asked: set[str]
) -> list[dict[str, Any]]:
    """`count` sessions, {"messages", "tools", "tool_choice", "shape", "kind": "tools"}; no
    request is asked twice or is in `asked`."""
    names = sorted(TOOLS)
    shapes = [shape for shape, share in SHAPES.items() for _ in range(round(share * count))]
    shapes = (shapes + ["auto"] * count)[:count]
    rng.shuffle(shapes)
    out, seen = [], set(asked)
    for shape in shapes:
        while True:
            needed = rng.choice(names)
            text = request(needed, rng, words)
            if text not in seen:
                break
        seen.add(text)
        others = rng.sample([n for n in names if n != needed], rng.choice((0, 1, 1, 2, 3)))
        offered = [needed, *others]
        rng.shuffle(offered)
        choice: Any = {"named": {"type": "function", "function": {"name": needed}}}.get(
            shape, shape
        )
        out.append(
            {
                "messages": [{"role": "user", "content": text}],
                "tools": [TOOLS[name] for name in offered],
                "tool_choice": choice,
                "shape": shape,
                "kind": "tools",
            }
        )
    return out


def result(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the tool `name` returns for `arguments`: made up, the same for the same call."""
    seed = hashlib.sha256(json.dumps([name, arguments], sort_keys=True).encode()).digest()
    rng = random.Random(seed)
    text = {k: str(v) for k, v in arguments.items()}
    if name == "get_weather":
        celsius = rng.randint(-8, 36)
        fahrenheit = text.get("unit") == "fahrenheit"
        return {
            "city": text.get("city", ""),
            "temperature": round(celsius * 9 / 5 + 32) if fahrenheit else celsius,
            "unit": "fahrenheit" if fahrenheit else "celsius",
            "conditions": rng.choice(CONDITIONS),
            "humidity_percent": rng.randint(20, 95),
        }
    if name == "search_web":
        query = text.get("query", "")
        return {
            "results": [
                {
                    "title": f"{query.capitalize()}: {heading}",
                    "url": f"https://example.org/{rng.randint(1000, 9999)}",
                }
                for heading in rng.sample(
                    ["an overview", "a beginner's guide", "what to know", "the history",
                     "recent news", "frequently asked questions"], 3
                )
            ]
        }  # fmt: skip
    if name == "get_stock_price":
        return {
            "symbol": text.get("symbol", "").upper(),
            "price": round(rng.uniform(20, 900), 2),
            "change_percent": round(rng.uniform(-4, 4), 2),
            "currency": "USD",
        }
    if name == "convert_currency":
        try:
            amount = float(arguments.get("amount", 0))
        except (TypeError, ValueError):
            amount = 0.0
        rate = round(rng.uniform(0.2, 1.8), 4)
        return {"amount": amount, "rate": rate, "converted": round(amount * rate, 2)}
    if name == "create_event":
        return {"status": "created", "event_id": f"evt_{rng.randint(100000, 999999)}"}
    if name == "send_email":
        return {"status": "sent", "message_id": f"msg_{rng.randint(100000, 999999)}"}
    if name == "lookup_order":
        status = rng.choice(("processing", "shipped", "out for delivery", "delivered"))
        return {"order_id": text.get("order_id", ""), "status": status,
                "estimated_delivery": f"2026-12-{rng.randint(8, 23):02d}"}  # fmt: skip
    if name == "search_products":
        query = text.get("query", "item")
        return {
            "products": [
                {"name": f"{brand} {query}", "price": round(rng.uniform(9, 480), 2)}
                for brand in rng.sample(["Acme", "Nordic", "Summit", "Basic", "Urban"], 2)
            ]
        }
    if name == "translate":
        return {"translation": f"[{text.get('target_language', '')}] {text.get('text', '')}"}
    if name == "get_time":
        return {"timezone": text.get("timezone", ""),
                "local_time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"}  # fmt: skip
    if name == "calculate":
        expression = text.get("expression", "")
        value = arithmetic(expression)
        return (
            {"expression": expression, "result": value}
            if value is not None
            else {"error": "not an arithmetic expression"}
        )
    if name == "get_directions":
        return {
            "distance_km": round(rng.uniform(2, 600), 1),
            "duration_minutes": rng.randint(10, 420),
            "steps": rng.randint(3, 14),
        }
    return {"error": f"unknown tool {name}"}


OPERATORS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos,
}  # fmt: skip


def arithmetic(expression: str) -> float | int | None:
    """The value of + - * / over numbers and brackets, or None for anything else."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(node)

    try:
        result = value(ast.parse(expression.replace("^", "**"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError, RecursionError):
        return None
    return round(result, 6) if isinstance(result, float) else result
