"""JSON schemas the tests ask for answers under."""

# Every value bounded (an enum and a boolean), so guided decoding must end the answer whatever
# a tiny or random-weight model would say.
CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "sunny"],
    "additionalProperties": False,
}

# A tool's arguments, bounded the same way (tests/serving/test_tool_calls.py and the agent tests).
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
